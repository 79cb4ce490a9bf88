"""TREC qrels and run files, as trec_eval 10.0 reads them.

qrels: ``query iteration document grade``; run: ``query Q0 document rank score tag``.
trec_eval ignores the rank column and orders by score descending, ties broken by document
id descending (byte-wise). The rules (whitespace, comments, fields, numbers, duplicates, the
run's tag, queries missing from the run) are written in :mod:`._trec_lines`, the exact line
reader; :mod:`._fast_read` is Arrow's CSV reader for large files, which reads only files it
reads identically and otherwise steps aside to the line reader. Either way the same bytes
give the same judgments and rankings, or the same located errors.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

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
    has_blank_line,
    index_queries,
    last_line,
    read_columns_fast,
    unique_pairs,
)
from recallbench.datasets._trec_lines import (
    GRADE,
    MAX_PROBLEMS,
    parse_qrels_lines,
    parse_run_lines,
)
from recallbench.datasets._trec_split import ranked_blocks, split_qrels, split_run

if TYPE_CHECKING:
    from recallbench.core import Run

__all__ = ["MAX_PROBLEMS", "SMALL_FILE", "is_small"]


def _distinct_pairs(fast: Any) -> tuple[tuple[str, ...], npt.NDArray[np.int32]] | None:
    """The query ids and each row's index, None when a query id starts with ``#`` (a
    comment line the line reader skips) or a (query, document) pair may repeat (the line
    reader then names both lines)."""
    query_names, query = encode_queries(fast.column("query"))
    if any(name.startswith("#") for name in query_names):
        return None
    if not unique_pairs(query, fast.column("doc")):
        return None
    return query_names, query


def _fast_qrels(path: Path) -> QrelsColumns | None:
    """The qrels read by Arrow, None when the line reader must read them."""
    fast = read_columns_fast(
        path, QRELS_COLUMNS, {"query": "string", "doc": "string", "grade": "string"}
    )
    if fast is None or not fast.num_rows or has_blank_line(path):
        return None
    pc = arrow().compute
    text = fast.column("grade")
    if not pc.all(pc.match_substring_regex(text, "^" + GRADE.pattern.decode() + "$")).as_py():
        return None  # a grade atol reads only in part: the line reader refuses it
    try:
        grade = as_numpy(pc.cast(text, arrow().int64()).combine_chunks())
    except (arrow().ArrowInvalid, ValueError):
        return None  # out of range
    encoded = _distinct_pairs(fast)
    if encoded is None:
        return None
    query_names, query = encoded
    docs = fast.column("doc")
    doc_names = docs.combine_chunks() if hasattr(docs, "combine_chunks") else docs
    del fast, text
    release_arrow_memory()
    return QrelsColumns(query_names, query, doc_names, None, grade)


def read_qrels_columns(path: Path) -> QrelsColumns:
    """Read a qrels file as columns: Arrow's multi-threaded CSV reader for plain files, the
    exact line reader for anything else and to locate every problem."""
    fast = _fast_qrels(path)
    if fast is not None:
        return fast
    queries, docs, grades = parse_qrels_lines(path)
    query_names, query_index = index_queries(queries)
    distinct_docs, doc_index = index_queries(docs)
    names = arrow().array(distinct_docs, type=arrow().string())
    grade = np.array(grades, dtype=np.int64)
    return QrelsColumns(query_names, query_index, names, doc_index, grade)


def _fast_run(path: Path) -> RunColumns | None:
    """The run read by Arrow, None when the line reader must read it."""
    types = {"query": "string", "doc": "string", "score": "float64"}
    fast = read_columns_fast(path, RUN_COLUMNS, types)
    if fast is None or not fast.num_rows:
        return None
    tag = last_line(path).split()[5]
    try:
        tag_text = tag.decode("utf-8")
    except UnicodeDecodeError:
        return None
    # Arrow reads nan, inf and null markers, which the line reader refuses; every other
    # token it reads is a decimal the line reader reads to the same double (both round
    # correctly)
    score = as_numpy(fast.column("score"), null=0)
    if fast.column("score").null_count or not np.isfinite(score).all():
        return None
    encoded = _distinct_pairs(fast)
    if encoded is None:
        return None
    query_names, query = encoded
    doc = fast.column("doc")
    del fast
    release_arrow_memory()
    return RunColumns(query_names, query, doc, score, tag_text)


def read_run_columns(path: Path) -> RunColumns:
    """Read a run file as columns (see :func:`read_qrels_columns` for the two readers)."""
    fast = _fast_run(path)
    if fast is not None:
        return fast
    queries, docs, scores, tag = parse_run_lines(path)
    names, index = index_queries(queries)
    doc = arrow().array(docs, type=arrow().string())
    return RunColumns(names, index, doc, np.array(scores, dtype=np.float64), tag)


SMALL_FILE = 8 << 20
"""Below this size the exact line reader is faster than importing and running Arrow. Both
readers read the same; tests set it to 0 (or a large number) to force one of them."""


def is_small(path: Path) -> bool:
    try:
        return path.stat().st_size < SMALL_FILE
    except OSError:
        return True  # let the reader report the missing file


def read_trec_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Read a qrels file into query id -> {document id -> grade}."""
    if not is_small(path):
        return read_qrels_columns(path).to_dict()
    plain = split_qrels(path)
    if plain is not None:
        return plain
    qrels: dict[str, dict[str, int]] = {}
    for query_id, doc_id, grade in zip(*parse_qrels_lines(path), strict=True):
        qrels.setdefault(query_id, {})[doc_id] = grade
    return qrels


def _ranked(path: Path) -> tuple[dict[str, list[tuple[float, str]]], str]:
    """Each query's (score, document) pairs in trec_eval's order, and the run's tag."""
    if is_small(path):
        queries, docs, scores, tag = parse_run_lines(path)
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
    descending), and the run's tag (from its last line, as trec_eval)."""
    plain = split_run(path) if is_small(path) else None
    if plain is not None:
        names, bounds, docs, scores, tag = plain
        return ranked_blocks(names, bounds, docs, scores), tag
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
    A document returned twice is written once, at its first rank: that is how it is scored
    (DESIGN §4), and trec_eval refuses a document twice in one ranking.
    """
    tag = tag or run.spec.system.replace(" ", "_") or "recallbench"
    lines: list[str] = []
    for result in run.results:
        firsts = {hit.doc_id: hit for hit in reversed(result.hits)}  # the first rank wins
        hits = [hit for hit in result.hits if firsts[hit.doc_id] is hit]
        scores = [hit.score for hit in hits]
        known = [score for score in scores if score is not None]
        keep = len(known) == len(scores) and all(a > b for a, b in pairwise(known))
        count = len(hits)
        for index, hit in enumerate(hits):
            score = hit.score if keep else float(count - index)
            lines.append(f"{result.query_id} Q0 {hit.doc_id} {index + 1} {score!r} {tag}\n")
    return "".join(lines)


def write_trec_qrels(qrels: Mapping[str, Mapping[str, int]], path: str | os.PathLike[str]) -> None:
    atomic_write_text(Path(path), format_trec_qrels(qrels))


def write_trec_run(run: Run, path: str | os.PathLike[str], tag: str | None = None) -> None:
    atomic_write_text(Path(path), format_trec_run(run, tag))
