"""Hand-computed cases for gm_map, bpref, gm_bpref, infap, iprec_at_recall, iprec_avg
(11pt_avg), rprec_mult and utility, and their names in both syntaxes."""

from __future__ import annotations

import math

import pytest

from recallbench.core import UnknownMeasureError
from recallbench.measures import Evaluation, Rules, evaluate, parse_measure, parse_measures
from recallbench.measures._measure import parse_trec_measure
from recallbench.measures._trec_eval import TrecOptions, evaluate_trec
from recallbench.measures._trec_output import trec_lines

EPS = 1e-5

# q1: relevant a, c, f (f not returned); judged non-relevant b, d; e pooled but unjudged
# (negative grade); x, y unjudged. Ranks: x1 a2 b3 e4 c5 d6 y7.
# q2: relevant g, h found at ranks 3 and 4 behind two unjudged documents.
# q3: one relevant document, not returned.
QRELS = {
    "q1": {"a": 1, "b": 0, "c": 1, "d": 0, "e": -1, "f": 2},
    "q2": {"g": 1, "h": 1},
    "q3": {"z": 1},
}
RUN = {
    "q1": ["x", "a", "b", "e", "c", "d", "y"],
    "q2": ["u", "v", "g", "h"],
    "q3": ["w"],
}
TREC = Rules(missing="zero", no_relevant="zero")


def run(
    *names: str, rules: Rules = TREC, rankings: dict[str, list[str]] | None = None
) -> Evaluation:
    return evaluate(
        QRELS, RUN if rankings is None else rankings, parse_measures(list(names)), rules
    )


def values(evaluation: Evaluation, name: str) -> list[float]:
    return [evaluation.per_query(qid)[name] for qid in ("q1", "q2", "q3")]


def test_bpref_ignores_unjudged_and_pooled_unjudged_documents() -> None:
    # q1: R = 3, N = 2 judged non-relevant (e's -1 is not a judgment): a has none above
    # (1), c has b above (1 - 1/min(2, 3)); (1 + 0.5) / 3. q2: no judged non-relevant.
    evaluation = run("bpref", "gm_bpref")
    assert values(evaluation, "bpref") == pytest.approx([0.5, 1.0, 0.0])
    assert evaluation.mean("bpref") == pytest.approx(0.5)
    assert evaluation.mean("gm_bpref") == pytest.approx((0.5 * 1.0 * EPS) ** (1 / 3))


def test_bpref_caps_nonrelevant_above_at_r() -> None:
    qrels = {"q": {"r1": 1, "n1": 0, "n2": 0, "n3": 0}}
    evaluation = evaluate(qrels, {"q": ["n1", "n2", "r1"]}, parse_measures(["bpref"]), TREC)
    # R = 1: min(2, 1) / min(3, 1) = 1, so the only relevant document earns 0.
    assert evaluation.per_query("q")["bpref"] == 0.0


def test_gm_map_floors_zero_ap() -> None:
    evaluation = run("gm_map", "map")
    aps = [(1 / 2 + 2 / 5) / 3, (1 / 3 + 2 / 4) / 2, 0.0]
    assert values(evaluation, "gm_map") == pytest.approx(aps)
    assert evaluation.mean("gm_map") == pytest.approx((aps[0] * aps[1] * EPS) ** (1 / 3))
    assert evaluation.mean("map") == pytest.approx(sum(aps) / 3)


def test_infap() -> None:
    # q1: a at rank 2: 1/2 + (1/2)(0/1)(...) = 1/2; c at rank 5 with 1 relevant, 1 judged
    # non-relevant and 1 pooled-unjudged above: 1/5 + (4/5)(3/4)((1+e)/(2+2e)) = 1/2.
    # q2: g at rank 3: 1/3; h at rank 4: 1/4 + (3/4)(1/3)((1+e)/(1+2e)).
    q2 = (1 / 3 + 1 / 4 + (3 / 4) * (1 / 3) * (1 + EPS) / (1 + 2 * EPS)) / 2
    assert values(run("infap"), "infap") == pytest.approx([1 / 3, q2, 0.0], abs=1e-12)


def test_infap_first_rank_counts_one() -> None:
    evaluation = evaluate({"q": {"r": 1, "s": 1}}, {"q": ["r"]}, parse_measures(["infap"]), TREC)
    assert evaluation.per_query("q")["infap"] == 0.5


