"""trec_eval's own expected outputs, reproduced for every measure recallbench has.

Files come from usnistgov/trec_eval test/ (see ../shared/data/trec_eval_tests/SOURCE.md).
A trec_eval measure is compared when recallbench implements it; the others are listed in
SKIPPED with the reason. Values must be equal at trec_eval's printed precision (4 decimals).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from recallbench.datasets import read_trec_qrels, read_trec_run
from recallbench.measures import Rules, evaluate, parse_measure

# trec_eval name -> ours (cutoff measures use a pattern)
EXACT = {"map": "map", "Rprec": "rprec", "recip_rank": "mrr", "ndcg": "ndcg"}
CUT = {"P": "P", "recall": "recall", "ndcg_cut": "ndcg", "map_cut": "map", "success": "hit"}
SKIPPED = {
    "runid, num_q, num_ret, num_rel, num_rel_ret, gm_map, bpref, iprec_at_recall, infAP, "
    "gm_bpref, Rprec_mult, utility, 11pt_avg, binG, G, ndcg_rel, Rndcg, relative_P, set_*, "
    "num_nonrel_judged_ret, rbp, rbp_resid, unj, relstring": "not implemented yet (issue 3)",
    "ndcg_1=3,2=9,4=4.5 (ndcg with a gain map)": "gain maps are not implemented yet (issue 3)",
}

CASES = {
    # expected output: (qrels, run, trec_eval's flags as our rules, -M)
    "out.test": ("qrels.test", "results.test", "skip", 1, None),
    "out.test (qrels with comments)": ("qrels.test.with-comments", "results.test", "skip", 1, None),
    "out.comment.test": ("qrels.comment.test", "results.comment.test", "skip", 1, None),
    "out.test.a": ("qrels.test", "results.test", "skip", 1, None),
    "out.test.aq": ("qrels.test", "results.test", "skip", 1, None),
    "out.test.aqc": ("qrels.test", "results.trunc", "zero", 1, None),
    "out.test.aqcM": ("qrels.test", "results.trunc", "zero", 1, 100),
    "out.test.aql": ("qrels.rel_level", "results.test", "skip", 2, None),
    "out.test.meas_params": ("qrels.test", "results.test", "skip", 1, None),
}


def ours_for(trec_name: str) -> str | None:
    if trec_name in EXACT:
        return EXACT[trec_name]
    match = re.fullmatch(r"([A-Za-z_]+?)_(\d+)", trec_name)
    if match and match.group(1) in CUT:
        return f"{CUT[match.group(1)]}@{match.group(2)}"
    return None


def expected_values(path: Path) -> dict[tuple[str, str], str]:
    values = {}
    for line in path.read_text().splitlines():
        name, qid, value = (field.strip() for field in line.split("\t"))
        values[(name, qid)] = value
    return values


@pytest.mark.parametrize("case", list(CASES))
def test_reproduces_trec_eval_output(trec_tests: Path, case: str) -> None:
    qrels_name, run_name, missing, level, max_docs = CASES[case]
    expected = expected_values(trec_tests / case.split(" ")[0])
    qrels = read_trec_qrels(trec_tests / qrels_name)
    run = read_trec_run(trec_tests / run_name)
    rankings = {r.query_id: [h.doc_id for h in r.hits][:max_docs] for r in run.results}
    # trec_eval's default evaluates the queries of both files; -c all judged queries.
    query_ids = [q for q in qrels if missing == "zero" or q in rankings]
    compared = {(name, qid): ours for (name, qid) in expected if (ours := ours_for(name))}
    measures = [parse_measure(ours) for ours in sorted(set(compared.values()))]
    rules = Rules(missing=missing, no_relevant="zero", relevance_threshold=level)  # type: ignore[arg-type]
    result = evaluate(qrels, rankings, measures, rules, query_ids)
    assert len(compared) >= 20 if case.startswith("out.test.a") else len(compared) >= 5
    mismatches = []
    for (name, qid), ours in compared.items():
        value = result.mean(ours) if qid == "all" else result.per_query(qid)[ours]
        if f"{value:.4f}" != expected[(name, qid)]:
            mismatches.append(f"{name} {qid}: trec_eval {expected[(name, qid)]}, ours {value:.6f}")
    assert not mismatches, "\n".join(mismatches)
    if ("num_q", "all") in expected:
        assert int(result.included.sum()) == int(expected[("num_q", "all")])
