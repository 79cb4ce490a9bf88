"""Timing a search for the logger: the ``search()`` context manager and the ``searched``
decorator. Both measure wall-clock latency with ``perf_counter`` around the search only,
log on success, and on an exception log nothing, count an error and let it propagate.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Protocol, TypeVar, cast
from uuid import uuid4

Result = str | Mapping[str, Any] | tuple[str, float]
"""One search result: an id, an ``(id, score)`` pair, or a dict with ``"id"`` and optional
``"text"`` and ``"channels"`` (the channel names that found it)."""
F = TypeVar("F", bound=Callable[..., Any])

_last_query_id: ContextVar[str | None] = ContextVar("recallbench_last_query_id", default=None)


def last_query_id() -> str | None:
    """The query id of the last search logged by a ``searched`` function or a ``search()``
    span in this context (thread or asyncio task), for the feedback that follows it."""
    return _last_query_id.get()


class SearchRecorder(Protocol):
    """Where a timed search goes: the logger (:class:`~recallbench.telemetry._logger.
    TelemetryLogger`) records it, or counts the error of a search that raised."""

    def _record_search(
        self,
        query: str,
        results: Sequence[Result],
        meta: SearchMeta,
        latency_ms: float | None,
        channels: Mapping[str, Sequence[str]] | None,
        texts: Mapping[str, str] | None,
        query_id: str,
        created_at: datetime | None,
    ) -> str: ...

    def _count_error(self) -> None: ...


@dataclass(frozen=True, slots=True)
class SearchMeta:
    """What a logged search carries besides its query and results."""

    session_id: str | None = None
    intent: str | None = None
    mode: str | None = None
    tool: str | None = None
    trace_id: str | None = None
    category: str | None = None


class SearchSpan:
    """One search being timed: ``with logger.search("q") as span: span.results = ...``
    (or ``async with``). Set ``results`` (and optionally ``texts`` / ``channels``) inside
    the block; a block that sets nothing logs a search with no results."""

    def __init__(self, logger: SearchRecorder, query: str, meta: SearchMeta, query_id: str) -> None:
        self.query = query
        self.query_id = query_id
        """The id the search is logged under, known from the start (for feedback)."""
        self.results: Sequence[Result] = ()
        self.texts: Mapping[str, str] | None = None
        self.channels: Mapping[str, Sequence[str]] | None = None
        self.latency_ms: float | None = None
        """Measured on exit."""
        self._logger = logger
        self._meta = meta
        self._created_at: datetime | None = None
        self._start = 0.0

    def __enter__(self) -> SearchSpan:
        self._created_at = datetime.now(UTC)
        self._start = time.perf_counter()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.latency_ms = (time.perf_counter() - self._start) * 1000.0
        if error is not None:
            self._logger._count_error()
            return
        _last_query_id.set(self.query_id)
        self._logger._record_search(
            self.query,
            self.results,
            self._meta,
            self.latency_ms,
            self.channels,
            self.texts,
            self.query_id,
            self._created_at,
        )

    async def __aenter__(self) -> SearchSpan:
        return self.__enter__()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.__exit__(kind, error, traceback)

    def __repr__(self) -> str:
        return f"SearchSpan({self.query!r}, query_id={self.query_id!r})"


def wrap_search(logger: SearchRecorder, func: F, query_arg: str, meta: SearchMeta) -> F:
    """``func`` (sync or async) logging each call; TypeError at once when ``func`` has no
    parameter ``query_arg``."""
    query_of = _query_getter(func, query_arg)

    def log(
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        created_at: datetime,
        start: float,
        results: Any,
    ) -> None:
        latency_ms = (time.perf_counter() - start) * 1000.0
        query = query_of(args, kwargs)
        if not isinstance(query, str):
            logger._count_error()
            return
        query_id = uuid4().hex
        _last_query_id.set(query_id)
        logger._record_search(query, results, meta, latency_ms, None, None, query_id, created_at)

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            created_at = datetime.now(UTC)
            start = time.perf_counter()
            try:
                results = await func(*args, **kwargs)
            except BaseException:
                logger._count_error()
                raise
            log(args, kwargs, created_at, start, results)
            return results

        return cast(F, async_wrapper)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        created_at = datetime.now(UTC)
        start = time.perf_counter()
        try:
            results = func(*args, **kwargs)
        except BaseException:
            logger._count_error()
            raise
        log(args, kwargs, created_at, start, results)
        return results

    return cast(F, wrapper)


def _query_getter(
    func: Callable[..., Any], name: str
) -> Callable[[tuple[Any, ...], dict[str, Any]], object]:
    """Where the query is in a call's arguments, worked out once from the signature."""
    parameters = inspect.signature(func).parameters
    parameter = parameters.get(name)
    if parameter is None:
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
            return lambda args, kwargs: kwargs.get(name)
        raise TypeError(
            f"{getattr(func, '__qualname__', func)!r} has no parameter {name!r} holding the "
            "query; name it with searched(query_arg=...)"
        )
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    position = list(parameters).index(name) if parameter.kind in positional else None
    default = None if parameter.default is inspect.Parameter.empty else parameter.default

    def get(args: tuple[Any, ...], kwargs: dict[str, Any]) -> object:
        if name in kwargs and parameter.kind is not inspect.Parameter.POSITIONAL_ONLY:
            return kwargs[name]
        if position is not None and position < len(args):
            return args[position]
        return default

    return get
