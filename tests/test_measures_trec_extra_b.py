"""Set-based, relative, judgment-coverage, gain, nDCG-variant and RBP measures (trec_eval's
set_*, relative_P, num_nonrel_judged_ret, unj, binG, G, ndcg_rel, Rndcg, rbp, rbp_resid):
hand-computed cases, parsing, and a differential test against pytrec_eval."""

from __future__ import annotations

import math
from typing import Any

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from recallbench.core import UnknownMeasureError
from recallbench.measures import Rules, evaluate, parse_measure, parse_measures
from recallbench.measures._measure import parse_trec_measure

# Query q: relevant a (2), b (1), e (1); c judged non-relevant; d pooled but unjudged (-1).
# Ranking a x c b d, x not in the qrels. Query z has no relevant document.
QRELS = {"q": {"a": 2, "b": 1, "c": 0, "d": -1, "e": 1}, "z": {"k": 0}}
RANKINGS = {"q": ["a", "x", "c", "b", "d"], "z": ["k"]}

L2, L3, L5 = math.log2(2), math.log2(3), math.log2(5)
IDCG3 = 2 / L2 + 1 / L3 + 1 / math.log2(4)  # ideal gains 2, 1, 1, then 0
NDCG5 = (2 + 1 / L5) / IDCG3  # a at rank 1, b at rank 4

EXPECTED = {
    "set_P": (2 / 5, 0.0),
    "set_recall": (2 / 3, 0.0),
    "set_relative_P": (2 / 3, 0.0),  # 2 / min(5, 3)
    "set_map": (4 / 15, 0.0),  # 2^2 / (5 * 3)
    "set_F": (0.5, 0.0),  # 2PR / (P + R) with P = 2/5, R = 2/3
    "set_F@0.5": (6 / 13, 0.0),  # 1.5 PR / (0.5 P + R)
    "relative_P@2": (0.5, 0.0),  # 1 / min(2, 3)
    "relative_P@5": (2 / 3, 0.0),
    "num_nonrel_judged_ret": (1.0, 1.0),  # c; d (grade -1) is not judged
    "unj@2": (0.5, 0.0),  # x
    "unj@5": (0.4, 0.0),  # x and d
    "unj@10": (0.2, 0.0),  # k counts 10 even though 5 were returned
    "binG": ((1 / L2 + 1 / math.log2(4)) / 3, 0.0),  # b has 2 non-relevant above
    # cost = cumsum(max(ideal, 1)) = 2 3 4 5 6; gain so far = 2 2 2 3 3
    "G": ((2 / math.log2(2 + 2 - 2) + 1 / math.log2(2 + 5 - 3)) / 4, 0.0),
    # nDCG at a (1.0) and at b, and e (not returned) scores the whole ranking's nDCG
    "ndcg_rel": ((1.0 + 2 * NDCG5) / 3, 0.0),
    # R levels at 1 (grade 2) and 3 (grade 1); 5 returned >= 3 + 2 adds nDCG@5
    "rndcg": ((1.0 + 2 / IDCG3 + NDCG5) / 3, 0.0),
    "rbp": (0.1 * (1.0 + 0.5 * 0.9**3), 0.0),  # gains scaled by the top grade, 2
    "rbp@0.5": (0.5 * (1.0 + 0.5 * 0.5**3), 0.0),
    "rbp_resid": (0.9**5 + 0.1 * (0.9 + 0.9**4), 0.0),  # x, d unjudged; z all judged
}


@pytest.mark.parametrize(("name", "values"), list(EXPECTED.items()))
def test_hand_computed_values(name: str, values: tuple[float, float]) -> None:
    measure = parse_measure(name)
    result = evaluate(QRELS, RANKINGS, [measure], Rules(no_relevant="zero"))
    assert result.values[str(measure)].tolist() == pytest.approx(list(values), abs=1e-12)


def test_counts_are_summed_and_others_averaged() -> None:
    measures = parse_measures(["num_nonrel_judged_ret", "set_P"])
    result = evaluate(QRELS, RANKINGS, measures, Rules(no_relevant="zero"))
    assert result.mean("num_nonrel_judged_ret") == 2.0
    assert result.mean("set_P") == pytest.approx(0.2)
    assert measures[0].format_value(2.0) == "2"


def test_rndcg_adds_the_whole_ranking_only_two_past_the_last_positive_gain() -> None:
    """trec_eval's loop: with exactly N + 1 documents returned there is no final point."""
    short = evaluate(QRELS, {"q": ["a", "x", "c", "b"]}, [parse_measure("rndcg")])
    assert short.per_query("q")["rndcg"] == pytest.approx((1.0 + 2 / IDCG3) / 2, abs=1e-12)


def test_missing_queries_score_zero() -> None:
    measures = parse_measures(list(EXPECTED))
    result = evaluate(QRELS, {"z": ["k"]}, measures, Rules(no_relevant="zero"))
    assert all(value == 0.0 for value in result.per_query("q").values())


def test_relevance_threshold_moves_documents_between_relevant_and_judged_nonrelevant() -> None:
    measures = parse_measures(["set_P", "num_nonrel_judged_ret", "binG", "G"])
    strict = evaluate(QRELS, RANKINGS, measures, Rules(relevance_threshold=2)).per_query("q")
    assert strict["set_P"] == pytest.approx(1 / 5)
    assert strict["num_nonrel_judged_ret"] == 2.0  # c and b
    assert strict["binG"] == pytest.approx(1.0)  # a first, the only relevant document
    # gains are the grades whatever the threshold
    assert strict["G"] == pytest.approx(EXPECTED["G"][0])


