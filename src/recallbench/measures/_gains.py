"""Graded-gain helpers for trec_eval's experimental gain measures (G, ndcg_rel, Rndcg, rbp).

trec_eval's default gain of a document is its judged grade; unjudged documents, documents
with a negative grade (pooled but not judged) and repeats gain 0. The ideal ranking is every
judged document of the query sorted by grade, best first, followed by gain-0 positions. The
helpers give each row's gain over both rankings and prefix sums within each query,
vectorised over all queries.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from recallbench.measures._table import IntArray, RankTable

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


def positive_judged(table: RankTable) -> IntArray:
    """Per query: judged documents with a positive grade (positive gain)."""
    chosen = table.judged_grade > 0
    return np.bincount(table.judged_query[chosen], minlength=table.num_queries).astype(np.int64)
