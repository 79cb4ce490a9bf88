"""trec_eval's experimental gain measures G and binG (Buckley, 2008): MAP-like averages whose
discount grows with the gain lost before each document, not with its rank."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from recallbench.core import UnknownMeasureError
from recallbench.measures._gains import (
    ideal_gain,
    judged_sizes,
    leading_sums,
    returned_gain,
)
from recallbench.measures._measure import Measure, register
from recallbench.measures._table import FloatArray, RankTable
from recallbench.measures._trec_extra import kinds


@dataclass(frozen=True)
class _WholeRanking(Measure):
    """A measure of the whole ranking, without cutoff or parameters."""

    cutoff_allowed = False

    def definition(self) -> str:
        return f"{self.summary} Computed over the whole ranking."

    @classmethod
    def from_trec_argument(cls, argument: str) -> Measure:
        trec_name = next(iter(cls.trec_names), cls.name)
        raise UnknownMeasureError(
            f"trec_eval measure {trec_name}.{argument}: recallbench supports {trec_name} "
            "without parameters only (its gains are the grades)"
        )


@register
@dataclass(frozen=True)
class BinaryGain(_WholeRanking):
    """binG: mean over relevant documents of 1 / log2(2 + non-relevant documents above it).

    ``binG = (1/R) * sum_{d relevant returned} 1 / log2(2 + n_d)`` where n_d counts the
    documents ranked above d that are not relevant (unjudged ones included) and R is the
    number of relevant judged documents; relevant documents not returned add 0, and binG is
    0 when none was returned (trec_eval ``binG``, an experimental measure by C. Buckley,
    2008; discount after Järvelin and Kekäläinen, ACM TOIS 20(4), 2002).
    """

    name = "binG"
    aliases = ("bin_g", "binary_gain")
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"binG": ()}
    summary = "Mean over relevant documents of 1/log2(2 + non-relevant documents ranked above it)."

    def compute(self, table: RankTable) -> FloatArray:
        relevant = kinds(table).relevant
        nonrelevant_above = table.rank + 1 - table.running_count(relevant)
        total = table.per_query_sum(1.0 / np.log2(2.0 + nonrelevant_above), where=relevant)
        return np.divide(total, table.num_rel, out=np.zeros_like(total), where=table.num_rel > 0)


@register
@dataclass(frozen=True)
class NormalizedGain(_WholeRanking):
    """G: normalised gain, each document's gain discounted by the gain lost before it.

    With gain g = grade (0 for unjudged documents and negative grades), ideal gains g*_1 >=
    g*_2 >= ... (the judged grades sorted, then 0), ``cost_i = sum_{j<=i} max(g*_j, 1)`` and
    ``got_i = sum_{j<=i} g_j`` over the ranking: ``G = sum_i g_i / log2(2 + cost_i - got_i)``
    divided by the total ideal gain ``sum_j g*_j``; 0 when that is 0. The relevance level
    plays no part (trec_eval ``G``, an experimental measure by C. Buckley, 2008, combining
    MAP and nDCG; Järvelin and Kekäläinen, ACM TOIS 20(4), 2002).
    """

    name = "G"
    aliases = ("normalized_gain", "trec_g")
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"G": ()}
    summary = (
        "Sum of each document's gain over log2(2 + ideal gain so far - gain so far), divided "
        "by the total ideal gain; gain = grade."
    )

    def compute(self, table: RankTable) -> FloatArray:
        gain = returned_gain(table)
        best = ideal_gain(table)
        got = table.sum_before(gain, table.query, table.rank + 1)
        # Every ideal position costs max(g*, 1): one per position, plus g* - 1 where g* > 1.
        excess = leading_sums(
            np.maximum(best - 1, 0), judged_sizes(table), table.query, table.rank + 1
        )
        cost = table.rank + 1 + excess
        counted = gain != 0
        terms = np.zeros(len(gain))
        terms[counted] = gain[counted] / np.log2(2.0 + cost[counted] - got[counted])
        total = table.per_query_sum(terms)
        ideal = np.bincount(
            table.judged_query, weights=best.astype(np.float64), minlength=table.num_queries
        ).astype(np.float64)
        return np.divide(total, ideal, out=np.zeros_like(total), where=ideal > 0)
