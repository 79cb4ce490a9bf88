"""Recall at k."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from recallbench.measures._measure import TREC_CUTOFFS, Measure, register
from recallbench.measures._table import FloatArray, RankTable


@register
@dataclass(frozen=True)
class Recall(Measure):
    """recall@k: the share of the query's relevant documents found in the top k.

    ``recall@k = |{relevant documents at ranks 1..k}| / R`` with R the number of judged
    documents whose grade reaches the relevance threshold; 0 when R = 0 (trec_eval
    ``recall.k``; Manning et al., *Introduction to Information Retrieval*, 2008, §8.3).
    Without a cutoff: over the whole ranking.
    """

    name = "recall"
    aliases = ("r",)
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"recall": TREC_CUTOFFS}
    summary = "Relevant documents in the top k divided by all relevant documents of the query."

    def compute(self, table: RankTable) -> FloatArray:
        found = table.per_query_sum(1.0, where=table.relevant & (table.rank < self.depth))
        return np.divide(found, table.num_rel, out=np.zeros_like(found), where=table.num_rel > 0)
