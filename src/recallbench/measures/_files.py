"""TREC files as the Python engine's inputs, for the measures the compiled engine does not
compute (recallbench's own).

One reader per format: the compiled engine's (:mod:`recallbench.measures._ctrec`) reads
every plain file, straight into dicts and lists; whatever it does not take as plain, or
everything where it was not built, the exact line reader
(:mod:`recallbench.datasets._trec_lines`) reads, and it alone reports problems, with the
file and line. Both give the same judgments and rankings for the same bytes.

A run that must be streamed (over 256 MiB: :func:`recallbench.measures._trec_native.
stream_block`) is read here a block of query groups at a time too (:func:`evaluate_files`):
only the qrels, one block's groups and the per-query results are held, and a run not
grouped by query is refused here, with the line where a query comes back. What still
reads a run whole: the line reader, which takes a run the compiled engine does not (bytes
that are not UTF-8, a malformed line: the error path, which reports the problem with its
line, and installs without a C compiler), and a measure whose mean is not taken from
per-query values (agent-memory populations and aggregates; none of trec_eval's).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

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
    trec_eval stops there too (exit 7) rather than print means of nothing; and when a run
    to stream is not grouped by query."""
    streamed = _evaluate_streamed(qrels, run, measures, options)
    if streamed is not None:
        evaluation, tag = streamed
    else:
        rankings, tag = read_rankings(run)
        evaluation = evaluate_trec(read_qrels(qrels), rankings, measures, options)
    if not evaluation.query_ids:
        raise _nothing_evaluated(qrels, run)
    return evaluation, tag


def _nothing_evaluated(qrels: Path, run: Path) -> RunFileError:
    return RunFileError(
        str(run),
        [
            Problem(
                "",
                f"no query of the run is judged in {qrels}: nothing to evaluate "
                "(compare the query ids; -c scores the judged queries the run lacks as 0)",
            )
        ],
    )


def _evaluate_streamed(
    qrels: Path, run: Path, measures: Sequence[Measure], options: TrecOptions
) -> tuple[Evaluation, str] | None:
    """The evaluation of a run to stream, read a range of query groups at a time (each
    range's queries evaluated on their own, the per-query results joined in trec_eval's
    query order: every value and mean is the one of the whole run); None when the run is
    read whole (small, not plain, or a measure's mean not taken from per-query values)."""
    from recallbench.measures._trec_native import not_grouped, stream_block

    block = 0 if _ctrec is None else stream_block(run)
    if not block:
        return None
    starts = _ctrec.run_groups(str(run), block)
    if starts is None:
        return None
    if isinstance(starts, tuple):
        raise not_grouped(run, *starts)
    judged = read_qrels(qrels)
    ends = [*starts[1:], os.stat(run).st_size]
    parts: list[Evaluation] = []
    seen: set[str] = set()
    tag = ""
    begin = 0
    for number, end in enumerate(ends):
        if end - begin < block and number < len(ends) - 1:
            continue  # a range of groups of at least a block (Python objects: ~5x its size)
        read = _ctrec.read_run(str(run), begin, end - begin)
        if read is None:
            return None  # not plain: the line reader reports it (reading the run whole)
        names, docs, _, tag = read
        seen.update(names)
        chosen = {qid: judged[qid] for qid in names if qid in judged}
        if chosen:
            rankings = dict(zip(names, docs, strict=True))
            parts.append(evaluate_trec(chosen, rankings, measures, options))
        begin = end
    if options.complete:  # judged queries the run lacks: trec_eval's stand-in ranking
        lacking = {qid: grades for qid, grades in judged.items() if qid not in seen}
        if lacking:
            parts.append(evaluate_trec(lacking, {}, measures, options))
    if not parts:
        raise _nothing_evaluated(qrels, run)
    joined = _join(parts)
    return None if joined is None else (joined, tag)


def _join(parts: list[Evaluation]) -> Evaluation | None:
    """Evaluations of disjoint queries (at least one) as one, queries in trec_eval's order
    (sorted); None when a mean is not taken from the per-query values (it could not be
    joined)."""
    first = parts[0]
    for part in parts:
        if part.populations or part.details:
            return None
        if any(first.measures[name].trec_label() != "num_rel" for name in part.aggregates):
            return None  # -c's num_rel (a count of judgments) is the one joined, by a sum
    if len(parts) == 1:
        return first
    ids = [qid for part in parts for qid in part.query_ids]
    order = np.array(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.intp)

    def joined(arrays: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(arrays)[order]

    texts = {}
    for name in first.texts:
        every = [text for part in parts for text in part.texts[name]]
        texts[name] = [every[i] for i in order]
    return replace(
        first,
        query_ids=tuple(ids[i] for i in order),
        values={name: joined([part.values[name] for part in parts]) for name in first.values},
        included=joined([part.included for part in parts]),
        missing=joined([part.missing for part in parts]),
        no_relevant=joined([part.no_relevant for part in parts]),
        texts=texts,
        duplicates={qid: n for part in parts for qid, n in part.duplicates.items()},
        aggregates={
            name: sum(part.aggregates[name] for part in parts) for name in first.aggregates
        },
    )


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
