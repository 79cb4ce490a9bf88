"""TREC qrels and run files, as trec_eval reads them.

qrels: ``query iteration document grade`` (whitespace separated).
run:   ``query Q0 document rank score tag [anything]``; trec_eval ignores the rank column
and orders by score descending, ties broken by document id descending (string compare).
Lines whose first character (after blanks) is ``#`` are comments. Document ids may contain
``#`` (trec_eval's own test files have them).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from recallbench.core._errors import DatasetError, Problem, RunFileError

if TYPE_CHECKING:
    from recallbench.core import Run
from recallbench.core._columns import (
    QrelsColumns,
    RunColumns,
    arrow,
    as_numpy,
    release_arrow_memory,
)
from recallbench.core._files import atomic_write_text
from recallbench.datasets._fast_read import (
    QRELS_COLUMNS,
    RUN_COLUMNS,
    encode_queries,
    first_tag,
    index_queries,
    read_columns_fast,
)

MAX_PROBLEMS = 50
"""Stop collecting problems after this many: a wrong file would otherwise print millions."""


def _lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of every non-blank, non-comment line."""
    try:
        handle = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise DatasetError(str(path), [Problem("", "file not found")]) from None
    with handle:
        for number, line in enumerate(handle, start=1):
            fields = line.split()
            if fields and not fields[0].startswith("#"):
                yield number, fields


class _Collector:
    def __init__(self, path: Path, error: type[DatasetError]) -> None:
        self.path, self.error, self.problems = path, error, list[Problem]()

    def add(self, line: int, message: str) -> None:
        if len(self.problems) == MAX_PROBLEMS:
            self.raise_if_any()
        self.problems.append(Problem(f"{self.path}:{line}", message))

    def raise_if_any(self) -> None:
        if self.problems:
            more = " (stopped here)" if len(self.problems) >= MAX_PROBLEMS else ""
            raise self.error(str(self.path) + more, self.problems)


def _parse_qrels_lines(path: Path) -> tuple[list[str], list[str], list[int]]:
    """The exact reader: every malformed line is reported with its ``file:line``."""
    queries: list[str] = []
    docs: list[str] = []
    grades: list[int] = []
    seen: dict[tuple[str, str], int] = {}
    problems = _Collector(path, DatasetError)
    for number, fields in _lines(path):
        if len(fields) != 4:
            problems.add(
                number, f"expected 4 fields (query iter document grade), got {len(fields)}"
            )
            continue
        query_id, _, doc_id, grade_text = fields
        try:
            grade = int(grade_text)
        except ValueError:
            problems.add(number, f"grade must be an integer, got {grade_text!r}")
            continue
        previous = seen.setdefault((query_id, doc_id), grade)
        if previous != grade:
            problems.add(number, f"document {doc_id!r} judged twice for query {query_id!r}")
        queries.append(query_id)
        docs.append(doc_id)
        grades.append(grade)
    problems.raise_if_any()
    return queries, docs, grades


def _parse_run_lines(path: Path) -> tuple[list[str], list[str], list[float], str]:
    """The exact reader: every malformed line is reported with its ``file:line``."""
    queries: list[str] = []
    docs: list[str] = []
    scores: list[float] = []
    tag = ""
    problems = _Collector(path, RunFileError)
    for number, fields in _lines(path):
        if len(fields) < 6:
            problems.add(
                number, f"expected 6 fields (query Q0 document rank score tag), got {len(fields)}"
            )
            continue
        try:
            score = float(fields[4])
        except ValueError:
            problems.add(number, f"score must be a number, got {fields[4]!r}")
            continue
        if math.isnan(score):
            problems.add(number, "score must be a number, got NaN")
            continue
        queries.append(fields[0])
        docs.append(fields[2])
        scores.append(score)
        tag = tag or fields[5]
    problems.raise_if_any()
    return queries, docs, scores, tag or path.stem


def read_qrels_columns(path: Path) -> QrelsColumns:
    """Read a qrels file as columns: Arrow's multi-threaded CSV reader for plain
    single-space or single-tab files, the exact line reader for anything else (comments,
    ragged whitespace) and to locate every problem when the fast read finds one."""
    types = {"query": "string", "doc": "string", "grade": "int64"}
    fast = read_columns_fast(path, QRELS_COLUMNS, types)
    if fast is not None:
        query_names, query = encode_queries(fast.column("query"))
        docs = fast.column("doc")
        doc_names = docs.combine_chunks() if hasattr(docs, "combine_chunks") else docs
        grade = as_numpy(fast.column("grade")).astype(np.int64, copy=False)
        del fast
        release_arrow_memory()
        if query_names is not None:  # conflicting grades are refused by the join
            return QrelsColumns(query_names, query, doc_names, None, grade)
    queries, docs, grades = _parse_qrels_lines(path)
    query_names, query_index = index_queries(queries)
    distinct_docs, doc_index = index_queries(docs)
    names = arrow().array(distinct_docs, type=arrow().string())
    grade = np.array(grades, dtype=np.int64)
    return QrelsColumns(query_names, query_index, names, doc_index, grade)


