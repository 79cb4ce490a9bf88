"""Abstention: how often a system surfaces memories for a question memory cannot answer."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recallbench.measures._context import ContextMeasure, ContextValues, MemoryContext, mask
from recallbench.measures._measure import register
from recallbench.measures._table import FloatArray, RankTable


@register
@dataclass(frozen=True)
class FalseSurface(ContextMeasure):
    """false_surface: over the questions the dataset marks unanswerable (``answerable:
    false`` or the tag ``abstention``: LongMemEval's ``_abs`` questions, LoCoMo's
    adversarial ones, the bundled dataset's abstention queries), the share for which the
    system returned anything. Lower is better.

    ``false_surface = |{q in U : |returned(q)| > 0}| / |U|``, U = the queries marked
    unanswerable. A query without a relevant judgment that is not marked (LoCoMo's four
    answerable questions that lack evidence) is not in U: it counts as "no relevant
    judgments", outside every mean. A system with a relevance threshold of its own returns
    nothing below it, so this is the rate at which its threshold lets something through; a
    system without one always scores 1. (LongMemEval's abstention questions, Wu et al.
    ICLR 2025, §3; the measure is recallbench's.) It is averaged over U only, never over
    the answerable queries that the ranking measures average over.

    On judgments alone (``recallbench evaluate``: a qrels file cannot mark a question),
    U is the queries without a relevant document.
    """

    name = "false_surface"
    kind = "exact"
    aliases = ("abstention_error",)
    cutoff_allowed = False
    population = "unanswerable"
    higher_is_better = False
    summary = "Share of questions marked unanswerable for which anything was returned."

    def compute(self, table: RankTable) -> FloatArray:
        return (table.num_ret > 0).astype(np.float64)

    def compute_context(self, context: MemoryContext) -> ContextValues:
        values = [float(bool(context.rankings.get(qid))) for qid in context.query_ids]
        return ContextValues(
            values=np.array(values, dtype=np.float64),
            population=mask(context, lambda qid: context.queries[qid].unanswerable),
        )
