"""Differential tests: every measure equals trec_eval's (pytrec-eval-terrier) to 1e-9.

Scores are drawn from a small set of quarter values, so ties are frequent and every score
is exact in float32 (pytrec_eval's trec_eval 9 stores float32, trec_eval 10 doubles).
"""

from __future__ import annotations

from typing import Any

import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from recallbench.measures import Rules, evaluate, parse_measures

DOCS = [f"d{i}" for i in range(12)]
CUTOFFS = (1, 3, 5, 10)

# ours -> pytrec_eval's key, per cutoff
OURS = {
    "P@{k}": "P_{k}",
    "recall@{k}": "recall_{k}",
    "ndcg@{k}": "ndcg_cut_{k}",
    "map@{k}": "map_cut_{k}",
    "hit@{k}": "success_{k}",
}
UNCUT = {"map": "map", "rprec": "Rprec", "ndcg": "ndcg", "mrr": "recip_rank", "recall": None}
PYTREC_MEASURES = {
    "P",
    "recall",
    "ndcg_cut",
    "map_cut",
    "success",
    "map",
    "Rprec",
    "ndcg",
    "recip_rank",
}


def trec_order(scored: dict[str, float]) -> list[str]:
    """trec_eval's order: score descending, ties by document id descending."""
    return [doc for _, doc in sorted(((s, d) for d, s in scored.items()), reverse=True)]


judgments = st.dictionaries(st.sampled_from(DOCS), st.integers(0, 3), max_size=8)
scores = st.dictionaries(
    st.sampled_from(DOCS), st.integers(0, 8).map(lambda n: n / 4), min_size=1, max_size=12
)
cases = st.fixed_dictionaries(
    {
        "qrels": st.dictionaries(
            st.sampled_from(["q1", "q2", "q3", "q4"]), judgments, min_size=1, max_size=4
        ),
        "run": st.dictionaries(st.sampled_from(["q1", "q2", "q3", "q4", "q5"]), scores, max_size=5),
        "threshold": st.integers(1, 3),
    }
)


def pytrec(qrels: Any, run: Any, measures: set[str], threshold: int) -> dict[str, dict[str, float]]:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=threshold)
    result: dict[str, dict[str, float]] = evaluator.evaluate(run)
    return result


@settings(max_examples=600, deadline=None)
@given(cases)
def test_every_measure_matches_pytrec_eval(case: dict[str, Any]) -> None:
    qrels, run, threshold = case["qrels"], case["run"], case["threshold"]
    rankings = {qid: trec_order(scored) for qid, scored in run.items()}
    names = [name.format(k=k) for name in OURS for k in CUTOFFS] + list(UNCUT)
    ours = evaluate(qrels, rankings, parse_measures(names), Rules(relevance_threshold=threshold))
    measures = {
        f"{m}.{','.join(map(str, CUTOFFS))}"
        if m in {"P", "recall", "ndcg_cut", "map_cut", "success"}
        else m
        for m in PYTREC_MEASURES
    }
    reference = pytrec(qrels, run, measures, threshold)
    compared = 0
    for qid, values in reference.items():
        if qid not in ours.query_ids:
            continue
        for template, key in OURS.items():
            for k in CUTOFFS:
                mine = ours.per_query(qid)[template.format(k=k)]
                assert abs(mine - values[key.format(k=k)]) < 1e-9, (qid, template, k)
                compared += 1
        for name, key in UNCUT.items():
            if key is not None:
                assert abs(ours.per_query(qid)[name] - values[key]) < 1e-9, (qid, name)
                compared += 1
    # recall without a cutoff equals recall at a cutoff beyond every ranking
    assert (
        ours.values["recall"]
        == evaluate(
            qrels, rankings, parse_measures(["recall@99"]), Rules(relevance_threshold=threshold)
        ).values["recall@99"]
    ).all()
    assert compared or not set(reference) & set(ours.query_ids)


@settings(max_examples=300, deadline=None)
@given(cases, st.sampled_from(CUTOFFS))
def test_mrr_at_k_is_recip_rank_of_the_top_k(case: dict[str, Any], k: int) -> None:
    """trec_eval has no cutoff on recip_rank; mrr@k equals it on the run cut to k (-M k)."""
    qrels, run, threshold = case["qrels"], case["run"], case["threshold"]
    rankings = {qid: trec_order(scored) for qid, scored in run.items()}
    cut = {qid: {doc: run[qid][doc] for doc in ranking[:k]} for qid, ranking in rankings.items()}
    reference = pytrec(qrels, cut, {"recip_rank"}, threshold)
    ours = evaluate(
        qrels, rankings, parse_measures([f"mrr@{k}"]), Rules(relevance_threshold=threshold)
    )
    for qid, values in reference.items():
        assert abs(ours.per_query(qid)[f"mrr@{k}"] - values["recip_rank"]) < 1e-9


@settings(max_examples=300, deadline=None)
@given(cases, st.sampled_from(CUTOFFS))
def test_ndcg_exp_is_ndcg_with_exponential_grades(case: dict[str, Any], k: int) -> None:
    """ndcg_exp uses gain 2^g - 1: the same as trec_eval's ndcg_cut on qrels with those gains."""
    qrels, run = case["qrels"], case["run"]
    rankings = {qid: trec_order(scored) for qid, scored in run.items()}
    exponential = {q: {d: 2**g - 1 for d, g in judged.items()} for q, judged in qrels.items()}
    reference = pytrec(exponential, run, {f"ndcg_cut.{k}"}, 1)
    ours = evaluate(qrels, rankings, parse_measures([f"ndcg_exp@{k}"]))
    for qid, values in reference.items():
        assert abs(ours.per_query(qid)[f"ndcg_exp@{k}"] - values[f"ndcg_cut_{k}"]) < 1e-9
