"""Graded-gain helpers for trec_eval's experimental gain measures (G, ndcg_rel, Rndcg, rbp).

trec_eval's default gain of a document is its judged grade; unjudged documents, documents
with a negative grade (pooled but not judged) and repeats gain 0. The ideal ranking is every
judged document of the query sorted by grade, best first, followed by gain-0 positions. The
helpers give prefix sums within each query over both rankings, vectorised over all queries.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from recallbench.measures._table import FloatArray, IntArray, RankTable

NumberArray = npt.NDArray[np.int64] | npt.NDArray[np.float64]


def leading_sums(
    values: NumberArray, sizes: IntArray, group: IntArray, count: IntArray
) -> NumberArray:
    """Sum of the first ``count`` values of group ``group`` (``count`` clipped to the group's
    size), for values laid out group after group with ``sizes`` values each."""
    totals = np.concatenate((np.zeros(1, dtype=values.dtype), np.cumsum(values)))
    starts = (np.cumsum(sizes) - sizes)[group]
    taken = np.clip(count, 0, sizes[group])
    result: NumberArray = totals[starts + taken] - totals[starts]
    return result


def judged_sizes(table: RankTable) -> IntArray:
    """Per query: number of judgments (the length of its ideal ranking)."""
    return np.bincount(table.judged_query, minlength=table.num_queries).astype(np.int64)


def returned_gain(table: RankTable) -> IntArray:
    """Gain of every row (judged returned document): its grade, 0 when negative. Unjudged
    and repeated documents are not rows: they gain 0."""
    return np.maximum(table.grade, 0)


def ideal_gain(table: RankTable) -> IntArray:
    """Gain of every position of every query's ideal ranking (``judged_*`` order)."""
    return np.maximum(table.judged_grade, 0).astype(np.int64)


def discount(rank: IntArray) -> FloatArray:
    """``1 / log2(rank + 2)`` for a 0-based rank."""
    result: FloatArray = 1.0 / np.log2(rank + 2.0)
    return result


def dcg_through(table: RankTable, query: IntArray, count: IntArray) -> FloatArray:
    """DCG of the first ``count`` returned documents of each ``query``."""
    return table.sum_before(returned_gain(table) * discount(table.rank), query, count)


def ideal_dcg_through(table: RankTable, query: IntArray, count: IntArray) -> FloatArray:
    """DCG of the first ``count`` positions of each ``query``'s ideal ranking."""
    gains = ideal_gain(table) * discount(table.judged_rank)
    return leading_sums(gains, judged_sizes(table), query, count).astype(np.float64)


def positive_judged(table: RankTable) -> IntArray:
    """Per query: judged documents with a positive grade (positive gain)."""
    chosen = table.judged_grade > 0
    return np.bincount(table.judged_query[chosen], minlength=table.num_queries).astype(np.int64)
