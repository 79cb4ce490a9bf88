"""trec_eval's evaluation flags (a module of its own: the compiled engine's callers need
them without the Python engine)."""

from __future__ import annotations

from dataclasses import dataclass

from recallbench.measures._evaluate import Rules


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

    @property
    def rules(self) -> Rules:
        return Rules(
            missing="zero" if self.complete else "skip",
            no_relevant="zero",
            relevance_threshold=self.relevance_level,
        )
