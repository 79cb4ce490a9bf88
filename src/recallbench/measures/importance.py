"""Importance-weighted recall and precision by tier: important memories count for more."""

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


@register
@dataclass(frozen=True)
class ImportanceWeightedRecall(ContextMeasure):
    """iw_recall@k: recall in which each relevant memory counts its tier's weight.

    ``iw_recall@k(q) = sum_{d in R(q) ∩ top_k(q)} w(tier(d)) / sum_{d in R(q)} w(tier(d))``
    with R(q) the relevant memories and weights constitutional 4, critical 3, important 2,
    normal 1, temporary 0.5 (configurable: ``tier_weights`` in the dataset's metadata). A
    missed critical rule costs three times a missed note. Over the queries with a relevant
    memory; a query the run lacks scores 0.
    """

    name = "iw_recall"
    cutoff_required = True
    summary = (
        "Recall with each relevant memory weighted by its tier (constitutional 4, critical 3, "
        "important 2, normal 1, temporary 0.5)."
    )

    def compute_context(self, context: MemoryContext) -> ContextValues:
        weights = context.tier_weights

        def value(qid: str) -> float:
            relevant = context.relevant(qid)
            total = sum(weights[context.tier(d)] for d in relevant)
            if not total:
                return 0.0
            found = set(context.top(qid, self.cutoff))
            return sum(weights[context.tier(d)] for d in relevant if d in found) / total

        return ContextValues(values=per_query(context, value), population=context.answerable)


@dataclass(frozen=True)
class TierPrecision(ContextMeasure):
    """precision_TIER@k: of the memories of one tier in the top k, the share that is relevant.

    ``precision_T@k(q) = |R(q) ∩ top_k(q) ∩ T| / |top_k(q) ∩ T|`` over the queries whose top
    k holds at least one memory of tier T: precision stratified by importance, which shows
    for instance whether the temporary notes a system returns are ever useful.
    """

    tier = "normal"
    cutoff_required = True

    def compute_context(self, context: MemoryContext) -> ContextValues:
        def of_tier(qid: str) -> list[str]:
            return [d for d in context.top(qid, self.cutoff) if context.tier(d) == self.tier]

        def value(qid: str) -> float:
            returned = of_tier(qid)
            if not returned:
                return 0.0
            relevant = context.relevant(qid)
            return sum(1 for d in returned if d in relevant) / len(returned)

        return ContextValues(
            values=per_query(context, value), population=mask(context, lambda q: bool(of_tier(q)))
        )


def _tier_family(tier: str) -> type[TierPrecision]:
    summary = f"Of the {tier} memories in the top k, the share that is relevant."
    family = type(
        f"Precision{tier.title()}",
        (TierPrecision,),
        {
            "name": f"precision_{tier}",
            "tier": tier,
            "summary": summary,
            "__doc__": TierPrecision.__doc__,
        },
    )
    return register(dataclass(frozen=True)(family))


PRECISION_BY_TIER = {
    tier: _tier_family(tier)
    for tier in ("constitutional", "critical", "important", "normal", "temporary")
}
