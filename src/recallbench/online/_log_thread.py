"""The proxy's logging thread: the work that follows an answered call (parsing its hits,
the feedback rules, queueing the records, the shadow's rows) runs here, in the order the
calls were answered, after the answer has gone back to the agent."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from recallbench.online._wire import warn

OBSERVE_QUEUE = 10_000
"""Calls waiting to be logged, at most; beyond, a call is answered but not logged (counted)."""


class LogThread:
    """Logs calls in a thread of its own, in the order they were answered, so that the
    answer goes back to the agent without waiting for it (parsing the hits, the feedback
    rules, queueing the records: a third of a millisecond per search, more under load).

    The queue is bounded: when it is full the call is not logged (counted in ``dropped``,
    said once on standard error) rather than held up. A job's error is the proxy's
    warning, never the agent's."""

    def __init__(self, size: int = OBSERVE_QUEUE) -> None:
        self._jobs: queue.Queue[Callable[[], None] | None] = queue.Queue(size)
        self._thread: threading.Thread | None = None
        self._stopped = False
        self.dropped = 0
        self.late = 0
        """Jobs submitted after :meth:`stop` (calls answered once the log was closed)."""

    def submit(self, job: Callable[[], None]) -> None:
        """Queue ``job``; drop it (counted) when the queue is full, or when the observer
        has stopped (the telemetry is written: said on standard error, never silent)."""
        if self._stopped:
            self.late += 1
            if self.late == 1:
                warn("calls answered after the log was closed are not logged (stopping)")
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="proxy-log", daemon=True)
            self._thread.start()
        try:
            self._jobs.put_nowait(job)
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1:
                warn(f"calls arrive faster than they can be logged; {OBSERVE_QUEUE:,} wait")

    def wait(self) -> None:
        """Return once every job queued so far is done (what a later call relies on)."""
        if self._thread is not None:
            self._jobs.join()

    def stop(self) -> None:
        """Do what is queued, then end the thread; later jobs are refused (counted).
        Calling it again does nothing."""
        self._stopped = True
        thread, self._thread = self._thread, None
        if thread is not None:
            self._jobs.put(None)
            thread.join()
        if self.dropped:
            warn(f"{self.dropped} calls were not logged (the log queue was full)")
            self.dropped = 0

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                if job is None:
                    return
                job()
            except Exception as error:  # logging must never stop the proxy
                warn(f"could not log a call: {type(error).__name__}: {error}")
            finally:
                self._jobs.task_done()
