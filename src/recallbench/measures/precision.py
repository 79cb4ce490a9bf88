"""Precision at k."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from recallbench.measures._measure import TREC_CUTOFFS, Measure, register
from recallbench.measures._table import FloatArray, RankTable


@register
@dataclass(frozen=True)
class Precision(Measure):
    """P@k: the share of the top k ranks that hold a relevant document.

    ``P@k = |{relevant documents at ranks 1..k}| / k``. The denominator is k even when the
    system returned fewer than k documents (trec_eval ``P.k``; Manning, Raghavan and
    Schütze, *Introduction to Information Retrieval*, 2008, §8.4).
    """

    name = "P"
    aliases = ("precision", "p")
    cutoff_required = True
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"P": TREC_CUTOFFS}
    summary = "Relevant documents in the top k divided by k (k even when fewer were returned)."

    def compute(self, table: RankTable) -> FloatArray:
        assert self.cutoff is not None  # guaranteed by cutoff_required
        hits = table.relevant & (table.rank < self.cutoff)
        return table.per_query_sum(1.0, where=hits) / self.cutoff