def read_run_columns(path: Path) -> RunColumns:
    """Read a run file as columns (see :func:`read_qrels_columns` for the two readers)."""
    fast = read_columns_fast(
        path, RUN_COLUMNS, {"query": "string", "doc": "string", "score": "float64"}
    )
    if fast is not None:
        query_names, query = encode_queries(fast.column("query"))
        score = as_numpy(fast.column("score"))
        doc = fast.column("doc")
        del fast
        release_arrow_memory()
        if query_names is not None and not np.isnan(score).any():
            return RunColumns(query_names, query, doc, score, first_tag(path))
    queries, docs, scores, tag = _parse_run_lines(path)
    names, index = index_queries(queries)
    doc = arrow().array(docs, type=arrow().string())
    return RunColumns(names, index, doc, np.array(scores, dtype=np.float64), tag)


SMALL_FILE = 8 << 20
"""Below this size the exact line reader is faster than importing and running Arrow."""


def is_small(path: Path) -> bool:
    try:
        return path.stat().st_size < SMALL_FILE
    except OSError:
        return True  # let the reader report the missing file


def read_trec_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Read a qrels file into query id -> {document id -> grade}."""
    if not is_small(path):
        return read_qrels_columns(path).to_dict()
    qrels: dict[str, dict[str, int]] = {}
    for query_id, doc_id, grade in zip(*_parse_qrels_lines(path), strict=True):
        qrels.setdefault(query_id, {})[doc_id] = grade
    return qrels


def _ranked(path: Path) -> tuple[dict[str, list[tuple[float, str]]], str]:
    """Each query's (score, document) pairs in trec_eval's order, and the run's tag."""
    if is_small(path):
        queries, docs, scores, tag = _parse_run_lines(path)
    else:
        columns = read_run_columns(path)
        names = columns.query_names
        queries = [names[q] for q in columns.query.tolist()]
        docs, scores, tag = columns.doc.to_pylist(), columns.score.tolist(), columns.tag
    ranked: dict[str, list[tuple[float, str]]] = {}
    for query_id, doc_id, score in zip(queries, docs, scores, strict=True):
        ranked.setdefault(query_id, []).append((score, doc_id))
    for pairs in ranked.values():
        pairs.sort(reverse=True)  # score descending, then document id descending
    return ranked, tag


def read_trec_rankings(path: Path) -> tuple[dict[str, list[str]], str]:
    """A run file's rankings in trec_eval's order (score descending, then document id
    descending), and the run's tag (from its first line, as trec_eval)."""
    ranked, tag = _ranked(path)
    return {query_id: [doc for _, doc in pairs] for query_id, pairs in ranked.items()}, tag


def read_trec_run(path: Path) -> Run:
    """Read a run file; each query's hits are ordered as trec_eval orders them."""
    from recallbench.core import Hit, QueryResult, Run, RunSpec

    ranked, tag = _ranked(path)
    results = tuple(
        QueryResult.model_construct(
            query_id=query_id,
            hits=tuple(
                Hit.model_construct(doc_id=doc, score=score, channels=()) for score, doc in pairs
            ),
        )
        for query_id, pairs in ranked.items()
    )
    return Run(spec=RunSpec(system=tag, ordering="score-desc-docid-desc"), results=results)


def format_trec_qrels(qrels: Mapping[str, Mapping[str, int]]) -> str:
    return "".join(
        f"{query_id} 0 {doc_id} {grade}\n"
        for query_id, judged in qrels.items()
        for doc_id, grade in judged.items()
    )


def format_trec_run(run: Run, tag: str | None = None) -> str:
    """Render a run so that trec_eval reads back exactly its order.

    When a query's scores are missing or not strictly decreasing, trec_eval would reorder its
    hits; those queries are written with descending synthetic scores (n, n-1, ..., 1) instead.
    """
    tag = tag or run.spec.system.replace(" ", "_") or "recallbench"
    lines: list[str] = []
    for result in run.results:
        scores = [hit.score for hit in result.hits]
        known = [score for score in scores if score is not None]
        keep = len(known) == len(scores) and all(a > b for a, b in pairwise(known))
        count = len(result.hits)
        for index, hit in enumerate(result.hits):
            score = hit.score if keep else float(count - index)
            lines.append(f"{result.query_id} Q0 {hit.doc_id} {index + 1} {score!r} {tag}\n")
    return "".join(lines)


def write_trec_qrels(qrels: Mapping[str, Mapping[str, int]], path: str | os.PathLike[str]) -> None:
    atomic_write_text(Path(path), format_trec_qrels(qrels))


def write_trec_run(run: Run, path: str | os.PathLike[str], tag: str | None = None) -> None:
    atomic_write_text(Path(path), format_trec_run(run, tag))
