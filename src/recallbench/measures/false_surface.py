"""Abstention: how often a system surfaces memories for a question memory cannot answer."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recallbench.measures._measure import Measure, register
from recallbench.measures._table import FloatArray, RankTable


@register
@dataclass(frozen=True)
class FalseSurface(Measure):
    """false_surface: over the questions whose answer is not in memory (no relevant
    memory judged: LongMemEval's ``_abs`` questions, the bundled dataset's abstention
    queries), the share for which the system returned anything. Lower is better.

    ``false_surface = |{q in U : |returned(q)| > 0}| / |U|``, U = the queries without a
    relevant document. A system with a relevance threshold of its own returns nothing
    below it, so this is the rate at which its threshold lets something through; a
    system without one always scores 1. (LongMemEval's abstention questions, Wu et al.
    ICLR 2025, §3; the measure is recallbench's.) It is averaged over U only, never over
    the answerable queries that the ranking measures average over.
    """

    name = "false_surface"
    kind = "exact"
    aliases = ("abstention_error",)
    cutoff_allowed = False
    population = "unanswerable"
    higher_is_better = False
    summary = "Share of questions with no answer in memory for which anything was returned."

    def compute(self, table: RankTable) -> FloatArray:
        return (table.num_ret > 0).astype(np.float64)
