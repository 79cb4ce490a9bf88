"""Where the writer's batches go: the :class:`Sink` protocol, and :class:`StoreSink`, the
sink that writes them to a recallbench store (opened in the writer thread, on first use)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from recallbench.store._telemetry import FeedbackEvent, Judgment, QueryLogEntry

if TYPE_CHECKING:  # SQLAlchemy is imported in the writer thread, when the store is opened
    from recallbench.store import Store


class Sink(Protocol):
    """Where batches go: a store's ``log``, or anything else (tests, custom backends).

    Called from the writer thread only, once per batch, with the batch's records grouped by
    kind (in the order they were logged); any group may be empty."""

    def write(
        self,
        queries: Sequence[QueryLogEntry],
        feedback: Sequence[FeedbackEvent],
        judgments: Sequence[Judgment],
    ) -> None: ...


class StoreSink:
    """Writes batches with ``Store.log``; the store is opened on the first write, in the
    writer thread (SQLite connections belong to the thread that made them, and opening one
    costs ~100 ms the caller must not pay). A failed open is retried with the next write."""

    def __init__(self, url: str | None, workspace: str) -> None:
        self.url = url
        """The store URL; None for :func:`recallbench.store.default_store_url`."""
        self.workspace = workspace
        self._store: Store | None = None

    def write(
        self,
        queries: Sequence[QueryLogEntry],
        feedback: Sequence[FeedbackEvent],
        judgments: Sequence[Judgment],
    ) -> None:
        if self._store is None:
            from recallbench.store import open_store

            self._store = open_store(self.url, self.workspace)
        self._store.log(queries=queries, feedback=feedback, judgments=judgments)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def __repr__(self) -> str:
        from recallbench.store._engine import display_url  # the password masked

        url = display_url(self.url) if self.url else None
        return f"StoreSink({url!r}, workspace={self.workspace!r})"
