"""Causal chain completeness: does a decision come back with the reasons behind it?"""

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

CHAIN_TARGET = 0.60


@register
@dataclass(frozen=True)
class ChainCompleteness(ContextMeasure):
    """chain_completeness@k: for a decision query naming a chain in the dataset's ``chains``
    (the incident or discussion behind a decision, the decision, its follow-ups), the share
    of the chain's memories in the top k.

    ``chain_completeness@k(q) = |C(q) ∩ top_k(q)| / |C(q)|`` over the queries with a chain;
    the report lists the members each query missed. Target (the evaluation design): > 0.60.
    """

    name = "chain_completeness"
    cutoff_required = True
    summary = "Share of the decision chain's memories found in the top k (decision queries)."

    def compute_context(self, context: MemoryContext) -> ContextValues:
        chains = context.dataset.chains

        def chain(qid: str) -> tuple[str, ...]:
            name = context.queries[qid].chain
            return chains.get(name, ()) if name else ()

        found = missing_from_top(context, chain, self.cutoff)

        def value(qid: str) -> float:
            if qid not in found:
                return 0.0
            members, missed = found[qid]
            return 1 - len(missed) / len(members)

        return ContextValues(
            values=per_query(context, value),
            population=mask(context, lambda qid: qid in found),
            details={qid: missed for qid, (_, missed) in found.items() if missed},
        )
