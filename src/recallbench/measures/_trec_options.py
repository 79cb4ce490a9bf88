"""trec_eval's evaluation flags (a module of its own: the compiled engine's callers need
them without the Python engine)."""

from __future__ import annotations

from dataclasses import dataclass

from recallbench.measures._evaluate import Rules

MAX_DOCS = (1 << 63) - 1
"""``-M`` above this is read as this: trec_eval reads it with ``atol``, which saturates at
``LONG_MAX``; no ranking is that long, so every such value means "no cut"."""


@dataclass(frozen=True)
class TrecOptions:
    """trec_eval's evaluation flags."""

    relevance_level: int = 1
    """``-l``: a document is relevant when its grade is at least this."""
    complete: bool = False
    """``-c``: average over every judged query; those the run lacks score 0."""
    max_docs: int | None = None
    """``-M``: only the first N documents of each ranking count."""
    judged_only: bool = False
    """``-J``: unjudged documents are removed from each ranking before anything else."""

    def __post_init__(self) -> None:
        if self.max_docs is not None and self.max_docs > MAX_DOCS:
            object.__setattr__(self, "max_docs", MAX_DOCS)  # frozen: set once, here

    @property
    def rules(self) -> Rules:
        return Rules(
            missing="zero" if self.complete else "skip",
            no_relevant="zero",
            relevance_threshold=self.relevance_level,
        )
