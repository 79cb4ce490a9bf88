"""Relative precision at k: precision at k over the best precision possible at k."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from recallbench.measures._measure import TREC_CUTOFFS, Measure, register
from recallbench.measures._table import FloatArray, RankTable
from recallbench.measures._trec_extra import kinds


@register
@dataclass(frozen=True)
class RelativePrecision(Measure):
    """relative_P@k: relevant documents in the top k over the most the top k could hold.

    ``relative_P@k = |relevant at ranks 1..k| / min(k, R)`` with R the query's relevant
    judged documents: precision at k while k <= R, recall at k beyond; 0 when R = 0
    (trec_eval ``relative_P.k``; Buckley and Voorhees, "Retrieval System Evaluation", in
    *TREC: Experiment and Evaluation in IR*, 2005).
    """

    name = "relative_P"
    aliases = ("relative_precision", "rel_P")
    cutoff_required = True
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"relative_P": TREC_CUTOFFS}
    summary = "Relevant documents in the top k divided by min(k, number of relevant documents)."

    def compute(self, table: RankTable) -> FloatArray:
        assert self.cutoff is not None  # guaranteed by cutoff_required
        found = table.per_query_sum(1.0, where=kinds(table).relevant & (table.rank < self.cutoff))
        best = np.minimum(table.num_rel, self.cutoff).astype(np.float64)
        return np.divide(found, best, out=np.zeros_like(found), where=best > 0)
