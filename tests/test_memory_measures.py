"""recall_any@k, recall_all@k (LongMemEval) and false_surface (abstention) on hand-computed
cases."""

from __future__ import annotations

import pytest

from recallbench.measures import Rules, evaluate, parse_measures

QRELS = {
    "q1": {"a": 1, "b": 2, "c": 0},
    "q2": {"d": 1},
    "q3": {"e": 0},  # judged, nothing relevant: the answer is not in memory
}
RANKINGS = {"q1": ["x", "a", "y", "b"], "q2": [], "q3": ["z"], "q4": []}
IDS = ["q1", "q2", "q3", "q4"]  # q4: no judgment at all


def test_recall_any_and_all_against_ir_recall() -> None:
    measures = parse_measures(["recall_any@2", "recall_all@2", "recall_all@4", "recall@2"])
    result = evaluate(QRELS, RANKINGS, measures, query_ids=IDS)
    assert result.values["recall_any@2"].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert result.values["recall_all@2"].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert result.values["recall_all@4"].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert result.values["recall@2"].tolist()[:2] == [0.5, 0.0]
    # only q1 and q2 have a relevant document: upstream's vacuous recall_all = 1 for q3, q4
    # would have raised the mean to 0.5
    assert result.mean("recall_all@4") == 0.5
    assert result.mean("recall_any@2") == 0.5


def test_false_surface_averages_over_unanswerable_queries_only() -> None:
    measures = parse_measures(["false_surface", "hit@5"])
    result = evaluate(QRELS, RANKINGS, measures, query_ids=IDS)
    assert result.values["false_surface"].tolist()[2:] == [1.0, 0.0]
    assert result.mean("false_surface") == 0.5  # q3 returned something, q4 nothing
    assert result.population("hit@5").tolist() == [True, True, False, False]
    assert result.population("false_surface").tolist() == [False, False, True, True]


@pytest.mark.parametrize(("missing", "expected"), [("skip", 1.0), ("zero", 0.5)])
def test_false_surface_and_missing_queries(missing: str, expected: float) -> None:
    rankings = {qid: ranking for qid, ranking in RANKINGS.items() if qid != "q4"}
    rules = Rules(missing=missing)  # type: ignore[arg-type]
    result = evaluate(QRELS, rankings, parse_measures(["false_surface"]), rules, IDS)
    assert result.mean("false_surface") == expected


def test_measure_names() -> None:
    assert [str(m) for m in parse_measures(["Recall_Any@10", "abstention_error"])] == [
        "recall_any@10",
        "false_surface",
    ]
    with pytest.raises(Exception, match="cutoff"):
        parse_measures(["recall_all"])
