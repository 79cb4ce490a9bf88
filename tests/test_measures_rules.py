"""Measure parsing, DESIGN §4 rules, and properties that hold for every input."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallbench.core import UnknownMeasureError
from recallbench.measures import (
    DEFAULT_MEASURES,
    NDCG,
    Rules,
    evaluate,
    measure_families,
    parse_measure,
    parse_measures,
)

ALL = [*DEFAULT_MEASURES, "ndcg_exp@10", "map", "map@10", "hit@5", "rprec", "recall", "mrr"]


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("nDCG@10", "ndcg@10"),
        ("MRR@5", "mrr@5"),
        ("p@3", "P@3"),
        ("recip_rank", "mrr"),
        ("success@1", "hit@1"),
        ("Rprec", "rprec"),
        ("map_cut@100", "map@100"),
        (" ndcg_exp @ 20 ", "ndcg_exp@20"),
        ("recall", "recall"),
    ],
)
def test_measures_parse_to_canonical_names(text: str, canonical: str) -> None:
    assert str(parse_measure(text)) == canonical
    assert parse_measure(canonical) == parse_measure(text)


def test_value_objects() -> None:
    assert parse_measure("ndcg@10") == NDCG(10)
    assert parse_measure("ndcg@10") != parse_measure("ndcg_exp@10")
    assert parse_measures(["ndcg@10", "nDCG@10", "P@3"]) == (NDCG(10), parse_measure("P@3"))
    assert all(cls.__doc__ and "(" in cls.__doc__ for cls in measure_families())  # cited


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ndgc@10", "unknown measure 'ndgc@10'; valid measures: "),
        ("P", "P needs a cutoff"),
        ("ndcg@0", "cutoff must be a positive integer"),
        ("ndcg@ten", "positive integer"),
        ("rprec@5", "cutoff 5 is not allowed"),
        ("", "unknown measure"),
    ],
)
def test_bad_measure_names_say_what_is_valid(text: str, message: str) -> None:
    with pytest.raises(UnknownMeasureError, match=message.replace("(", r"\(")):
        parse_measure(text)


def test_unknown_measure_lists_every_family() -> None:
    with pytest.raises(UnknownMeasureError) as caught:
        parse_measure("bogus")
    for name in ("P@k", "recall", "mrr", "ndcg", "ndcg_exp", "map", "hit", "rprec"):
        assert name in str(caught.value)


QRELS = {"a": {"d1": 3, "d2": 1}, "b": {"d3": 2}, "empty": {"d4": 0}, "unjudged": {}}


def test_missing_and_no_relevant_queries_follow_the_rules() -> None:
    rankings = {"a": ["d1", "x", "d2"], "empty": ["d4"]}  # b missing
    measures = parse_measures(["mrr@10"])
    default = evaluate(QRELS, rankings, measures)
    assert default.query_ids == ("a", "b", "empty", "unjudged")
    assert default.values["mrr@10"].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert default.missing.tolist() == [False, True, False, True]
    assert default.no_relevant.tolist() == [False, False, True, True]
    assert default.mean("mrr@10") == 0.5  # a and the missing b; the two without relevant out
    skip = evaluate(QRELS, rankings, measures, Rules(missing="skip"))
    assert skip.mean("mrr@10") == 1.0
    trec = evaluate(QRELS, rankings, measures, Rules(missing="skip", no_relevant="zero"))
    assert trec.mean("mrr@10") == 0.5  # a and empty (trec_eval's default)


def test_duplicates_count_once_at_their_first_rank() -> None:
    rankings = {"a": ["x", "d1", "d1", "d2"]}
    result = evaluate({"a": QRELS["a"]}, rankings, parse_measures(["P@3", "recall@3", "mrr@5"]))
    assert result.per_query("a") == {"P@3": 1 / 3, "recall@3": 0.5, "mrr@5": 0.5}
    assert result.duplicates == {"a": 1}


def test_mean_is_nan_when_no_query_is_included() -> None:
    result = evaluate({"q": {}}, {"q": ["d"]}, parse_measures(["ndcg@5"]))
    assert math.isnan(result.mean("ndcg@5"))


def test_inputs_are_not_modified() -> None:
    qrels = {"a": {"d1": 3, "d2": 1}}
    rankings = {"a": ["d2", "d1", "d2"]}
    before = (repr(qrels), repr(rankings))
    evaluate(qrels, rankings, parse_measures(ALL))
    assert (repr(qrels), repr(rankings)) == before


docs = st.sampled_from([f"d{i}" for i in range(10)])
graded = st.dictionaries(
    st.sampled_from(["q1", "q2", "q3"]), st.dictionaries(docs, st.integers(0, 3)), min_size=1
)
ranked = st.dictionaries(st.sampled_from(["q1", "q2", "q3"]), st.lists(docs, max_size=12))


@settings(max_examples=200, deadline=None)
@given(graded, ranked)
def test_values_lie_between_zero_and_one(qrels: Any, rankings: Any) -> None:
    result = evaluate(qrels, rankings, parse_measures(ALL))
    for values in result.values.values():
        assert np.all((values >= 0) & (values <= 1 + 1e-12))


@settings(max_examples=200, deadline=None)
@given(graded)
def test_a_perfect_ranking_scores_one(qrels: Any) -> None:
    ideal = {q: sorted(j, key=lambda d: (-j[d], d)) for q, j in qrels.items()}
    result = evaluate(
        qrels,
        ideal,
        parse_measures(
            ["ndcg@5", "ndcg_exp@10", "map", "mrr@1", "recall", "rprec", "hit@1", "ndcg"]
        ),
    )
    has_relevant = ~result.no_relevant
    for values in result.values.values():
        assert np.allclose(values[has_relevant], 1.0)


@settings(max_examples=100, deadline=None)
@given(graded, ranked, st.randoms(use_true_random=False))
def test_order_of_queries_and_judgments_does_not_matter(
    qrels: Any, rankings: Any, rng: random.Random
) -> None:
    def shuffled(mapping: dict[str, Any]) -> dict[str, Any]:
        items = list(mapping.items())
        rng.shuffle(items)
        return dict(items)

    measures = parse_measures(ALL)
    first = evaluate(qrels, rankings, measures)
    second = evaluate(
        shuffled({q: shuffled(j) for q, j in qrels.items()}), shuffled(rankings), measures
    )
    for qid in first.query_ids:
        assert first.per_query(qid) == pytest.approx(second.per_query(qid), abs=1e-12)
