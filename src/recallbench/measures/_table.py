"""The columnar form every measure is computed on.

All queries' rankings are laid end to end (CSR layout): position ``i`` of the flat arrays
is one returned document, ``query[i]`` its query's index and ``rank[i]`` its 0-based rank.
Measures are then a handful of numpy reductions over all queries at once, with no Python
loop per query or per document.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, eq=False)
class RankTable:
    """Rankings of ``num_queries`` queries joined with their judgments."""

    query_ids: tuple[str, ...]
    relevance_threshold: int
    query: IntArray
    """Query index of each returned document."""
    rank: IntArray
    """0-based rank of each returned document within its query."""
    grade: IntArray
    """Judged grade of each returned document; 0 when unjudged or a repeated document."""
    num_ret: IntArray
    """Per query: number of returned documents (repeats included)."""
    num_rel: IntArray
    """Per query: number of judged documents with grade >= the threshold."""
    ideal_query: IntArray
    """Query index of each judged document with a positive grade, best grades first."""
    ideal_rank: IntArray
    ideal_grade: IntArray
    duplicates: IntArray
    """Per query: number of returned documents that repeat an earlier one."""

    @property
    def num_queries(self) -> int:
        return len(self.query_ids)

    @property
    def relevant(self) -> BoolArray:
        """Whether each returned document is relevant (grade >= threshold)."""
        return self.grade >= self.relevance_threshold

    def per_query_sum(self, values: npt.ArrayLike, where: BoolArray | None = None) -> FloatArray:
        """Sum ``values`` over each query's returned documents (optionally masked)."""
        weights = np.asarray(values, dtype=np.float64)
        if where is None:
            totals = np.bincount(self.query, weights=weights, minlength=self.num_queries)
            return totals.astype(np.float64, copy=False)
        if weights.ndim == 0:
            weights = np.full(len(self.query), float(weights))
        totals = np.bincount(self.query[where], weights=weights[where], minlength=self.num_queries)
        return totals.astype(np.float64, copy=False)

    def first_rank(self, where: BoolArray) -> FloatArray:
        """Per query: 0-based rank of the first document where ``where`` holds, else inf."""
        out = np.full(self.num_queries, np.inf)
        queries = self.query[where]
        firsts, index = np.unique(queries, return_index=True)
        out[firsts] = self.rank[where][index]
        return out

    def running_count(self, where: BoolArray) -> IntArray:
        """For each position: how many positions of its query, up to and including it, hold."""
        total = np.cumsum(where, dtype=np.int64)
        starts = np.searchsorted(self.query, np.arange(self.num_queries))
        before = np.concatenate(([0], total))[starts]
        return total - before[self.query]


def build_table(
    qrels: Mapping[str, Mapping[str, int]],
    rankings: Mapping[str, Sequence[str]],
    query_ids: Sequence[str],
    relevance_threshold: int = 1,
) -> RankTable:
    """Join rankings with judgments for ``query_ids`` (a query absent from ``rankings``
    has an empty ranking). A document returned twice keeps its first rank; later copies
    hold their place in the list but earn nothing, and are counted in ``duplicates``.
    """
    count = len(query_ids)
    sizes = np.array([len(rankings.get(qid, ())) for qid in query_ids], dtype=np.int64)
    grade = np.zeros(int(sizes.sum()), dtype=np.int64)
    duplicates = np.zeros(count, dtype=np.int64)
    num_rel = np.zeros(count, dtype=np.int64)
    ideal: list[list[int]] = []
    position = 0
    for index, qid in enumerate(query_ids):
        judged = qrels.get(qid, {})
        seen: set[str] = set()
        for doc in rankings.get(qid, ()):
            if doc in seen:
                duplicates[index] += 1
            else:
                seen.add(doc)
                grade[position] = judged.get(doc, 0)
            position += 1
        positive = sorted((g for g in judged.values() if g > 0), reverse=True)
        num_rel[index] = sum(1 for g in judged.values() if g >= relevance_threshold)
        ideal.append(positive)
    query = np.repeat(np.arange(count, dtype=np.int64), sizes)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    rank = np.arange(len(query), dtype=np.int64) - starts[query] if count else query
    ideal_sizes = np.array([len(g) for g in ideal], dtype=np.int64)
    ideal_query = np.repeat(np.arange(count, dtype=np.int64), ideal_sizes)
    ideal_starts = np.concatenate(([0], np.cumsum(ideal_sizes)[:-1])).astype(np.int64)
    ideal_rank = (
        np.arange(len(ideal_query), dtype=np.int64) - ideal_starts[ideal_query]
        if count
        else ideal_query
    )
    return RankTable(
        query_ids=tuple(query_ids),
        relevance_threshold=relevance_threshold,
        query=query,
        rank=rank,
        grade=grade,
        num_ret=sizes,
        num_rel=num_rel,
        ideal_query=ideal_query,
        ideal_rank=ideal_rank,
        ideal_grade=np.array([g for grades in ideal for g in grades], dtype=np.int64),
        duplicates=duplicates,
    )
