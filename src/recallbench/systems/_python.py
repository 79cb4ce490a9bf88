"""A retriever written in Python, loaded as ``python:package.module:factory``.

``factory()`` returns an object with ``search(text, k)`` (sync or async) and, optionally,
``ingest(documents)`` (dicts with id, text, title, metadata) and ``close()``; or the factory
is itself a ``search(text, k)`` function over nothing to ingest.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Sequence
from typing import Any

from recallbench.core import Document, Hit, Query, SystemUnderTestError
from recallbench.systems._hits import to_hits
from recallbench.systems._off_loop import Worker


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def _call(worker: Worker, function: Any, *arguments: Any) -> Any:
    """An async function on the loop; a plain one in the system's worker thread, so that a
    long computation does not hold off Ctrl-C."""
    if inspect.iscoroutinefunction(function):
        return await function(*arguments)
    return await _maybe_await(await worker.run(function, *arguments))


class PythonSystem:
    def __init__(self, target: str) -> None:
        module_name, _, attribute = target.partition(":")
        try:
            factory = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError, ValueError) as exc:
            raise SystemUnderTestError(f"python:{target}: cannot load it ({exc})") from None
        self.name = f"python:{target}"
        self._target = target
        self._factory = factory
        self._retriever: Any = None
        self._worker = Worker()

    def settings(self) -> dict[str, Any]:
        return {"python": self._target}

    async def setup(self, documents: Sequence[Document]) -> None:
        await self.close()  # a second setup starts from a fresh store
        made = (
            await _call(self._worker, self._factory)
            if inspect.isclass(self._factory) or not _is_search(self._factory)
            else None
        )
        self._retriever = made
        if made is not None and hasattr(made, "ingest"):
            documents_json = [doc.model_dump(mode="json") for doc in documents]
            await _call(self._worker, made.ingest, documents_json)

    @property
    def max_concurrency(self) -> int | None:
        """No cap for an async ``search`` (its awaits interleave on the loop); one call at a
        time for a plain one (it runs in the system's single worker thread)."""
        return None if inspect.iscoroutinefunction(self._search) else 1

    @property
    def _search(self) -> Any:
        return self._retriever.search if self._retriever is not None else self._factory

    async def search(self, query: Query, k: int) -> Sequence[Hit]:
        return to_hits(await _call(self._worker, self._search, query.text, k), "python")[:k]

    async def close(self) -> None:
        try:
            if self._retriever is not None and hasattr(self._retriever, "close"):
                await _call(self._worker, self._retriever.close)
        finally:
            self._worker.stop()


def _is_search(function: Any) -> bool:
    """A plain function taking (text, k) is the search itself, not a factory."""
    try:
        return len(inspect.signature(function).parameters) >= 2
    except (TypeError, ValueError):
        return False
