"""The writer thread behind :class:`~recallbench.telemetry.TelemetryLogger`.

Callers only put records on a bounded queue (``put_nowait``; when it is full the record is
dropped and counted). One daemon thread takes them off in batches: it waits for a first
record, then collects more until ``batch_size`` records or ``flush_interval`` seconds, groups
them by kind and hands them to the sink (:mod:`recallbench.telemetry._sink`) in one
``write`` call. A write that raises is counted in ``errors`` and retried once after
:data:`RETRY_DELAY`; when the retry fails too, its records are written one by one, and only
those the sink refuses are dropped and counted. A retry stores nothing twice when the
failure came after the commit (a dropped connection): the store skips the query ids and
event ids it holds (m012), and a judgment replaces its own row.
Nothing the sink does reaches the caller.

A flush puts a marker on the queue: the writer writes what it holds as soon as it reaches
the marker, so everything queued before it is written (or counted as dropped) when the
marker is released. At a clean exit or SIGTERM the running writers are stopped and waited
for (:mod:`recallbench.telemetry._exit`).

Nothing is lost silently: a record the queue refused is counted in ``dropped`` and
``overflowed`` (the first overflow is a warning); one still queued or being written when a
close or the exit gave up waiting is counted in ``lost`` (and warned about at exit).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from recallbench.store._telemetry import FeedbackEvent, Judgment, QueryLogEntry
from recallbench.telemetry._exit import ended, started
from recallbench.telemetry._sink import Sink

Record: TypeAlias = QueryLogEntry | FeedbackEvent | Judgment
Item: TypeAlias = Record | tuple[Record, ...]
"""What a caller queues: one record, or records that must be kept or dropped together."""

FLUSH_POLL = 0.1
"""Seconds between checks that the writer thread is still alive while a flush waits."""
ISOLATION_GIVE_UP = 3
"""Refusals in a row, writing a failed batch record by record, that mean the store is down."""
RETRY_DELAY = 0.1
"""Seconds before a failed write is tried again."""
IDLE_POLL = 1.0
"""How often an idle writer looks whether it was stopped without being woken."""

_log = logging.getLogger("recallbench.telemetry")


@dataclass(frozen=True, slots=True)
class TelemetryStats:
    """Counts since the logger was made, in records (a search is one record, a feedback
    event one, a validation two: its event and its judgment)."""

    queued: int
    """Records accepted on the queue."""
    written: int
    """Records the sink accepted."""
    dropped: int
    """Records lost: the queue was full or the logger closed, the record could not be
    built from its input, or their batch failed twice."""
    errors: int
    """Failures: each failed write attempt, each record that could not be built from its
    input, each search that raised inside ``search()`` or ``searched``."""
    batches: int
    """Successful ``write`` calls."""
    overflowed: int = 0
    """Of ``dropped``: records refused because the queue was full."""
    lost: int = 0
    """Records accepted on the queue but neither written nor dropped when a close (or the
    exit) gave up waiting for the writer: the store was unreachable or too slow. The writer
    keeps trying while the process lives; what it still writes leaves this count."""


class _Flush:
    """A queue marker: released once everything queued before it has been handled."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = threading.Event()


_WAKE = object()
"""A queue marker that only wakes the writer (to notice that it was stopped)."""


