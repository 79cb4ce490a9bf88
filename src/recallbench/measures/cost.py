"""What results cost an agent: tokens read, tokens saved, noise, and repeats.

Tokens are estimated with a stated rule, ``ceil(characters / 4)`` over a memory's title and
text (the usual average for English with GPT-style tokenizers; OpenAI, "What are tokens
and how to count them"), so that numbers are reproducible without a tokenizer download.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from recallbench.measures._context import (
    ContextMeasure,
    ContextValues,
    MemoryContext,
    mask,
    per_query,
)
from recallbench.measures._measure import register

CHARACTERS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """``ceil(len(text) / 4)``: the stated rule (see the module docstring)."""
    return math.ceil(len(text) / CHARACTERS_PER_TOKEN)


def memory_tokens(context: MemoryContext, doc_id: str) -> int:
    document = context.documents.get(doc_id)
    if document is None:
        return 0
    return estimate_tokens(
        f"{document.title}\n{document.text}" if document.title else document.text
    )


def _answered(context: MemoryContext, qid: str) -> bool:
    return qid in context.rankings


@register
@dataclass(frozen=True)
class Tokens(ContextMeasure):
    """tokens@k: estimated tokens of the top-k memories an agent would read,
    ``sum_{d in top_k(q)} ceil(chars(d) / 4)``. Over the queries the system answered
    (abstention queries included: returning nothing is cheapest there). Lower is cheaper."""

    name = "tokens"
    cutoff_required = True
    higher_is_better = False
    summary = "Estimated tokens of the top-k memories (ceil(characters / 4))."

    def compute_context(self, context: MemoryContext) -> ContextValues:
        return ContextValues(
            values=per_query(
                context,
                lambda qid: float(
                    sum(memory_tokens(context, d) for d in context.top(qid, self.cutoff))
                ),
            ),
            population=mask(context, lambda qid: _answered(context, qid)),
        )


@register
@dataclass(frozen=True)
class TokenSaving(ContextMeasure):
    """token_saving@k: ``1 - tokens@k / tokens(haystack)``, the share of tokens saved against
    giving the agent every memory it could have been given (the corpus, or the query's unit
    for datasets with units). Over the queries the system answered."""

    name = "token_saving"
    cutoff_required = True
    summary = "1 - tokens of the top k / tokens of the whole corpus (or unit)."

    def compute_context(self, context: MemoryContext) -> ContextValues:
        cache: dict[str | None, int] = {}

        def haystack(qid: str) -> int:
            unit = context.queries[qid].unit if context.dataset.units else None
            if unit not in cache:
                ids = context.dataset.units.get(unit, ()) if unit else context.documents
                cache[unit] = sum(memory_tokens(context, d) for d in ids)
            return cache[unit]

        def value(qid: str) -> float:
            total = haystack(qid)
            spent = sum(memory_tokens(context, d) for d in context.top(qid, self.cutoff))
            return 1 - spent / total if total else 0.0

        return ContextValues(
            values=per_query(context, value),
            population=mask(context, lambda qid: _answered(context, qid)),
        )


@register
@dataclass(frozen=True)
class Noise(ContextMeasure):
    """noise@k: the share of the top-k results outside the query's judged pool (neither
    relevant nor judged irrelevant: unknown to the dataset), over the queries with a result.
    High noise means the numbers rest on unjudged results: judge them, or read the
    measures as lower bounds."""

    name = "noise"
    cutoff_required = True
    higher_is_better = False
    summary = "Share of the top-k results that are unjudged (outside the judged pool)."

    def compute_context(self, context: MemoryContext) -> ContextValues:
        def value(qid: str) -> float:
            top = context.top(qid, self.cutoff)
            judged = context.dataset.qrels.get(qid, {})
            return sum(1 for d in top if d not in judged) / len(top) if top else 0.0

        return ContextValues(
            values=per_query(context, value),
            population=mask(context, lambda qid: bool(context.top(qid, self.cutoff))),
        )


_WORDS = re.compile(r"\w+")


@register
@dataclass(frozen=True)
class DedupSaving(ContextMeasure):
    """dedup_saving@k: the share of the tokens in the first k results that de-duplication
    would save: results repeating an earlier one (the same id, or the same text once
    lower-cased and reduced to words). 0: no repeats. Over the queries with a result."""

    name = "dedup_saving"
    cutoff_required = True
    higher_is_better = False
    summary = "Share of the top-k tokens spent on repeated results (same id or same text)."

    def compute_context(self, context: MemoryContext) -> ContextValues:
        def value(qid: str) -> float:
            returned = list(context.rankings.get(qid, ()))[: self.cutoff]
            seen: set[str] = set()
            total = wasted = 0
            for doc in returned:
                document = context.documents.get(doc)
                key = " ".join(_WORDS.findall(document.text.lower())) if document else doc
                tokens = memory_tokens(context, doc)
                total += tokens
                if doc in seen or key in seen:
                    wasted += tokens
                seen.update((doc, key))
            return wasted / total if total else 0.0

        return ContextValues(
            values=per_query(context, value),
            population=mask(context, lambda qid: bool(context.rankings.get(qid))),
        )
