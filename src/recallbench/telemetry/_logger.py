"""``TelemetryLogger``: what a memory system calls around its search, on the caller's thread.

Every ``log_*`` call builds its record and puts it on the writer's queue without blocking
(a few microseconds; see ``benchmarks/telemetry_overhead.py``); the writer thread
(:mod:`recallbench.telemetry._writer`) opens the store and writes in batches. Nothing is
sent anywhere but the store URL (or sink) given here.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, TypeVar, overload
from uuid import uuid4

from recallbench.core._errors import ConfigError
from recallbench.store._telemetry import (
    FEEDBACK_KINDS,
    FeedbackEvent,
    FeedbackKind,
    Judgment,
    QueryLogEntry,
)
from recallbench.store._telemetry_rows import check_session_outcome
from recallbench.telemetry._exit import RunningWriter, forget_all_after_fork
from recallbench.telemetry._privacy import TextPolicy
from recallbench.telemetry._sink import Sink, StoreSink
from recallbench.telemetry._span import Result, SearchMeta, SearchSpan, wrap_search
from recallbench.telemetry._writer import TelemetryStats, Writer

F = TypeVar("F", bound=Callable[..., Any])
_log = logging.getLogger("recallbench.telemetry")

_KINDS = frozenset(FEEDBACK_KINDS)


class TelemetryLogger:
    """Logs searches, feedback and validations to a store (or a sink) from a background
    thread; the caller never waits for the database.

    ``store`` is a store URL (default :func:`recallbench.store.default_store_url`), opened on
    the first write in the writer thread; ``sink`` replaces the store with anything that has
    ``write(queries, feedback, judgments)``. When the queue (``queue_size`` records) is
    full, new records are dropped and counted (:attr:`stats`). Use as a context manager, or
    call :meth:`close`; a clean interpreter exit (or SIGTERM) writes what is still queued.

    ``store_texts=False`` stores a fingerprint and the length of each query instead of its
    text, and no memory texts; ``redact`` patterns (regular expressions) are replaced by
    ``[redacted]`` in queries and memory texts. Both apply before a record is queued.

    Every method may be called from any thread, and from asyncio code: logging never waits
    for I/O. Nothing is sent anywhere but the given store (or sink).
    """

    def __init__(
        self,
        store: str | None = None,
        *,
        workspace: str = "default",
        queue_size: int = 10_000,
        batch_size: int = 500,
        flush_interval: float = 0.25,
        sink: Sink | None = None,
        store_texts: bool = True,
        redact: Sequence[str | re.Pattern[str]] = (),
    ) -> None:
        problems = []
        if store is not None and sink is not None:
            problems.append("give a store URL or a sink, not both")
        if not workspace:
            problems.append("the workspace must not be empty")
        if queue_size < 1:
            problems.append(f"queue_size must be at least 1 (got {queue_size})")
        if batch_size < 1:
            problems.append(f"batch_size must be at least 1 (got {batch_size})")
        if not flush_interval > 0:
            problems.append(f"flush_interval must be positive (got {flush_interval})")
        if problems:
            raise ConfigError("TelemetryLogger: " + "; ".join(problems))
        self.texts = TextPolicy.of(store_texts, redact)
        """What of the query and memory texts is stored (see :mod:`._privacy`)."""
        self.store_url = store
        """The store URL given (None: the default store)."""
        self.workspace = workspace
        self._sink = sink
        self._options = (queue_size, batch_size, flush_interval)
        self._closed = False
        self._writer, self._finalizer = self._start()
        _live.add(self)

    # --- logging -----------------------------------------------------------------------

    def log_search(
        self,
        query: str,
        results: Sequence[Result],
        *,
        session_id: str | None = None,
        intent: str | None = None,
        mode: str | None = None,
        tool: str | None = None,
        latency_ms: float | None = None,
        channels: Mapping[str, Sequence[str]] | None = None,
        texts: Mapping[str, str] | None = None,
        trace_id: str | None = None,
        query_id: str | None = None,
        category: str | None = None,
    ) -> str:
        """Queue one search with its ranked results; returns its query id (a new uuid4 hex
        unless given), which feedback refers to. Never blocks and never raises for the
        results' shape: a record that cannot be built is dropped and counted in ``errors``.

        ``channels`` (channel -> ids it contributed) and ``texts`` (id -> text) add to, and
        override, what dict results carry."""
        meta = SearchMeta(session_id, intent, mode, tool, trace_id, category)
        return self._record_search(
            query, results, meta, latency_ms, channels, texts, query_id or uuid4().hex, None
        )

    def log_feedback(
        self,
        query_id: str,
        kind: FeedbackKind,
        *,
        doc_id: str | None = None,
        rank: int | None = None,
        session_id: str | None = None,
    ) -> None:
        """Queue what the agent did with a result of ``query_id`` (``rank`` is 1-based).
        ValueError for an unknown ``kind``."""
        if kind not in _KINDS:
            raise ValueError(f"unknown feedback kind {kind!r}; expected one of {FEEDBACK_KINDS}")
        event = FeedbackEvent(query_id, kind, datetime.now(UTC), doc_id, rank, session_id)
        self._writer.submit(event, 1)

    def log_validation(
        self, query_id: str, doc_id: str, useful: bool, *, annotator: str | None = None
    ) -> None:
        """Queue a validation of ``doc_id`` for ``query_id``: a ``validated_useful`` /
        ``validated_not_useful`` feedback event and a judgment (source ``validated``, grade
        3 or 0, confidence 1.0), kept or dropped together."""
        now = datetime.now(UTC)
        kind: FeedbackKind = "validated_useful" if useful else "validated_not_useful"
        event = FeedbackEvent(query_id, kind, now, doc_id)
        judgment = Judgment(query_id, doc_id, 3 if useful else 0, "validated", now, annotator, 1.0)
        self._writer.submit((event, judgment), 2)

    def log_session_outcome(
        self,
        session_id: str,
        outcome: float | None = None,
        success: bool | None = None,
        *,
        note: str | None = None,
    ) -> bool:
        """Record how the task of session ``session_id`` ended: a number (``outcome``, e.g.
        a score or the fraction of tests passing), a success, or both, with a note; the
        session summaries and ``recallbench shadow status`` set it beside the session's
        searches. ValueError, naming the argument, when neither is given or one is
        malformed.

        Unlike the per-search calls this one writes before it returns (once per session,
        at its end, when the program may exit next): True when written, False when the
        store failed (the failure is logged and counted in ``stats.errors``, never
        raised). A logger with a ``sink`` passes it to the sink's own
        ``log_session_outcome(session_id, outcome, success, note, source)`` when it has
        one; ConfigError when it has not."""
        check_session_outcome(session_id, outcome, success)
        if self._sink is not None:
            record = getattr(self._sink, "log_session_outcome", None)
            if record is None:
                raise ConfigError(
                    f"TelemetryLogger: the sink {self._sink!r} has no log_session_outcome"
                )
            target: Callable[..., Any] = record
        else:
            from recallbench.store import open_store

            def target(*args: Any) -> None:
                with open_store(self.store_url, self.workspace) as store:
                    store.log_session_outcome(*args)

        try:
            target(session_id, outcome, success, note, "sdk")
        except Exception as error:  # the agent's task must not fail on its telemetry
            self._count_error()
            _log.warning(
                "recallbench telemetry: the outcome of session %s was not recorded: %s",
                session_id,
                error,
            )
            return False
        return True

    def search(
        self,
        query: str,
        *,
        session_id: str | None = None,
        intent: str | None = None,
        mode: str | None = None,
        tool: str | None = None,
        trace_id: str | None = None,
        category: str | None = None,
        query_id: str | None = None,
    ) -> SearchSpan:
        """A context manager (sync or async) around one search; set ``span.results`` inside
        it. On a normal exit the search is logged with its measured latency; when an
        exception escapes, nothing is logged, an error is counted and the exception goes on.
        ``span.query_id`` is known from the start (for feedback)."""
        meta = SearchMeta(session_id, intent, mode, tool, trace_id, category)
        return SearchSpan(self, query, meta, query_id or uuid4().hex)

    @overload
    def searched(self, func: F, /) -> F: ...

    @overload
    def searched(
        self,
        func: None = None,
        /,
        *,
        query_arg: str = "query",
        session_id: str | None = None,
        intent: str | None = None,
        mode: str | None = None,
        tool: str | None = None,
        trace_id: str | None = None,
        category: str | None = None,
    ) -> Callable[[F], F]: ...

    def searched(
        self,
        func: F | None = None,
        /,
        *,
        query_arg: str = "query",
        session_id: str | None = None,
        intent: str | None = None,
        mode: str | None = None,
        tool: str | None = None,
        trace_id: str | None = None,
        category: str | None = None,
    ) -> F | Callable[[F], F]:
        """Decorate a search function (sync or async) that returns its results: each call
        is logged with its latency; the query is the argument named ``query_arg`` and
        ``tool`` defaults to the function's name. A call that raises is counted as an
        error and not logged. ``@logger.searched`` or ``@logger.searched(tool="recall")``."""

        def decorate(function: F) -> F:
            meta = SearchMeta(
                session_id, intent, mode, tool or function.__name__, trace_id, category
            )
            return wrap_search(self, function, query_arg, meta)

        return decorate if func is None else decorate(func)

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
    ) -> str:
        """Build and queue the search record (for :meth:`log_search` and spans)."""
        try:
            ids, found_texts, found_channels = normalise_results(results)
            if channels:
                found_channels.update((name, tuple(found)) for name, found in channels.items())
            if texts:
                found_texts.update(texts)
            if not self.texts.keeps_everything:
                query, found_texts = self.texts.query(query), self.texts.texts(found_texts)
            entry = QueryLogEntry(
                query_id=query_id,
                text=query,
                created_at=created_at or datetime.now(UTC),
                results=ids,
                intent=meta.intent,
                mode=meta.mode,
                session_id=meta.session_id,
                tool=meta.tool,
                channels=found_channels,
                texts=found_texts,
                latency_ms=latency_ms,
                trace_id=meta.trace_id,
                category=meta.category,
            )
        except Exception as error:  # the results' shape must never break the search
            self._writer.reject(1, f"search {query_id}: {type(error).__name__}: {error}")
        else:
            self._writer.submit(entry, 1)
        return query_id

    def _count_error(self) -> None:
        """Count a failure that produced no record (a search that raised)."""
        self._writer.count_error()

    # --- lifecycle ---------------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything queued so far has been written (or dropped after failing);
        True if that happened within ``timeout`` seconds (None: wait as long as it takes)."""
        return self._writer.flush(timeout)

    def close(self, timeout: float | None = 5.0) -> bool:
        """Write what is queued and stop the writer thread, waiting at most ``timeout``
        seconds; later records are dropped and counted. True if everything was handled in
        time; otherwise what is still pending is counted in ``stats.lost`` (and the exit
        does not wait for it again). Closing again does nothing (and returns True)."""
        if self._closed:
            return True
        self._closed = True
        self._writer.stop()
        if self._writer.join(timeout):
            return True
        lost = self._writer.give_up()
        if lost:
            _log.warning(
                "recallbench telemetry: %d records lost: %r did not take them within %s s",
                lost,
                self,
                timeout,
            )
        return False

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def stats(self) -> TelemetryStats:
        """Queued, written, dropped, errors and batches so far."""
        return self._writer.stats()

    def __enter__(self) -> TelemetryLogger:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        from recallbench.store._engine import display_url  # the password masked

        url = display_url(self.store_url) if self.store_url else "default"
        target = repr(self._sink) if self._sink is not None else repr(url)
        return f"TelemetryLogger({target}, workspace={self.workspace!r})"

    def _start(self) -> tuple[Writer, weakref.finalize[[], TelemetryLogger]]:
        queue_size, batch_size, flush_interval = self._options
        if self._sink is not None:
            sink, close = self._sink, None
        else:
            store_sink = StoreSink(self.store_url, self.workspace)
            sink, close = store_sink, store_sink.close
        writer = Writer(
            sink,
            close_sink=close,
            queue_size=queue_size,
            batch_size=batch_size,
            flush_interval=flush_interval,
        )
        # when the logger is garbage collected unclosed, its writer writes what is queued
        # and ends (stop never blocks, so this is safe wherever the collector runs)
        finalizer = weakref.finalize(self, writer.stop)
        finalizer.atexit = False  # the exit hook in _exit waits for the writers instead
        return writer, finalizer

    def _after_fork(self) -> None:
        # the parent's writer must not be touched here: its locks may be held for good
        self._finalizer.detach()
        if not self._closed:
            self._writer, self._finalizer = self._start()


