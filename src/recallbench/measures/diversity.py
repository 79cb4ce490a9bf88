"""Diversity of a result list: how many results come from the same folder."""

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
class FolderRedundancy(ContextMeasure):
    """ils_folder@k: intra-list similarity by folder, ``1 - unique folders / results`` in the
    top k (0: every result from a different folder; near 1: all from one). A memory
    without a folder counts as a folder of its own. Over the queries with a result; lower
    is more diverse. (Intra-list similarity: Ziegler et al., WWW 2005, with folder identity
    as the similarity.)
    """

    name = "ils_folder"
    aliases = ("folder_redundancy",)
    cutoff_required = True
    higher_is_better = False
    summary = "Intra-list similarity by folder: 1 - unique folders / results in the top k."

    def compute_context(self, context: MemoryContext) -> ContextValues:
        def value(qid: str) -> float:
            top = context.top(qid, self.cutoff)
            if not top:
                return 0.0
            folders = {context.folder(d) or f"\0{d}" for d in top}
            return 1 - len(folders) / len(top)

        return ContextValues(
            values=per_query(context, value),
            population=mask(context, lambda qid: bool(context.top(qid, self.cutoff))),
        )
