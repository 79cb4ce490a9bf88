"""A retriever written in Python, loaded as ``python:package.module:factory``.

``factory()`` returns an object with ``search(text, k)`` (sync or async) and, optionally,
``ingest(documents)`` and ``close()`` (:class:`PythonStore`); or the factory is itself a
``search(text, k)`` function over nothing to ingest (:class:`PythonSearch`).

The module is imported as Python would from the current folder: that folder is on the
import path (``PYTHONPATH=.`` is not needed). Documents reach ``ingest`` as plain dicts
(:class:`PluginDocument`), the JSON a ``command:`` or HTTP system receives, so a plugin needs
nothing from recallbench and cannot change the dataset it is given.

An exception raised in the plugin's own code (its import, the factory, ``ingest``,
``search`` or ``close``) is the plugin's fault, not recallbench's: it becomes a
:class:`PluginError` (a ``SystemUnderTestError``, exit 3 "the system under test failed")
that shows the plugin's traceback, its frames only.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import traceback
from collections.abc import Awaitable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypedDict

from recallbench.core import Document, Hit, Query, RecallbenchError, SystemUnderTestError
from recallbench.systems._hits import to_hits
from recallbench.systems._off_loop import Worker

_OURS = (
    str(Path(__file__).resolve().parent.parent) + os.sep,
    str(Path(importlib.__file__).resolve().parent) + os.sep,
)
"""recallbench's own source folder and the import machinery's: frames there are left out of
a plugin's traceback."""


class PluginDocument(TypedDict):
    """One document as ``ingest`` receives it: ``Document.model_dump(mode="json")``, a new
    dict for each call (changing it changes nothing in recallbench)."""

    id: str
    """The id ``search`` returns for it; what judgments refer to."""
    text: str
    """The memory's content."""
    title: str | None
    """Optional short title."""
    metadata: dict[str, Any]
    """Free metadata (JSON values): ``tier``, ``folder``, ``created_at``, ``session_id``..."""


SearchAnswer = Iterable[Any]
"""Hits, best first: ids (``"d1"``), ``(id, score)`` pairs, dicts with ``id`` (or
``doc_id``) and optional ``score``, or ``Hit`` objects. At most ``k`` are kept."""


class PythonSearch(Protocol):
    """The smallest plugin: ``python:MODULE:search`` names a function of ``(text, k)``."""

    def __call__(self, text: str, k: int) -> SearchAnswer | Awaitable[SearchAnswer]:
        """The hits for the query ``text``, at most ``k``, best first."""
        ...


class PythonRetriever(Protocol):
    """What ``python:MODULE:FACTORY`` builds: ``FACTORY()`` (a class or a function of no
    argument) returns an object with ``search``. Each method may be plain or ``async``: a
    plain one runs in a worker thread of its own (one call at a time, always the same
    thread), an ``async`` one on recallbench's event loop (calls may overlap with
    ``run --concurrency``)."""

    def search(self, text: str, k: int) -> SearchAnswer | Awaitable[SearchAnswer]:
        """The hits for the query ``text``, at most ``k``, best first."""
        ...


class PythonStore(PythonRetriever, Protocol):
    """A retriever with a store of its own; ``ingest`` and ``close`` are each optional."""

    def ingest(self, documents: list[PluginDocument]) -> Awaitable[None] | None:
        """Store the corpus: a list of plain dicts (:class:`PluginDocument`), not
        recallbench's ``Document`` model, so that the plugin imports nothing from
        recallbench. Called once per store: a dataset with units gets a new object from
        the factory, and ``ingest``, for each unit."""
        ...

    def close(self) -> Awaitable[None] | None:
        """Release files, connections and processes; called once, whatever happened."""
        ...


class PluginError(SystemUnderTestError):
    """Code of a ``python:`` plugin raised: the message names the plugin and the step
    (import, factory, ingest, search, close) and shows the plugin's traceback, its frames
    only; :attr:`brief` says the same in one line, the error first (a failed query's
    recorded error, as for any system: ``Type: message``)."""

    def __init__(self, plugin: str, step: str, error: BaseException) -> None:
        frames = [f for f in traceback.extract_tb(error.__traceback__) if _theirs(f.filename)]
        raised = "".join(traceback.format_exception_only(type(error), error)).strip()
        where = ", ".join(f"{Path(f.filename).name}:{f.lineno} in {f.name}" for f in frames)
        self.brief = raised.replace("\n", " ") + (f" (in the plugin at {where})" if where else "")
        """One line: the error and the plugin's frames, innermost last."""
        self.frames = frames
        lines = [f"{plugin}: the plugin's {step} raised {raised} (a fault of the plugin)"]
        if frames:
            lines.append("Traceback of the plugin (most recent call last):")
            lines.extend(line.rstrip("\n") for line in traceback.format_list(frames))
            lines.append(raised)
        super().__init__("\n".join(lines))


