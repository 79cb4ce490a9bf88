"""Session context for the built-in systems: what a session asked before, and how a channel
weighs it against the current query.

The rule, written once: a query with a ``session_id`` is expanded with the text of the
queries asked earlier in the same session since the last ``setup()`` (each earlier query
once, in the order asked; the query itself never, so a repeated query sees the history it
saw the first time). The history weighs ``HISTORY_WEIGHT`` = 0.25 against 0.75 for the
current text:

- lexical: the current text and the history are searched separately and fused by weighted
  reciprocal rank fusion, ``score(d) = 0.75 / (60 + r_current(d)) + 0.25 / (60 + r_history(d))``
  (a term only for the rankings that hold ``d``);
- dense: the query embedding is ``0.75 e(current) + 0.25 e(history)``, renormalised.

A query without a session, or the first of its session, is searched exactly as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from recallbench.core import Query
from recallbench.systems._fusion import RRF_K

HISTORY_WEIGHT: Final = 0.25
"""Weight of the session's earlier queries; the current text weighs 1 - HISTORY_WEIGHT."""

RULE: Final = (
    f"earlier queries of the same session (since setup), weight {HISTORY_WEIGHT} against "
    f"{1 - HISTORY_WEIGHT} for the query: lexical = weighted reciprocal rank fusion of the "
    "query's and the history's rankings; dense = weighted mean of the two embeddings"
)
"""The rule in words, recorded in the system's settings."""


class SessionMemory:
    """The texts of the queries each session has asked, in order."""

    def __init__(self) -> None:
        self._asked: dict[str, dict[str, str]] = {}

    def reset(self) -> None:
        self._asked.clear()

    def history(self, query: Query) -> str | None:
        """The earlier queries of ``query``'s session joined by newlines (None when there is
        none), then remember ``query``."""
        if query.session_id is None:
            return None
        asked = self._asked.setdefault(query.session_id, {})
        earlier = [text for query_id, text in asked.items() if query_id != query.id]
        asked.setdefault(query.id, query.text)
        return "\n".join(earlier) or None


def weighted_fusion(
    current: Sequence[tuple[int, float]], history: Sequence[tuple[int, float]], depth: int
) -> list[tuple[int, float]]:
    """Fuse two rankings of rows into ``(row, fused score)``, best first, at most ``depth``.

    ``score = (1 - w) / (RRF_K + r_current) + w / (RRF_K + r_history)`` with ``w`` =
    HISTORY_WEIGHT and 1-based ranks; ties keep first-seen order (the current ranking first).
    """
    scores: dict[int, float] = {}
    for weight, ranking in ((1 - HISTORY_WEIGHT, current), (HISTORY_WEIGHT, history)):
        for rank, (row, _) in enumerate(ranking, start=1):
            scores[row] = scores.get(row, 0.0) + weight / (RRF_K + rank)
    order = sorted(scores, key=lambda row: -scores[row])  # stable: first seen wins ties
    return [(row, scores[row]) for row in order[:depth]]
