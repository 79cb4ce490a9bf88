"""Cold start: how well a system answers the first query of a session, with no history."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recallbench.measures._context import ContextMeasure, ContextValues, MemoryContext, per_query
from recallbench.measures._measure import register

COLD_START_TARGET = 0.70


def _reciprocal_rank(context: MemoryContext, qid: str, k: int | None) -> float:
    relevant = context.relevant(qid)
    for rank, doc in enumerate(context.top(qid, k), start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


@dataclass(frozen=True)
class _SessionMRR(ContextMeasure):
    cold_queries = True
    cutoff_required = True

    def compute_context(self, context: MemoryContext) -> ContextValues:
        chosen = context.cold if self.cold_queries else ~context.cold
        return ContextValues(
            values=per_query(context, lambda qid: _reciprocal_rank(context, qid, self.cutoff)),
            population=chosen & context.answerable,
        )


@register
@dataclass(frozen=True)
class ColdMRR(_SessionMRR):
    """mrr_cold@k: MRR@k over cold-start queries: those tagged ``cold-start`` or
    ``first-in-session``, or the first query of their session (dataset order)."""

    name = "mrr_cold"
    summary = "MRR over cold-start queries (tagged, or first of their session)."


@register
@dataclass(frozen=True)
class WarmMRR(_SessionMRR):
    """mrr_warm@k: MRR@k over the other (warm) queries."""

    name = "mrr_warm"
    cold_queries = False
    summary = "MRR over warm queries (not the first of their session)."


@register
@dataclass(frozen=True)
class ColdStartRatio(ContextMeasure):
    """cold_start_ratio@k = mrr_cold@k / mrr_warm@k: how much of its warm quality a system
    keeps without history (the evaluation design's target: >= 0.70). An aggregate only:
    no per-query value; undefined when either population is empty or warm MRR is 0."""

    name = "cold_start_ratio"
    cutoff_required = True
    summary = "Cold-start MRR divided by warm MRR (target >= 0.70)."

    def compute_context(self, context: MemoryContext) -> ContextValues:
        rr = per_query(context, lambda qid: _reciprocal_rank(context, qid, self.cutoff))
        cold = rr[context.cold & context.answerable]
        warm = rr[~context.cold & context.answerable]
        ratio = None
        if len(cold) and len(warm) and warm.mean() > 0:
            ratio = float(cold.mean() / warm.mean())
        return ContextValues(
            values=np.full(len(rr), np.nan),
            population=np.zeros(len(rr), dtype=bool),
            aggregate=ratio if ratio is not None else float("nan"),
        )
