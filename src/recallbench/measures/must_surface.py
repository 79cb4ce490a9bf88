"""Must-surface rate: the rules an agent must always see, seen."""

from __future__ import annotations

from dataclasses import dataclass

from recallbench.measures._context import (
    ContextMeasure,
    ContextValues,
    MemoryContext,
    mask,
    missing_from_top,
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

        found = missing_from_top(context, required, self.cutoff)
        return ContextValues(
            values=per_query(context, lambda qid: float(qid in found and not found[qid][1])),
            population=mask(context, lambda qid: qid in found),
            details={qid: missed for qid, (_, missed) in found.items() if missed},
        )
