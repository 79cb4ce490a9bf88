"""Causal chain completeness: does a decision come back with the reasons behind it?"""

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

        missed = {
            qid: tuple(d for d in chain(qid) if d not in set(context.top(qid, self.cutoff)))
            for qid in context.query_ids
            if chain(qid)
        }
        return ContextValues(
            values=per_query(
                context,
                lambda qid: 1 - len(missed[qid]) / len(chain(qid)) if qid in missed else 0.0,
            ),
            population=mask(context, lambda qid: qid in missed),
            details={qid: items for qid, items in missed.items() if items},
        )
