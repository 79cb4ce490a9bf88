"""Must-surface rate: the rules an agent must always see, seen."""

from __future__ import annotations

from dataclasses import dataclass

from recallbench.measures._context import (
    ContextMeasure,
    ContextValues,
    MemoryContext,
    mask,
    per_query,
)
from recallbench.measures._measure import register

MUST_SURFACE_TIER = "constitutional"


@register
@dataclass(frozen=True)
class MustSurface(ContextMeasure):
    """must_surface@k: whether every must-surface memory of the query is in the top k.

    The must-surface memories of a query are its relevant memories (grade >= the threshold)
    of tier ``constitutional``: the rules an agent must never act without.
    ``must_surface@k(q) = 1 if M(q) ⊆ top_k(q) else 0``, averaged over the queries with
    M(q) non-empty; the report lists the memories each query missed. The evaluation design
    asks for 100% at k = 5: one missed rule is one wrong action.
    """

    name = "must_surface"
    kind = "exact"
    cutoff_required = True
    summary = (
        "Share of queries whose relevant constitutional (must-surface) memories all appear "
        "in the top k."
    )

    def compute_context(self, context: MemoryContext) -> ContextValues:
        def required(qid: str) -> list[str]:
            return [d for d in context.relevant(qid) if context.tier(d) == MUST_SURFACE_TIER]

        missed = {
            qid: tuple(d for d in required(qid) if d not in set(context.top(qid, self.cutoff)))
            for qid in context.query_ids
            if required(qid)
        }
        return ContextValues(
            values=per_query(context, lambda qid: float(not missed.get(qid))),
            population=mask(context, lambda qid: qid in missed),
            details={qid: items for qid, items in missed.items() if items},
        )
