"""Hit rate at k (success at k)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from recallbench.measures._measure import Measure, register
from recallbench.measures._table import FloatArray, RankTable


@register
@dataclass(frozen=True)
class HitRate(Measure):
    """hit@k: 1 when at least one relevant document is in the top k, else 0.

    ``hit@k = 1[exists r <= k : d_r relevant]`` (trec_eval ``success.k``). Often reported
    as "recall" by memory benchmarks; it is not recall (it ignores how many were found).
    """

    name = "hit"
    kind = "exact"
    aliases = ("success", "hit_rate")
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"success": ("1", "5", "10")}
    summary = "1 when a relevant document is in the top k, else 0."

    def compute(self, table: RankTable) -> FloatArray:
        first = table.first_rank(table.relevant & (table.rank < self.depth))
        return np.isfinite(first).astype(np.float64)
