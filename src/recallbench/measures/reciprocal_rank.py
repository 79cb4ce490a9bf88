"""Reciprocal rank, cut at k (MRR@k once averaged)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from recallbench.measures._measure import Measure, register
from recallbench.measures._table import FloatArray, RankTable


@register
@dataclass(frozen=True)
class ReciprocalRank(Measure):
    """mrr@k: one over the rank of the first relevant document, 0 if none is in the top k.

    ``RR@k = 1 / min{r <= k : d_r relevant}``; the mean over queries is MRR (Voorhees,
    "The TREC-8 Question Answering Track Report", 1999). Equals trec_eval's
    ``recip_rank`` run with ``-M k``; without a cutoff it is ``recip_rank``.
    """

    name = "mrr"
    aliases = ("rr", "recip_rank", "reciprocal_rank")
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"recip_rank": ()}
    summary = "One over the rank of the first relevant document (0 when none is in the top k)."

    def compute(self, table: RankTable) -> FloatArray:
        first = table.first_rank(table.relevant & (table.rank < self.depth))
        return 1.0 / (first + 1.0)
