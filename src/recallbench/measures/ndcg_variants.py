"""nDCG averaged over points instead of read at one cutoff: at each relevant document
(ndcg_rel) and at each change of the ideal gain (Rndcg), trec_eval's experimental variants."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from recallbench.measures._gains import ideal_gain, judged_sizes, positive_judged, returned_gain
from recallbench.measures._measure import register
from recallbench.measures._table import FloatArray, IntArray, RankTable
from recallbench.measures.gain import _WholeRanking


def _running_sums(values: FloatArray, group: IntArray) -> FloatArray:
    """Each value's running sum within its group (groups contiguous), added left to right as
    trec_eval's ``dcg += gain / log2(rank + 2)`` does. A cumulative sum over all groups less
    the sum before the group differs in the last bits.

    Column k holds the k-th value of every group that long, groups longest first, so the
    groups reaching column k are a prefix of those reaching column k - 1: one vector addition
    per column (as many as the longest group has values).
    """
    total = len(values)
    if total == 0:
        return np.zeros(0)
    opens = np.flatnonzero(np.concatenate(([True], group[1:] != group[:-1])))
    sizes = np.diff(np.append(opens, total))
    position = np.arange(total) - np.repeat(opens, sizes)
    longest_first = np.empty(len(sizes), dtype=np.int64)
    longest_first[np.argsort(-sizes, kind="stable")] = np.arange(len(sizes))
    order = np.lexsort((np.repeat(longest_first, sizes), position))
    ordered = values[order]
    reach = np.bincount(position)
    bounds = np.concatenate(([0], np.cumsum(reach)))
    sums = ordered.copy()
    for k in range(1, len(reach)):
        previous = sums[bounds[k - 1] : bounds[k - 1] + reach[k]]
        sums[bounds[k] : bounds[k + 1]] += previous
    result = np.empty(total)
    result[order] = sums
    return result


def _ratio(numerator: FloatArray, denominator: FloatArray) -> FloatArray:
    return np.divide(numerator, denominator, out=np.zeros_like(numerator), where=denominator > 0)


def _log2_after(rank: IntArray) -> FloatArray:
    """``log2(rank + 2)`` for 0-based ranks, by the C library's log2 as in trec_eval (numpy's
    vectorised log2 differs from it in the last bit for some numbers, the first 1621)."""
    logs = np.array([math.log2(float(k + 2)) for k in range(int(rank.max(initial=-1)) + 1)])
    result: FloatArray = logs[rank]
    return result


class _Sums:
    """The running DCG of every query's ranking (at its documents with positive gain) and of
    its ideal ranking (at its positions with positive gain), in trec_eval's order."""

    def __init__(self, table: RankTable) -> None:
        gain = returned_gain(table)
        hits = gain > 0
        self.query = table.query[hits]
        self.rank = table.rank[hits]
        # gain / log2(rank + 2), divided (not multiplied by a reciprocal) as trec_eval does
        self.dcg = _running_sums(gain[hits] / _log2_after(self.rank), self.query)
        self.hits = np.bincount(self.query, minlength=table.num_queries).astype(np.int64)
        self.hit_starts = np.cumsum(self.hits) - self.hits
        positive = table.judged_grade > 0  # the first positions (best grade first)
        self.ideal = _running_sums(
            table.judged_grade[positive] / _log2_after(table.judged_rank[positive]),
            table.judged_query[positive],
        )
        self.num_positive = positive_judged(table)
        self.ideal_starts = np.cumsum(self.num_positive) - self.num_positive
        self.width = int(self.rank.max(initial=0)) + 2

    def dcg_before(self, query: IntArray, cutoff: IntArray) -> FloatArray:
        """DCG of the ranks below ``cutoff`` of each ``query``."""
        keys = self.query * self.width + self.rank
        ends = np.searchsorted(keys, query * self.width + np.minimum(cutoff, self.width - 1))
        some = ends > self.hit_starts[query]
        result = np.zeros(len(query))
        result[some] = self.dcg[ends[some] - 1]
        return result

    def ideal_through(self, query: IntArray, cutoff: IntArray) -> FloatArray:
        """Ideal DCG of the first ``cutoff`` positions of each ``query`` (cutoff >= 1 and
        the query has a position with positive gain)."""
        last = np.minimum(cutoff, self.num_positive[query]) - 1
        result: FloatArray = self.ideal[self.ideal_starts[query] + last]
        return result

    def whole(self) -> tuple[FloatArray, FloatArray]:
        """Per query: DCG of the whole ranking, and ideal DCG (0 without positive gain)."""
        dcg, ideal = np.zeros(len(self.hits)), np.zeros(len(self.hits))
        some = self.hits > 0
        dcg[some] = self.dcg[(self.hit_starts + self.hits - 1)[some]]
        some = self.num_positive > 0
        ideal[some] = self.ideal[(self.ideal_starts + self.num_positive - 1)[some]]
        return dcg, ideal