def test_interpolated_precision_rounds_like_trec_eval_10() -> None:
    # q1 (R = 3): precision 1/2 at the 1st relevant, 2/5 at the 2nd; a 3rd is never found.
    # Level x needs lround(3x) relevant documents: 0.4 -> 1 (trec_eval 9's +0.9 gave 2).
    levels = ["0.0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1.0"]
    expected = [0.5, 0.5, 0.5, 0.5, 0.5, 0.4, 0.4, 0.4, 0.4, 0.0, 0.0]
    evaluation = run(*(f"iprec_at_recall@{x}" for x in levels), "iprec_avg")
    got = [evaluation.per_query("q1")[f"iprec_at_recall@{float(x):.2f}"] for x in levels]
    assert got == pytest.approx(expected)
    assert evaluation.per_query("q1")["iprec_avg"] == pytest.approx(sum(expected) / 11)


def test_interpolated_precision_takes_the_best_precision_further_down() -> None:
    # q2: precision 1/3 at g (rank 3) but 2/4 at h (rank 4): interpolation gives 1/2 at
    # recall 0.5 too. q3 found nothing: 0 at every level, 0.0 included.
    evaluation = run("iprec_at_recall@0", "iprec_at_recall@0.5", "iprec_at_recall@1")
    assert values(evaluation, "iprec_at_recall@0.50") == pytest.approx([0.4, 0.5, 0.0])
    assert values(evaluation, "iprec_at_recall@1.00") == pytest.approx([0.0, 0.5, 0.0])
    assert values(evaluation, "iprec_at_recall@0.00") == pytest.approx([0.5, 0.5, 0.0])


def test_iprec_avg_with_chosen_levels() -> None:
    # 3-point average at 0.2, 0.5, 0.8: q1 0.5, 0.4, 0.4.
    evaluation = run("iprec_avg@0.2,0.5,0.8")
    assert evaluation.per_query("q1")["iprec_avg@0.20,0.50,0.80"] == pytest.approx(1.3 / 3)


def test_rprec_mult() -> None:
    # q1, R = 3: n = floor(3m + 0.9): m=0.2 -> 1 ([x]), 0.5 -> 2 ([x, a]), 1 -> 3, 2 -> 6,
    # 5 -> 15 (beyond the 7 returned: still divided by 15).
    evaluation = run(*(f"rprec_mult@{m}" for m in ("0.2", "0.5", "1", "2", "5")))
    q1 = evaluation.per_query("q1")
    assert q1["rprec_mult@0.20"] == 0.0
    assert q1["rprec_mult@0.50"] == pytest.approx(1 / 2)
    assert q1["rprec_mult@1.00"] == pytest.approx(1 / 3)
    assert q1["rprec_mult@2.00"] == pytest.approx(2 / 6)
    assert q1["rprec_mult@5.00"] == pytest.approx(2 / 15)
    # rprec_mult@1 is R-precision.
    assert values(run("rprec"), "rprec") == values(evaluation, "rprec_mult@1.00")


def test_utility() -> None:
    # q1: 7 returned, 2 relevant among them, R = 3.
    evaluation = run("utility", "utility@2,-1,-0.5,0.25")
    assert values(evaluation, "utility") == [2 - 5, 2 - 2, 0 - 1]
    # 2*2 - 5 - 0.5*(3 - 2) + 0.25*(2 - 7 - 3)
    assert evaluation.per_query("q1")["utility@2,-1,-0.5,0.25"] == pytest.approx(-3.5)


def test_relevance_threshold_and_negative_grades() -> None:
    # With threshold 2 only f is relevant in q1 and it was not returned; a, b, c, d are the
    # judged non-relevant documents, e (-1) still is not.
    rules = Rules(missing="zero", no_relevant="zero", relevance_threshold=2)
    evaluation = run("bpref", "infap", "iprec_at_recall@0", "utility", rules=rules)
    q1 = evaluation.per_query("q1")
    assert (q1["bpref"], q1["infap"], q1["iprec_at_recall@0.00"]) == (0.0, 0.0, 0.0)
    assert q1["utility"] == -7


