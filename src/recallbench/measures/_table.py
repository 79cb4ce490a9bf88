"""The columnar form every measure is computed on.

All queries' rankings are laid end to end (CSR layout): position ``i`` of the flat arrays
is one returned document, ``query[i]`` its query's index and ``rank[i]`` its 0-based rank.
The judged documents of every query are laid out the same way, best grade first. Measures
are then a handful of numpy reductions over all queries at once, with no Python loop per
query or per document. Both the dict path (:func:`build_table`) and the columnar file path
(:mod:`recallbench.measures._columns`) end in :meth:`RankTable.from_columns`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


def _ranks(group: IntArray, count: int) -> tuple[IntArray, IntArray]:
    """0-based position of each element within its group (groups contiguous, ascending),
    and the size of every group."""
    sizes = np.bincount(group, minlength=count).astype(np.int64)
    starts = np.zeros(count, dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    return np.arange(len(group), dtype=np.int64) - starts[group], sizes


@dataclass(frozen=True, eq=False)
class RankTable:
    """Rankings of ``num_queries`` queries joined with their judgments."""

    query_ids: tuple[str, ...]
    relevance_threshold: int
    query: IntArray
    """Query index of each returned document (ascending: queries are contiguous)."""
    rank: IntArray
    """0-based rank of each returned document within its query."""
    grade: IntArray
    """Judged grade of each returned document; 0 when unjudged or a repeated document."""
    judged: BoolArray
    """Whether each returned document is judged for its query (repeats: False)."""
    num_ret: IntArray
    """Per query: number of returned documents (repeats included)."""
    num_rel: IntArray
    """Per query: number of judged documents with grade >= the threshold."""
    judged_query: IntArray
    """Query index of every judged document of every query, best grade first per query."""
    judged_rank: IntArray
    """Position of each judged document in its query's ideal (grade-sorted) ranking."""
    judged_grade: IntArray
    duplicates: IntArray
    """Per query: number of returned documents that repeat an earlier one."""

    @classmethod
    def from_columns(
        cls,
        query_ids: Sequence[str],
        relevance_threshold: int,
        query: IntArray,
        grade: IntArray,
        judged: BoolArray,
        judged_query: IntArray,
        judged_grade: IntArray,
        duplicates: IntArray | None = None,
    ) -> RankTable:
        """Assemble a table from flat columns.

        ``query``/``grade``/``judged`` list the returned documents query by query, best first;
        ``judged_query``/``judged_grade`` list every judgment, in any order.
        """
        count = len(query_ids)
        rank, num_ret = _ranks(query, count)
        order = np.lexsort((-judged_grade, judged_query))
        judged_query, judged_grade = judged_query[order], judged_grade[order]
        judged_rank, _ = _ranks(judged_query, count)
        relevant = judged_grade >= relevance_threshold
        num_rel = np.bincount(judged_query[relevant], minlength=count).astype(np.int64)
        return cls(
            query_ids=tuple(query_ids),
            relevance_threshold=relevance_threshold,
            query=query,
            rank=rank,
            grade=grade,
            judged=judged,
            num_ret=num_ret,
            num_rel=num_rel,
            judged_query=judged_query,
            judged_rank=judged_rank,
            judged_grade=judged_grade,
            duplicates=np.zeros(count, dtype=np.int64) if duplicates is None else duplicates,
        )

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
        if weights.ndim == 0:
            weights = np.full(len(self.query), float(weights))
        if where is None:
            totals = np.bincount(self.query, weights=weights, minlength=self.num_queries)
        else:
            totals = np.bincount(
                self.query[where], weights=weights[where], minlength=self.num_queries
            )
        return totals.astype(np.float64, copy=False)

    def per_query_count(self, where: BoolArray) -> IntArray:
        """How many returned documents of each query satisfy ``where``."""
        return np.bincount(self.query[where], minlength=self.num_queries).astype(np.int64)

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
        starts = self.num_ret.cumsum() - self.num_ret
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
    sizes = [len(rankings.get(qid, ())) for qid in query_ids]
    total = sum(sizes)
    grade = np.zeros(total, dtype=np.int64)
    judged = np.zeros(total, dtype=bool)
    duplicates = np.zeros(count, dtype=np.int64)
    judged_query: list[int] = []
    judged_grade: list[int] = []
    position = 0
    for index, qid in enumerate(query_ids):
        judgments = qrels.get(qid, {})
        seen: set[str] = set()
        for doc in rankings.get(qid, ()):
            if doc in seen:
                duplicates[index] += 1
            else:
                seen.add(doc)
                found = judgments.get(doc)
                if found is not None:
                    grade[position] = found
                    judged[position] = True
            position += 1
        judged_query.extend([index] * len(judgments))
        judged_grade.extend(judgments.values())
    return RankTable.from_columns(
        query_ids,
        relevance_threshold,
        query=np.repeat(np.arange(count, dtype=np.int64), sizes),
        grade=grade,
        judged=judged,
        judged_query=np.array(judged_query, dtype=np.int64),
        judged_grade=np.array(judged_grade, dtype=np.int64),
        duplicates=duplicates,
    )
