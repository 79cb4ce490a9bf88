"""TREC files as the Python engine's inputs, for the measures the compiled engine does not
compute (recallbench's own).

One reader per format: the compiled engine's (:mod:`recallbench.measures._ctrec`) reads
every plain file, straight into dicts and lists; whatever it does not take as plain, or
everything where it was not built, the exact line reader
(:mod:`recallbench.datasets._trec_lines`) reads, and it alone reports problems, with the
file and line. Both give the same judgments and rankings for the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from recallbench.core import Problem, RunFileError
from recallbench.datasets._trec import read_trec_qrels, read_trec_rankings
from recallbench.measures._evaluate import Evaluation
from recallbench.measures._measure import Measure
from recallbench.measures._trec_eval import TrecOptions, evaluate_trec

try:
    from recallbench.measures import _ctrec
except ImportError:  # built without a C compiler
    _ctrec = None  # type: ignore[assignment]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """A qrels file's judgments: query id -> {document id -> grade}, in file order."""
    judged = None if _ctrec is None else _ctrec.read_qrels(str(path))
    return read_trec_qrels(path) if judged is None else judged


def read_rankings(path: Path) -> tuple[dict[str, list[str]], str]:
    """A run file's rankings in trec_eval's order (score descending, then document id
    descending), queries in order of first appearance, and the run's tag (its last
    line's)."""
    read = None if _ctrec is None else _ctrec.read_run(str(path))
    if read is None:
        return read_trec_rankings(path)
    names, docs, _, tag = read
    return dict(zip(names, docs, strict=True)), tag


def evaluate_files(
    qrels: Path, run: Path, measures: Sequence[Measure], options: TrecOptions
) -> tuple[Evaluation, str]:
    """The evaluation of ``run`` against ``qrels`` as trec_eval, and the run's tag.

    Raises RunFileError when no query has both judgments and results (without ``-c``):
    trec_eval stops there too (exit 7) rather than print means of nothing."""
    rankings, tag = read_rankings(run)
    evaluation = evaluate_trec(read_qrels(qrels), rankings, measures, options)
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
