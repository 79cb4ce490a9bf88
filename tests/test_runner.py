"""The built-in system, the runner's recording of failures and timings, atomic outputs."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from recallbench.core import Dataset, Document, Hit, Query
from recallbench.core._files import atomic_write_text
from recallbench.measures import parse_measures
from recallbench.report import build_report
from recallbench.runner import run_dataset
from recallbench.systems import BuiltinSystem, SystemUnderTest, create_system, match_expression

DOCS = (
    Document(id="rule", title="Money", text="All money amounts are integers in minor units."),
    Document(id="db", text="We moved the ledger from MySQL to PostgreSQL for row locking."),
    Document(id="cpp", text="The C++ pricing engine reads $amount from the request."),
)
QUERIES = (
    Query(id="q1", text="money amounts", category="trigger-match"),
    Query(id="q2", text="why PostgreSQL?", category="causal"),
    Query(id="q3", text="C++ $amount ???", category="edge-case"),
    Query(id="q4", text="!!!", category="edge-case"),
)
DATASET = Dataset(
    name="tiny",
    documents=DOCS,
    queries=QUERIES,
    qrels={"q1": {"rule": 3}, "q2": {"db": 2}, "q3": {"cpp": 1}, "q4": {}},
)


def test_match_expression_quotes_every_token() -> None:
    assert match_expression('C++ "$amount" O\'Brien') == '"c" OR "amount" OR "o" OR "brien"'
    assert match_expression("?!") is None


def test_builtin_system_ranks_with_bm25() -> None:
    async def scenario() -> list[Sequence[Hit]]:
        system = BuiltinSystem(channels=("lexical",))
        await system.setup(DOCS)
        try:
            return [await system.search(query, 2) for query in QUERIES]
        finally:
            await system.close()

    q1, q2, q3, q4 = asyncio.run(scenario())
    assert [hit.doc_id for hit in q1] == ["rule", "cpp"]  # "amount" also matches cpp
    assert q1[0].score is not None and q1[1].score is not None and q1[0].score > q1[1].score
    assert all(hit.channels == ("lexical",) for hit in q1)
    assert q2[0].doc_id == "db"
    assert q3[0].doc_id == "cpp"
    assert q4 == []


def test_builtin_is_registered_and_satisfies_the_protocol() -> None:
    assert isinstance(create_system("builtin"), SystemUnderTest)


class FlakySystem(BuiltinSystem):
    """The built-in system, failing on one query: a unit double for the runner's logic."""

    def __init__(self) -> None:
        super().__init__(channels=("lexical",), name="flaky")

    async def search(self, query: Query, k: int) -> Sequence[Hit]:
        if query.id == "q2":
            raise TimeoutError("upstream did not answer")
        return await super().search(query, k)


def test_a_failing_query_is_recorded_scores_zero_and_the_run_goes_on() -> None:
    run = asyncio.run(run_dataset(DATASET, FlakySystem(), k=5))
    by_id = {result.query_id: result for result in run.results}
    assert by_id["q2"].error == "TimeoutError: upstream did not answer"
    assert by_id["q2"].hits == ()
    assert by_id["q3"].hits[0].doc_id == "cpp"
    assert all(r.latency_ms is not None and r.latency_ms >= 0 for r in run.results)
    assert by_id["q1"].output_bytes and by_id["q1"].output_bytes > 20
    assert run.spec.system == "flaky" and run.spec.k == 5 and run.spec.dataset == DATASET.ref
    report = build_report(DATASET, run, parse_measures(["mrr@10"]))
    assert report.counts.failed == 1
    assert report.counts.no_relevant == 1  # q4
    assert report.counts.evaluated == 3  # q1, q2 (failed, scored 0), q3
    values = {q.id: q.values["mrr@10"] for q in report.queries}
    assert values == {"q1": 1.0, "q2": 0.0, "q3": 1.0, "q4": None}
    assert report.means["mrr@10"] == pytest.approx(2 / 3)
    assert {q.id: q.status for q in report.queries} == {
        "q1": "ok",
        "q2": "failed",
        "q3": "ok",
        "q4": "no_relevant",
    }


class BrokenSetup(BuiltinSystem):
    def __init__(self) -> None:
        super().__init__(channels=("lexical",), name="broken")

    async def setup(self, documents: Sequence[Document]) -> None:
        raise ConnectionError("server exited with status 1")


def test_a_system_that_cannot_ingest_is_a_clear_error() -> None:
    from recallbench.core import SystemUnderTestError

    with pytest.raises(
        SystemUnderTestError,
        match="'broken' failed to ingest the corpus: ConnectionError: server exited with status 1",
    ):
        asyncio.run(run_dataset(DATASET, BrokenSetup()))


def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.json"
    atomic_write_text(target, "old")

    def interrupted(*_: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(target, "new " * 10_000)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]
