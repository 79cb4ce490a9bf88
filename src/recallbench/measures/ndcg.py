"""Normalised discounted cumulative gain, with linear or exponential gains."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from recallbench.measures._measure import TREC_CUTOFFS, Measure, register
from recallbench.measures._table import FloatArray, IntArray, RankTable


@register
@dataclass(frozen=True)
class NDCG(Measure):
    """ndcg@k with the grade as gain.

    ``DCG@k = sum_{r=1..k} g(d_r) / log2(r + 1)``, ``nDCG@k = DCG@k / IDCG@k`` where IDCG@k
    is the DCG@k of the query's judged documents sorted by grade, and ``g`` is the grade
    (negative grades and unjudged documents gain 0). 0 when IDCG is 0. Gains do not depend on
    the relevance threshold. Matches trec_eval ``ndcg_cut.k`` and ranx ``ndcg``
    (Järvelin and Kekäläinen, "Cumulated gain-based evaluation of IR techniques", ACM TOIS
    20(4), 2002).
    """

    name = "ndcg"
    aliases: ClassVar[tuple[str, ...]] = ("ndcg_cut",)
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"ndcg": (), "ndcg_cut": TREC_CUTOFFS}
    summary = "DCG of the top k over the ideal DCG; gain = grade, discount 1/log2(rank+1)."

    def gain(self, grade: IntArray) -> FloatArray:
        return np.maximum(grade, 0).astype(np.float64)

    def compute(self, table: RankTable) -> FloatArray:
        in_top = table.rank < self.depth
        dcg = table.per_query_sum(self.gain(table.grade) / np.log2(table.rank + 2.0), in_top)
        ideal_in_top = table.judged_rank < self.depth
        discounted = self.gain(table.judged_grade) / np.log2(table.judged_rank + 2.0)
        idcg = np.bincount(
            table.judged_query[ideal_in_top],
            weights=discounted[ideal_in_top],
            minlength=table.num_queries,
        ).astype(np.float64, copy=False)
        return np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)


@register
@dataclass(frozen=True)
class NDCGExp(NDCG):
    """ndcg_exp@k: nDCG with exponential gain ``2^grade - 1``.

    As :class:`NDCG` but ``g(d) = 2^grade(d) - 1`` (Burges et al., "Learning to rank using
    gradient descent", ICML 2005), which rewards highly relevant documents more.
    """

    name = "ndcg_exp"
    aliases = ("ndcg-exp", "ndcg_burges")
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {}
    summary = "DCG of the top k over the ideal DCG; gain = 2^grade - 1, discount 1/log2(rank+1)."

    def gain(self, grade: IntArray) -> FloatArray:
        return np.exp2(np.maximum(grade, 0).astype(np.float64)) - 1.0
