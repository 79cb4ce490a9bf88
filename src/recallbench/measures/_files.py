"""Evaluate TREC files: small ones through the exact line reader (no Arrow import, it
costs more than it saves), large ones through the columnar reader and join."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from recallbench.core import Problem, RunFileError
from recallbench.datasets._trec import is_small, read_trec_qrels, read_trec_rankings
from recallbench.measures._evaluate import Evaluation
from recallbench.measures._measure import Measure
from recallbench.measures._trec_bytes import evaluate_plain
from recallbench.measures._trec_eval import TrecOptions, evaluate_trec, evaluate_trec_table


def evaluate_files(
    qrels: Path, run: Path, measures: Sequence[Measure], options: TrecOptions
) -> tuple[Evaluation, str]:
    """The evaluation of ``run`` against ``qrels`` as trec_eval, and the run's tag.

    Raises RunFileError when no query has both judgments and results (without ``-c``):
    trec_eval stops there too (exit 7) rather than print means of nothing."""
    evaluation, tag = _evaluate_files(qrels, run, measures, options)
    if not evaluation.query_ids:
        raise RunFileError(
            str(run),
            [
                Problem(
                    "",
                    f"no query of the run is judged in {qrels}: nothing to evaluate "
                    "(compare the query ids; -c scores the judged queries the run lacks as 0)",
                )
            ],
        )
    return evaluation, tag


def _evaluate_files(
    qrels: Path, run: Path, measures: Sequence[Measure], options: TrecOptions
) -> tuple[Evaluation, str]:
    if is_small(qrels) and is_small(run):
        plain = evaluate_plain(qrels, run, measures, options)
        if plain is not None:
            return plain
        rankings, tag = read_trec_rankings(run)
        return evaluate_trec(read_trec_qrels(qrels), rankings, measures, options), tag
    from recallbench.datasets._trec import read_qrels_columns, read_run_columns
    from recallbench.measures._join import table_from_columns

    # Arrow's CSV reader uses every core while it parses; the qrels' hashing runs meanwhile
    with ThreadPoolExecutor(1) as pool:
        judged = pool.submit(read_qrels_columns, qrels)
        run_columns = read_run_columns(run)
        qrels_columns = judged.result()
    table, absent = table_from_columns(qrels_columns, run_columns, options, consume=True)
    return evaluate_trec_table(table, measures, options, absent), run_columns.tag