def _theirs(filename: str) -> bool:
    """Whether a frame is the plugin's (or a library it calls), not recallbench's nor the
    import machinery's."""
    if filename.startswith("<frozen importlib"):
        return False
    try:
        return not str(Path(filename).resolve()).startswith(_OURS)
    except (OSError, RuntimeError):  # a frame of no file (<string>)
        return True


def importable_here() -> None:
    """Put the current folder on the import path, as ``python -m`` does (last, so that it
    cannot shadow an installed package recallbench itself uses)."""
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.append(here)


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def _call(worker: Worker, function: Any, *arguments: Any) -> Any:
    """An async function on the loop; a plain one in the system's worker thread, so that a
    long computation does not hold off Ctrl-C."""
    if inspect.iscoroutinefunction(function):
        return await function(*arguments)
    return await _maybe_await(await worker.run(function, *arguments))


def _load(target: str) -> Any:
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise SystemUnderTestError(f"python:{target}: expected python:MODULE:FACTORY")
    importable_here()
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not f"{module_name}.".startswith(f"{exc.name}."):
            raise PluginError(f"python:{target}", "import", exc) from None
        raise SystemUnderTestError(
            f"python:{target}: cannot load it (no module named {exc.name!r} in the current "
            f"folder {os.getcwd()} or on the Python path)"
        ) from None
    except Exception as exc:  # the module's own code failed while importing
        raise PluginError(f"python:{target}", "import", exc) from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise SystemUnderTestError(
            f"python:{target}: module {module_name!r} has no {attribute!r}"
        ) from None


class PythonSystem:
    """A ``python:`` plugin as a system under test (:class:`PythonRetriever`)."""

    def __init__(self, target: str) -> None:
        self._factory = _load(target)
        self.name = f"python:{target}"
        self._target = target
        self._retriever: Any = None
        self._worker = Worker()

    def settings(self) -> dict[str, Any]:
        return {"python": self._target}

    async def _plugin(self, step: str, function: Any, *arguments: Any) -> Any:
        """Call the plugin's code; what it raises is a :class:`PluginError`."""
        try:
            return await _call(self._worker, function, *arguments)
        except RecallbenchError:
            raise
        except Exception as error:
            raise PluginError(self.name, step, error) from error

    async def setup(self, documents: Sequence[Document]) -> None:
        await self.close()  # a second setup starts from a fresh store
        made = (
            await self._plugin("factory", self._factory)
            if inspect.isclass(self._factory) or not _is_search(self._factory)
            else None
        )
        self._retriever = made
        if made is not None and hasattr(made, "ingest"):
            documents_json = [doc.model_dump(mode="json") for doc in documents]
            await self._plugin("ingest", made.ingest, documents_json)

    @property
    def max_concurrency(self) -> int | None:
        """No cap for an async ``search`` (its awaits interleave on the loop); one call at a
        time for a plain one (it runs in the system's single worker thread)."""
        return None if inspect.iscoroutinefunction(self._search) else 1

    @property
    def _search(self) -> Any:
        return self._retriever.search if self._retriever is not None else self._factory

    async def search(self, query: Query, k: int) -> Sequence[Hit]:
        answer = await self._plugin("search", self._search, query.text, k)
        if isinstance(answer, str | bytes) or not isinstance(answer, Iterable):
            raise SystemUnderTestError(
                f"{self.name}: search returned {type(answer).__name__}, not a list of hits"
            )
        return to_hits(answer, "python")[:k]

    async def close(self) -> None:
        try:
            if self._retriever is not None and hasattr(self._retriever, "close"):
                await self._plugin("close", self._retriever.close)
        finally:
            self._worker.stop()


def _is_search(function: Any) -> bool:
    """A plain function taking (text, k) is the search itself, not a factory."""
    try:
        return len(inspect.signature(function).parameters) >= 2
    except (TypeError, ValueError):
        return False
