"""nDCG averaged over points instead of read at one cutoff: at each relevant document
(ndcg_rel) and at each change of the ideal gain (Rndcg), trec_eval's experimental variants."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from recallbench.measures._gains import (
    dcg_through,
    ideal_dcg_through,
    ideal_gain,
    judged_sizes,
    positive_judged,
    returned_gain,
)
from recallbench.measures._measure import register
from recallbench.measures._table import FloatArray, RankTable
from recallbench.measures.gain import _WholeRanking


def _ratio(numerator: FloatArray, denominator: FloatArray) -> FloatArray:
    return np.divide(numerator, denominator, out=np.zeros_like(numerator), where=denominator > 0)


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
        gain = returned_gain(table)
        hits = gain > 0
        query = table.query[hits]
        through = table.rank[hits] + 1
        at_hits = dcg_through(table, query, through) / ideal_dcg_through(table, query, through)
        total = np.bincount(query, weights=at_hits, minlength=table.num_queries).astype(np.float64)
        everyone = np.arange(table.num_queries)
        positive = positive_judged(table)
        whole = _ratio(
            dcg_through(table, everyone, table.num_ret),
            ideal_dcg_through(table, everyone, judged_sizes(table)),
        )
        missed = positive - np.bincount(query, minlength=table.num_queries)
        total += missed * whole
        return _ratio(total, positive.astype(np.float64))


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
        points = dcg_through(table, query, cutoff) / ideal_dcg_through(table, query, cutoff)
        total = np.bincount(query, weights=points, minlength=table.num_queries).astype(np.float64)
        count = np.bincount(query, minlength=table.num_queries).astype(np.float64)
        # trec_eval adds the whole ranking's nDCG when it runs at least 2 past the last
        # positive ideal gain.
        everyone = np.arange(table.num_queries)
        longer = table.num_ret >= positive_judged(table) + 2
        whole = _ratio(
            dcg_through(table, everyone, table.num_ret),
            ideal_dcg_through(table, everyone, sizes),
        )
        total += np.where(longer & (count > 0), whole, 0.0)
        count += longer & (count > 0)
        values = _ratio(total, count)
        values[table.num_rel == 0] = 0.0
        return values
