"""TREC qrels and run files, as trec_eval 10.0 reads them.

qrels: ``query iteration document grade``; run: ``query Q0 document rank score tag``.
trec_eval ignores the rank column and orders by score descending, ties broken by document
id descending (byte-wise). The rules (whitespace, comments, fields, numbers, duplicates, the
run's tag, queries missing from the run) are written in :mod:`._trec_lines`, the exact line
reader, which reads here. Evaluations read plain files with the compiled engine's reader
first (:mod:`recallbench.measures._files`), which gives the same judgments and rankings.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING

from recallbench.core._files import atomic_write_text
from recallbench.datasets._trec_lines import MAX_PROBLEMS, parse_qrels_lines, parse_run_lines

if TYPE_CHECKING:
    from recallbench.core import Run

__all__ = ["MAX_PROBLEMS"]


def read_trec_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Read a qrels file into query id -> {document id -> grade}."""
    qrels: dict[str, dict[str, int]] = {}
    for query_id, doc_id, grade in zip(*parse_qrels_lines(path), strict=True):
        qrels.setdefault(query_id, {})[doc_id] = grade
    return qrels


def _ranked(path: Path) -> tuple[dict[str, list[tuple[float, str]]], str]:
    """Each query's (score, document) pairs in trec_eval's order, and the run's tag."""
    queries, docs, scores, tag = parse_run_lines(path)
    ranked: dict[str, list[tuple[float, str]]] = {}
    for query_id, doc_id, score in zip(queries, docs, scores, strict=True):
        ranked.setdefault(query_id, []).append((score, doc_id))
    for pairs in ranked.values():
        pairs.sort(reverse=True)  # score descending, then document id descending
    return ranked, tag


def read_trec_rankings(path: Path) -> tuple[dict[str, list[str]], str]:
    """A run file's rankings in trec_eval's order (score descending, then document id
    descending), and the run's tag (from its last line, as trec_eval)."""
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