def normalise_results(
    results: Sequence[Result],
) -> tuple[tuple[str, ...], dict[str, str], dict[str, tuple[str, ...]]]:
    """Ids in rank order, id -> text and channel -> ids from ids, ``(id, score)`` pairs or
    dicts with ``"id"`` (optional ``"text"`` and ``"channels"``). TypeError / KeyError for
    anything else. Builds new containers: the caller's results are never changed."""
    if isinstance(results, str | bytes | Mapping) or not isinstance(results, Sequence):
        raise TypeError(f"results must be a sequence, got {type(results).__name__}")
    ids: list[str] = []
    texts: dict[str, str] = {}
    channels: dict[str, list[str]] = {}
    for item in results:
        if type(item) is str:
            ids.append(item)
        elif isinstance(item, Mapping):
            doc_id = _as_id(item["id"])
            ids.append(doc_id)
            text = item.get("text")
            if isinstance(text, str):
                texts[doc_id] = text
            names = item.get("channels") or ()
            for name in (names,) if isinstance(names, str) else names:
                channels.setdefault(str(name), []).append(doc_id)
        elif isinstance(item, tuple | list):
            ids.append(_as_id(item[0]))
        else:
            ids.append(_as_id(item))
    return tuple(ids), texts, {name: tuple(found) for name, found in channels.items()}


def _as_id(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise TypeError(f"a result id must be a string, got {type(value).__name__}")


# --- process-wide loggers ----------------------------------------------------------------

_live: weakref.WeakSet[TelemetryLogger] = weakref.WeakSet()
_defaults: dict[tuple[str | None, str], TelemetryLogger] = {}
_defaults_lock = threading.Lock()
_forked_writers: list[RunningWriter] = []
"""A forked child's copies of the parent's writers: kept alive, so that collecting them
never closes database connections the parent still uses."""


def get_logger(store: str | None = None, workspace: str = "default") -> TelemetryLogger:
    """The process-wide logger for ``store`` and ``workspace``, made on first use (a closed
    one is replaced). Everything it queued is written at a clean interpreter exit."""
    key = (store, workspace)
    with _defaults_lock:
        logger = _defaults.get(key)
        if logger is None or logger.closed:
            logger = _defaults[key] = TelemetryLogger(store, workspace=workspace)
        return logger


def _after_fork_in_child() -> None:
    """A forked child has no writer threads: give every open logger a new writer (the
    parent writes what was queued before the fork)."""
    global _defaults_lock
    _defaults_lock = threading.Lock()
    _forked_writers.extend(forget_all_after_fork())
    for logger in list(_live):
        logger._after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)