ROUND_TRIP = [
    "set_P",
    "set_relative_P",
    "set_recall",
    "set_map",
    "set_F",
    "set_F@0.5",
    "relative_P@5",
    "num_nonrel_judged_ret",
    "binG",
    "G",
    "ndcg_rel",
    "rndcg",
    "rbp",
    "rbp@0.95",
    "rbp_resid",
    "rbp_resid@0.8",
    "unj@10",
]


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_canonical_names_round_trip(name: str) -> None:
    measure = parse_measure(name)
    assert str(measure) == name
    assert parse_measure(str(measure)) == measure
    assert measure.definition()


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("Rndcg", "rndcg"),
        ("SET_P", "set_P"),
        ("set_f@1", "set_F"),
        ("rbp@0.9", "rbp"),
        ("unjudged@5", "unj@5"),
        ("relative_precision@10", "relative_P@10"),
    ],
)
def test_spellings_parse_to_canonical_names(text: str, canonical: str) -> None:
    assert str(parse_measure(text)) == canonical


@pytest.mark.parametrize(
    ("spec", "labels", "names"),
    [
        ("set_F", ["set_F"], ["set_F"]),
        ("set_F.0.5", ["set_F_0.5"], ["set_F@0.5"]),
        ("rbp", ["rbp"], ["rbp"]),
        ("rbp.p=0.95", ["rbp_p=0.95"], ["rbp@0.95"]),
        ("rbp_resid.p=0.8", ["rbp_resid_p=0.8"], ["rbp_resid@0.8"]),
        ("unj", ["unj_5", "unj_10", "unj_20"], ["unj@5", "unj@10", "unj@20"]),
        ("relative_P.3,7", ["relative_P_3", "relative_P_7"], ["relative_P@3", "relative_P@7"]),
        ("Rndcg", ["Rndcg"], ["rndcg"]),
        ("num_nonrel_judged_ret", ["num_nonrel_judged_ret"], ["num_nonrel_judged_ret"]),
    ],
)
def test_trec_eval_names_and_labels(spec: str, labels: list[str], names: list[str]) -> None:
    measures = parse_trec_measure(spec)
    assert [m.trec_label() for m in measures] == labels
    assert [str(m) for m in measures] == names


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("set_P@5", "not allowed"),
        ("G@10", "not allowed"),
        ("unj", "needs a cutoff"),
        ("rbp@1.5", "persistence"),
        ("rbp@high", "not a number"),
        ("set_F@-1", "recall weight"),
    ],
)
def test_bad_arguments_are_rejected(text: str, message: str) -> None:
    with pytest.raises(UnknownMeasureError, match=message):
        parse_measure(text)


@pytest.mark.parametrize("spec", ["G.1=3,2=9", "ndcg_rel.1=2", "Rndcg.0=1", "rbp.1=0.5"])
def test_trec_eval_gain_maps_are_not_supported(spec: str) -> None:
    with pytest.raises(UnknownMeasureError, match="supports"):
        parse_trec_measure(spec)


# Differential test against pytrec_eval (trec_eval 9) for the measures it has; rbp,
# rbp_resid and unj are newer than it and are checked by the trec_eval conformance test.
PYTREC = {
    "set_P": "set_P",
    "set_recall": "set_recall",
    "set_map": "set_map",
    "set_F": "set_F",
    "set_relative_P": "set_relative_P",
    "num_nonrel_judged_ret": "num_nonrel_judged_ret",
    "binG": "binG",
    "G": "G",
    "ndcg_rel": "ndcg_rel",
    "rndcg": "Rndcg",
    **{f"relative_P@{k}": f"relative_P_{k}" for k in (1, 3, 5, 10)},
}
PYTREC_MEASURES = {
    "set_P",
    "set_recall",
    "set_map",
    "set_F",
    "set_relative_P",
    "num_nonrel_judged_ret",
    "binG",
    "G",
    "ndcg_rel",
    "Rndcg",
    "relative_P.1,3,5,10",
}
DOCS = [f"d{i}" for i in range(12)]
# Every query keeps one judgment >= 0: trec_eval reads stale levels for a query judged only -1.
judgments = st.dictionaries(st.sampled_from(DOCS[1:]), st.integers(-1, 4), max_size=9).flatmap(
    lambda judged: st.integers(0, 3).map(lambda grade: {**judged, DOCS[0]: grade})
)
rankings = st.lists(st.sampled_from(DOCS), unique=True, min_size=1, max_size=12)
cases = st.fixed_dictionaries(
    {
        "qrels": st.dictionaries(st.sampled_from(["q1", "q2", "q3"]), judgments, min_size=1),
        "rankings": st.dictionaries(st.sampled_from(["q1", "q2", "q3", "q4"]), rankings),
        "threshold": st.integers(1, 3),
    }
)


@settings(max_examples=400, deadline=None)
@given(cases)
def test_matches_pytrec_eval(case: dict[str, Any]) -> None:
    qrels, ranked, threshold = case["qrels"], case["rankings"], case["threshold"]
    run = {
        q: {doc: float(len(docs) - i) for i, doc in enumerate(docs)} for q, docs in ranked.items()
    }
    reference = pytrec_eval.RelevanceEvaluator(
        qrels, PYTREC_MEASURES, relevance_level=threshold
    ).evaluate(run)
    ours = evaluate(
        qrels, ranked, parse_measures(list(PYTREC)), Rules(relevance_threshold=threshold)
    )
    for qid, values in reference.items():
        mine = ours.per_query(qid)
        for name, key in PYTREC.items():
            assert mine[name] == pytest.approx(values[key], abs=1e-9), (qid, name)
