"""What a retriever returns becomes hits; scores that are not finite numbers fail the query
(JSON has no NaN or infinity, and a TREC file holding one is refused), with the result named."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence

import pytest
from pydantic import ValidationError

from recallbench.core import Dataset, Document, Hit, Query, SystemUnderTestError
from recallbench.runner import run_dataset
from recallbench.systems._hits import to_hits


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ([("a", 1.0), ("b", math.inf)], "result 1: score inf is not a finite number"),
        ([{"id": "a", "score": "nan"}], "result 0: score 'nan' is not a finite number"),
        ([("a", "high")], "result 0: score 'high' is not a number"),
        ([{"id": "a", "score": -math.inf}], "result 0: score -inf is not a finite number"),
    ],
)
def test_a_score_that_is_not_finite_fails_with_its_position(
    answer: list[object], message: str
) -> None:
    with pytest.raises(SystemUnderTestError, match=message):
        to_hits(answer, "lexical")


def test_finite_scores_and_missing_scores_are_kept() -> None:
    hits = to_hits([("a", 2), {"id": "b"}, "c", {"doc_id": "d", "score": "-0.5"}], "x")
    assert [(h.doc_id, h.score) for h in hits] == [
        ("a", 2.0),
        ("b", None),
        ("c", None),
        ("d", -0.5),
    ]


def test_a_hit_refuses_a_non_finite_score() -> None:
    with pytest.raises(ValidationError):
        Hit(doc_id="a", score=math.nan)


class NanScores:
    name = "nan-scores"

    def settings(self) -> dict[str, object]:
        return {}

    async def setup(self, documents: Sequence[Document]) -> None:
        return None

    async def search(self, query: Query, k: int) -> Sequence[Hit]:
        return to_hits([("d1", 1.0), ("d2", math.nan)] if query.id == "q2" else ["d1"], "x")

    async def close(self) -> None:
        return None


def test_the_run_records_the_query_as_failed_and_goes_on() -> None:
    dataset = Dataset(
        name="tiny",
        documents=(Document(id="d1", text="one"), Document(id="d2", text="two")),
        queries=(Query(id="q1", text="one"), Query(id="q2", text="two")),
        qrels={"q1": {"d1": 1}, "q2": {"d2": 1}},
    )
    run = asyncio.run(run_dataset(dataset, NanScores(), k=5))
    errors = {r.query_id: r.error for r in run.results}
    assert errors["q1"] is None
    assert errors["q2"] is not None and "result 1: score nan is not a finite number" in errors["q2"]