class Writer:
    """A bounded queue and the daemon thread that drains it into a sink."""

    def __init__(
        self,
        sink: Sink,
        *,
        close_sink: Callable[[], None] | None,
        queue_size: int,
        batch_size: int,
        flush_interval: float,
    ) -> None:
        self.sink = sink
        self._close_sink = close_sink
        self._queue: queue.Queue[Item | _Flush | object] = queue.Queue(maxsize=queue_size)
        self._batch_size = batch_size
        self._interval = flush_interval
        self._lock = threading.Lock()
        self._queued = self._written = self._dropped = self._errors = self._batches = 0
        self._overflowed = 0
        self._failed = 0
        """Of ``_dropped``: records that were queued (and then given up)."""
        self._gave_up = False
        """A close or the exit stopped waiting for this writer: what is pending is lost."""
        self._warned = self._warned_full = False
        self._stopping = threading.Event()
        self._wake = threading.Event()
        """Cuts the writer's wait for more records short: a full batch, a flush, a stop."""
        self._flushes = 0
        """Flush markers on the queue, not yet reached by the writer."""
        self._thread = threading.Thread(target=self._run, name="recallbench-telemetry", daemon=True)
        started(self)
        self._thread.start()

    # --- caller side -------------------------------------------------------------------

    def submit(self, item: Item, count: int) -> bool:
        """Queue ``item`` (``count`` records) without blocking; False when it was dropped."""
        with self._lock:
            if self._stopping.is_set():
                self._dropped += count
                return False
            try:
                self._queue.put_nowait(item)
            except queue.Full:
                self._dropped += count
                self._overflowed += count
                first, self._warned_full = not self._warned_full, True
                full = True
            else:
                self._queued += count
                full = first = False
        if full:
            if first:  # once per writer: the caller's thread must stay cheap
                _log.warning(
                    "recallbench telemetry: the queue is full (the store is slower than the "
                    "records come); records are dropped and counted"
                )
            return False
        if not self._wake.is_set() and self._queue.qsize() >= self._batch_size - 1:
            self._wake.set()  # with the record the writer holds, a batch is full
        return True

    def reject(self, count: int, reason: str) -> None:
        """Count records that could not be built (dropped) as errors too."""
        with self._lock:
            self._errors += count
            self._dropped += count
        self._warn("recallbench telemetry: record not logged: %s", reason)

    def count_error(self) -> None:
        with self._lock:
            self._errors += 1

    def stats(self) -> TelemetryStats:
        with self._lock:
            return TelemetryStats(
                self._queued,
                self._written,
                self._dropped,
                self._errors,
                self._batches,
                self._overflowed,
                self._pending() if self._gave_up else 0,
            )

    def _pending(self) -> int:
        """Records accepted and not yet written or given up (under the lock)."""
        return self._queued - self._written - self._failed

    def give_up(self) -> int:
        """Stop waiting for this writer (a close or the exit timed out): its pending records
        count as lost from now on, and the exit hook does not wait for it again. Returns
        how many are lost."""
        with self._lock:
            self._gave_up = True
            lost = self._pending()
        ended(self)
        return lost

    def flush(self, timeout: float | None) -> bool:
        """Wait until everything queued so far is handled; True if that happened in time."""
        if threading.current_thread() is self._thread:
            return False  # a sink flushing its own logger would wait for itself
        if self._stopping.is_set():  # the thread writes everything queued, then ends
            return self.join(timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        marker = _Flush()
        with self._lock:
            self._flushes += 1
        try:
            self._queue.put(marker, timeout=timeout)
        except queue.Full:
            with self._lock:
                self._flushes -= 1
            return False
        self._wake.set()
        # wait in short steps: a close racing with this flush may end the thread before it
        # reaches the marker, which then would never be released
        while not marker.done.wait(FLUSH_POLL):
            if not self._thread.is_alive():
                return marker.done.is_set()
            if deadline is not None and time.monotonic() >= deadline:
                return False
        return True

    def stop(self) -> None:
        """Ask the thread to write what is queued and end; new records are dropped.
        Never blocks for long (safe in finalizers and from any thread)."""
        with self._lock:  # no submit is between its test of _stopping and its put
            self._stopping.set()
        with contextlib.suppress(queue.Full):  # when full, the writer is busy anyway and
            self._queue.put_nowait(_WAKE)  # looks at _stopping between batches
        self._wake.set()

    def join(self, timeout: float | None) -> bool:
        """Wait for the thread to end; True if it did."""
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    # --- writer thread -----------------------------------------------------------------

    def _run(self) -> None:
        try:
            while self._cycle() or not self._queue.empty():
                pass
        finally:
            self._stopping.set()  # if the thread died of the unexpected, later records
            self._abandon()  # are dropped and counted rather than queued for nobody
            if self._close_sink is not None:
                try:
                    self._close_sink()
                except Exception as error:
                    self._warn("recallbench telemetry: closing %r failed: %s", self.sink, error)
            ended(self)

    def _abandon(self) -> None:
        """Count what is left on the queue as dropped and release its flush markers."""
        records: list[Record] = []
        flushes: list[_Flush] = []
        while True:
            try:
                self._take(self._queue.get_nowait(), records, flushes)
            except queue.Empty:
                break
        with self._lock:
            self._dropped += len(records)
            self._failed += len(records)
        for flush in flushes:
            flush.done.set()

    def _cycle(self) -> bool:
        """Collect one batch and write it; False once stopped."""
        try:
            first = self._queue.get(timeout=IDLE_POLL)
        except queue.Empty:
            return not self._stopping.is_set()
        records: list[Record] = []
        flushes: list[_Flush] = []
        self._take(first, records, flushes)
        if not flushes:
            self._linger()
        while not flushes and len(records) < self._batch_size:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            self._take(item, records, flushes)
        if records:
            self._write(records)
        for flush in flushes:
            flush.done.set()
        return not self._stopping.is_set()

    def _linger(self) -> None:
        """Wait until a batch is full, a flush or stop is asked, or ``flush_interval`` has
        passed. Sleeping on an event that only those set, rather than taking records one
        by one as they come, keeps this thread from waking (and taking the GIL from the
        caller) at every record."""
        deadline = time.monotonic() + self._interval
        while not self._urgent():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._wake.clear()
            if self._urgent():  # set between the test and the clear
                return
            self._wake.wait(remaining)

    def _urgent(self) -> bool:
        return (
            self._stopping.is_set()
            or self._flushes > 0
            or self._queue.qsize() >= self._batch_size - 1  # the first record is taken
        )

    def _take(self, item: object, records: list[Record], flushes: list[_Flush]) -> None:
        if isinstance(item, tuple):
            records.extend(item)
        elif isinstance(item, _Flush):
            flushes.append(item)
            with self._lock:
                self._flushes -= 1
        elif isinstance(item, QueryLogEntry | FeedbackEvent | Judgment):
            records.append(item)

    def _write(self, records: list[Record]) -> None:
        for attempt in (1, 2):
            try:
                self._send(records)
            except Exception as error:
                with self._lock:
                    self._errors += 1
                if attempt == 2:
                    self._isolate(records, error)
                    return
                _log.debug("telemetry write to %r failed, retrying: %s", self.sink, _reason(error))
                time.sleep(RETRY_DELAY)
            else:
                with self._lock:
                    self._written += len(records)
                    self._batches += 1
                return

    def _send(self, records: Sequence[Record]) -> None:
        self.sink.write(
            [r for r in records if isinstance(r, QueryLogEntry)],
            [r for r in records if isinstance(r, FeedbackEvent)],
            [r for r in records if isinstance(r, Judgment)],
        )

    def _isolate(self, records: list[Record], error: Exception) -> None:
        """A batch failed twice: write its records one by one, so that one record the store
        refuses does not take the others with it. Three refusals in a row mean the store
        itself is down: the rest of the batch is dropped without more attempts."""
        refused = 0
        in_a_row = 0
        if len(records) > 1:
            for index, record in enumerate(records):
                try:
                    self._send([record])
                    in_a_row = 0
                except Exception:
                    refused += 1
                    in_a_row += 1
                    if in_a_row == ISOLATION_GIVE_UP:
                        refused += len(records) - index - 1
                        break
        else:
            refused = len(records)
        with self._lock:
            self._written += len(records) - refused
            self._dropped += refused
            self._failed += refused
            if refused < len(records):
                self._batches += 1
        if refused:
            self._warn(
                "recallbench telemetry: %d of %d records dropped, the store %r refused them: %s",
                refused,
                len(records),
                self.sink,
                _reason(error),
            )

    def _warn(self, message: str, *args: object) -> None:
        """The first problem as a warning, later ones at debug level (no flood of logs)."""
        _log.log(logging.DEBUG if self._warned else logging.WARNING, message, *args)
        self._warned = True


def _reason(error: BaseException) -> str:
    """The error without the statement's parameters (they hold agents' queries and memories)."""
    cause = getattr(error, "orig", None) or error
    first = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
    return f"{type(cause).__name__}: {first}" if first else type(cause).__name__
