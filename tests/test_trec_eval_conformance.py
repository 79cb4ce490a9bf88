"""trec_eval's own expected outputs, reproduced for every measure recallbench has.

Files come from usnistgov/trec_eval test/ (see ../shared/data/trec_eval_tests/SOURCE.md).
Every line of every expected output is compared at trec_eval's printed precision when
recallbench implements the measure; a measure it lacks must be listed in SKIPPED with the
reason, so coverage cannot shrink silently.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from recallbench.core import UnknownMeasureError
from recallbench.datasets import read_trec_qrels, read_trec_run
from recallbench.measures import Measure
from recallbench.measures._measure import parse_trec_measure, trec_family
from recallbench.measures._trec_eval import TrecOptions, evaluate_trec
from recallbench.measures._trec_output import trec_lines

SKIPPED = {
    "runid": "not a measure: the run's tag, printed by `recallbench evaluate` (checked there)",
    "ndcg": "ndcg with a gain map (ndcg.1=3,2=9,...) is not implemented; plain ndcg is",
}

CASES = {
    # expected output: qrels, run, trec_eval options
    "out.test": ("qrels.test", "results.test", TrecOptions()),
    "out.test (qrels with comments)": ("qrels.test.with-comments", "results.test", TrecOptions()),
    "out.comment.test": ("qrels.comment.test", "results.comment.test", TrecOptions()),
    "out.test.a": ("qrels.test", "results.test", TrecOptions()),
    "out.test.aq": ("qrels.test", "results.test", TrecOptions()),
    "out.test.aqc": ("qrels.test", "results.trunc", TrecOptions(complete=True)),
    "out.test.aqcM": ("qrels.test", "results.trunc", TrecOptions(complete=True, max_docs=100)),
    "out.test.aql": ("qrels.rel_level", "results.test", TrecOptions(relevance_level=2)),
    "out.test.meas_params": ("qrels.test", "results.test", TrecOptions()),
}


def measure_for(label: str) -> Measure | None:
    """The measure trec_eval prints as ``label`` (``P_5``, ``iprec_at_recall_0.10``)."""
    candidates = [(label, "")] + [
        (label[:i], label[i + 1 :]) for i in range(len(label)) if label[i] == "_"
    ]
    for family, param in candidates:
        if trec_family(family) is None:
            continue
        try:
            measures = parse_trec_measure(f"{family}.{param}" if param else family)
        except UnknownMeasureError:
            continue
        for measure in measures:
            if measure.trec_label() == label:
                return measure
    return None


def expected_lines(path: Path) -> dict[tuple[str, str], str]:
    lines = {}
    for line in path.read_text().splitlines():
        label, qid, value = (field.strip() for field in line.split("\t"))
        lines[(label, qid)] = value
    return lines


def skip_reason(label: str) -> str | None:
    for prefix, reason in SKIPPED.items():
        if label == prefix or label.startswith(prefix + "_"):
            return reason
    return None


@pytest.mark.parametrize("case", list(CASES))
def test_reproduces_trec_eval_output(trec_tests: Path, case: str) -> None:
    qrels_name, run_name, options = CASES[case]
    expected = expected_lines(trec_tests / case.split(" ")[0])
    labels = list(dict.fromkeys(label for label, _ in expected))
    measures = {label: m for label in labels if (m := measure_for(label)) is not None}
    qrels = read_trec_qrels(trec_tests / qrels_name)
    run = read_trec_run(trec_tests / run_name)
    rankings = {r.query_id: [h.doc_id for h in r.hits] for r in run.results}
    evaluation = evaluate_trec(qrels, rankings, list(measures.values()), options)
    ours = {(label, qid): value for label, qid, value in trec_lines(evaluation, per_query=True)}
    compared = [key for key in expected if key[0] in measures]
    mismatches = [
        f"{label} {qid}: trec_eval {expected[(label, qid)]}, ours {ours.get((label, qid))}"
        for label, qid in compared
        if ours.get((label, qid)) != expected[(label, qid)]
    ]
    assert not mismatches, f"{len(mismatches)} of {len(compared)} differ:\n" + "\n".join(mismatches)
    assert len(compared) >= 10


@pytest.mark.parametrize("case", list(CASES))
def test_every_trec_eval_measure_is_implemented_or_listed(trec_tests: Path, case: str) -> None:
    expected = expected_lines(trec_tests / case.split(" ")[0])
    labels = dict.fromkeys(label for label, _ in expected)
    unlisted = [x for x in labels if measure_for(x) is None and skip_reason(x) is None]
    assert not unlisted, f"measures neither implemented nor listed in SKIPPED: {unlisted}"
