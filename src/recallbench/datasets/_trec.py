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

from recallbench.core import DatasetError, Hit, Problem, QueryResult, Run, RunFileError, RunSpec
from recallbench.core._files import atomic_write_text

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


def read_trec_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Read a qrels file into query id -> {document id -> grade}."""
    qrels: dict[str, dict[str, int]] = {}
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
        judged = qrels.setdefault(query_id, {})
        if doc_id in judged and judged[doc_id] != grade:
            problems.add(number, f"document {doc_id!r} judged twice for query {query_id!r}")
        judged[doc_id] = grade
    problems.raise_if_any()
    return qrels


def read_trec_run(path: Path) -> Run:
    """Read a run file; each query's hits are ordered as trec_eval orders them."""
    per_query: dict[str, list[tuple[float, str]]] = {}
    tags: set[str] = set()
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
        per_query.setdefault(fields[0], []).append((score, fields[2]))
        tags.add(fields[5])
    problems.raise_if_any()
    results = []
    for query_id, scored in per_query.items():
        scored.sort(reverse=True)  # score descending, then document id descending
        hits = tuple(
            Hit.model_construct(doc_id=doc, score=score, channels=()) for score, doc in scored
        )
        results.append(QueryResult.model_construct(query_id=query_id, hits=hits))
    spec = RunSpec(system=",".join(sorted(tags)) or path.stem, ordering="score-desc-docid-desc")
    return Run(spec=spec, results=tuple(results))


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
