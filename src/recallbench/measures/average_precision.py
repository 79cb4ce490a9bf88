"""Average precision (MAP once averaged), optionally cut at k."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from recallbench.measures._measure import TREC_CUTOFFS, Measure, register
from recallbench.measures._table import FloatArray, RankTable


@register
@dataclass(frozen=True)
class AveragePrecision(Measure):
    """map / map@k: mean of the precision at the rank of each relevant document.

    ``AP@k = (1/R) * sum_{r <= k, d_r relevant} P@r`` with R the number of relevant
    documents of the query (not min(R, k)), 0 when R = 0; relevant documents not retrieved
    contribute 0 (trec_eval ``map`` and ``map_cut.k``; Buckley and Voorhees, "Retrieval
    System Evaluation", in *TREC: Experiment and Evaluation in IR*, 2005).
    """

    name = "map"
    aliases = ("ap", "map_cut")
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"map": (), "map_cut": TREC_CUTOFFS}
    summary = (
        "Mean over the query's relevant documents of the precision at each one's rank "
        "(0 for those not in the top k)."
    )

    def compute(self, table: RankTable) -> FloatArray:
        counted = table.relevant & (table.rank < self.depth)
        precision_at_hit = table.running_count(counted) / (table.rank + 1.0)
        total = table.per_query_sum(precision_at_hit, where=counted)
        return np.divide(total, table.num_rel, out=np.zeros_like(total), where=table.num_rel > 0)
