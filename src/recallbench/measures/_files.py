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
from dataclasses import dataclass
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


@dataclass(frozen=True)
class TrecOutput:
    """What ``recallbench evaluate`` prints, in trec_eval's layout and as lines."""

    text: str
    """trec_eval's output, byte for byte."""
    tag: str
    """The run's tag (its last line's)."""
    left_out: list[str]
    """Families of a named set (``all_trec``) that recallbench does not implement."""

    def lines(self) -> list[tuple[str, str, str]]:
        """The output as (label, query id or ``all``, value)."""
        from recallbench.measures._trec_native import text_lines

        return text_lines(self.text)


def trec_eval_files(
    qrels: Path,
    run: Path,
    specs: Sequence[str],
    options: TrecOptions,
    *,
    per_query: bool = False,
    summary: bool = True,
) -> TrecOutput:
    """trec_eval's output for two files and ``-m`` arguments (``official`` when none): the
    compiled engine's when it takes them (every trec_eval measure on a plain file), else
    the Python engine's (recallbench's own measures, files it does not take), which is the
    same for what both take."""
    from recallbench.measures._trec_native import evaluate_files_text
    from recallbench.measures._trec_output import format_trec, trec_lines
    from recallbench.measures._trec_sets import expand_trec_measures

    compiled = evaluate_files_text(
        qrels,
        run,
        specs,
        relevance_level=options.relevance_level,
        complete=options.complete,
        max_docs=options.max_docs,
        judged_only=options.judged_only,
        per_query=per_query,
        summary=summary,
    )
    if compiled is not None:
        return TrecOutput(*compiled, [])
    measures, want_runid, left_out = expand_trec_measures(specs or ("official",))
    result, tag = evaluate_files(qrels, run, measures, options)
    lines = trec_lines(result, per_query, tag if want_runid else None, summary=summary)
    return TrecOutput(format_trec(lines), tag, left_out)