@register
@dataclass(frozen=True)
class NDCGRel(_WholeRanking):
    """ndcg_rel: nDCG averaged over the ranks of the documents with positive gain.

    With gain = grade (0 for unjudged documents and negative grades), nDCG@k = DCG@k /
    IDCG@k where IDCG@k is the DCG of the first k of the judged documents sorted by grade.
    ``ndcg_rel = (1/N) * (sum_{d returned, gain > 0} nDCG@rank(d) + (N - n) * nDCG@|ret|)``
    where N counts the judged documents with positive gain, n those returned, and each one
    not returned scores the nDCG of the whole ranking; 0 when N = 0. The relevance level
    plays no part (trec_eval ``ndcg_rel``, an experimental measure by C. Buckley, 2008;
    Järvelin and Kekäläinen, ACM TOIS 20(4), 2002).
    """

    name = "ndcg_rel"
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"ndcg_rel": ()}
    summary = (
        "nDCG averaged over the ranks of the documents with positive gain (those not "
        "returned score the nDCG of the whole ranking); gain = grade."
    )

    def compute(self, table: RankTable) -> FloatArray:
        # m_ndcg_rel.c's arithmetic: running sums (see _Sums), the ratios at the documents
        # with positive gain added in rank order, then (N - n) * dcg / idcg at once.
        sums = _Sums(table)
        ratios = sums.dcg / sums.ideal_through(sums.query, sums.rank + 1)
        total = np.bincount(sums.query, weights=ratios, minlength=table.num_queries).astype(float)
        dcg, ideal = sums.whole()
        missed = (sums.num_positive - sums.hits).astype(np.float64)
        total = total + _ratio(missed * dcg, ideal)
        result: FloatArray = np.divide(
            total, sums.num_positive, out=np.zeros_like(total), where=total > 0
        )
        return result


@register
@dataclass(frozen=True)
class RNDCG(_WholeRanking):
    """rndcg: nDCG averaged over the cutoffs where the ideal gain changes ("R levels").

    With gain = grade, the cutoffs are c_1 < c_2 < ... < c_m, the number of judged documents
    with grade >= each positive grade present (so c_m = N, the judged documents with
    positive gain). ``Rndcg = mean(nDCG@c_1, ..., nDCG@c_m[, nDCG@|ret|])``, the last point
    only when at least N + 2 documents were returned; nDCG@c uses the DCG of the first
    min(c, |ret|) returned documents over the ideal DCG@c. 0 when the query has no relevant
    document (trec_eval ``Rndcg``, an experimental measure by C. Buckley, 2008; Järvelin and
    Kekäläinen, ACM TOIS 20(4), 2002).
    """

    name = "rndcg"
    aliases = ("r_ndcg",)
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"Rndcg": ()}
    summary = (
        "nDCG averaged at each cutoff where the ideal gain drops (the R levels of every "
        "grade), and at the end of a longer ranking; gain = grade."
    )

    def compute(self, table: RankTable) -> FloatArray:
        best = ideal_gain(table)
        sizes = judged_sizes(table)
        # The last judged document of each positive grade closes an R level.
        following = np.append(best[1:], 0)
        last_of_query = table.judged_rank == sizes[table.judged_query] - 1
        closes = (best > 0) & ((following != best) | last_of_query)
        query = table.judged_query[closes]
        cutoff = table.judged_rank[closes] + 1
        # m_Rndcg.c's arithmetic: running sums (see _Sums), the levels' ratios added in
        # order, then the whole ranking's.
        sums = _Sums(table)
        points = sums.dcg_before(query, cutoff) / sums.ideal_through(query, cutoff)
        total = np.bincount(query, weights=points, minlength=table.num_queries).astype(float)
        count = np.bincount(query, minlength=table.num_queries).astype(np.float64)
        # trec_eval adds the whole ranking's nDCG when it runs at least 2 past the last
        # positive ideal gain.
        longer = (table.num_ret >= sums.num_positive + 2) & (count > 0)
        dcg, ideal = sums.whole()
        total += np.where(longer, _ratio(dcg, ideal), 0.0)
        count += longer
        values = _ratio(total, count)
        values[table.num_rel == 0] = 0.0
        return values