def test_missing_and_empty_queries_score_zero() -> None:
    names = ["gm_map", "bpref", "infap", "iprec_at_recall@0", "iprec_avg", "rprec_mult@1"]
    evaluation = run(*names, rankings={"q1": ["x", "y"]})
    for name in names:
        assert values(evaluation, str(parse_measure(name))) == [0.0, 0.0, 0.0]
    assert evaluation.mean("gm_map") == pytest.approx(EPS)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("gm_map", "gm_map"),
        ("GMAP", "gm_map"),
        ("bpref", "bpref"),
        ("gm_bpref", "gm_bpref"),
        ("infAP", "infap"),
        ("iprec_at_recall@0.1", "iprec_at_recall@0.10"),
        ("iprec@.5", "iprec_at_recall@0.50"),
        ("iprec_at_recall@0.125", "iprec_at_recall@0.125"),
        ("iprec_avg", "iprec_avg"),
        ("iprec_avg@0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1", "iprec_avg"),
        ("iprec_avg@.2,.5,.8", "iprec_avg@0.20,0.50,0.80"),
        ("rprec_mult@0.2", "rprec_mult@0.20"),
        ("rprec_mult@5", "rprec_mult@5.00"),
        ("utility", "utility"),
        ("utility@1,-1,0,0", "utility"),
        ("utility@2,-1,0,0", "utility@2,-1,0,0"),
        ("utility@0.5,-1.25,0,1e-3", "utility@0.5,-1.25,0,0.001"),
    ],
)
def test_names_round_trip(text: str, canonical: str) -> None:
    measure = parse_measure(text)
    assert str(measure) == canonical
    assert str(parse_measure(canonical)) == canonical
    assert parse_measure(canonical) == measure


@pytest.mark.parametrize(
    ("spec", "labels"),
    [
        ("gm_map", ["gm_map"]),
        ("gm_bpref", ["gm_bpref"]),
        ("bpref", ["bpref"]),
        ("infAP", ["infAP"]),
        ("iprec_at_recall", [f"iprec_at_recall_{x / 10:.2f}" for x in range(11)]),
        ("iprec_at_recall.0.25,.75", ["iprec_at_recall_0.25", "iprec_at_recall_0.75"]),
        ("11pt_avg", ["11pt_avg"]),
        ("11pt_avg..25,.5,.75", ["11pt_avg_.25,.5,.75"]),
        ("Rprec_mult", [f"Rprec_mult_{x / 10:.2f}" for x in range(2, 21, 2)]),
        ("Rprec_mult.0.35,5", ["Rprec_mult_0.35", "Rprec_mult_5.00"]),
        ("utility", ["utility"]),
        ("utility.2,-1,0,0", ["utility_2,-1,0,0"]),
    ],
)
def test_trec_eval_names_and_labels(spec: str, labels: list[str]) -> None:
    assert [m.trec_label() for m in parse_trec_measure(spec)] == labels


def test_trec_parameters_match_our_syntax() -> None:
    assert parse_trec_measure("11pt_avg..25,.5,.75") == [parse_measure("iprec_avg@.25,.5,.75")]
    assert parse_trec_measure("utility.2,-1,0,0") == [parse_measure("utility@2,-1,0,0")]
    assert parse_trec_measure("Rprec_mult.0.35") == [parse_measure("rprec_mult@0.35")]


def test_geometric_means_are_printed_only_over_all_queries() -> None:
    measures = [*parse_trec_measure("gm_map"), *parse_trec_measure("bpref")]
    evaluation = evaluate_trec(QRELS, RUN, measures, TrecOptions())
    lines = list(trec_lines(evaluation, per_query=True))
    assert [qid for label, qid, _ in lines if label == "gm_map"] == ["all"]
    assert [qid for label, qid, _ in lines if label == "bpref"] == ["q1", "q2", "q3", "all"]
    gm = next(value for label, _, value in lines if label == "gm_map")
    aps = [(1 / 2 + 2 / 5) / 3, (1 / 3 + 2 / 4) / 2, EPS]
    assert gm == f"{math.exp(sum(map(math.log, aps)) / 3):.4f}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("iprec_at_recall", "needs a recall level"),
        ("iprec_at_recall@1.5", "not between 0 and 1"),
        ("iprec_at_recall@high", "not a number"),
        ("iprec_avg@0.5,2", "not between 0 and 1"),
        ("rprec_mult", "needs a multiple"),
        ("rprec_mult@0", "must be positive"),
        ("utility@1,2", "4 coefficients"),
        ("gm_map@10", "not allowed"),
        ("bpref@10", "not allowed"),
    ],
)
def test_bad_parameters_are_refused(text: str, message: str) -> None:
    with pytest.raises(UnknownMeasureError, match=message):
        parse_measure(text)
