"""Blocking in-process work run beside the event loop, so that Ctrl-C is honoured at once.

A search computed on the event loop's thread holds off the loop's SIGINT handling (a task
is cancelled only where it awaits) until it returns. Run in a worker thread, the work is
awaited: cancelling the await returns at once, and the abandoned thread, a daemon, never
keeps the interpreter from exiting (the loop's default executor would: it joins its
threads on shutdown). One worker thread per system, so that code keeping thread-bound
resources (a SQLite connection opened in ``ingest``) finds them in ``search``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Job = Callable[[], None] | None
"""A call to run, or None: stop."""


class Worker:
    """A daemon thread that runs one call at a time, in order, for the event loop."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    async def run(self, function: Callable[..., T], *arguments: Any) -> T:
        """``function(*arguments)`` in the worker thread, awaited."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def job() -> None:
            try:
                outcome = functools.partial(_settle, future, function(*arguments), None)
            except Exception as error:  # handed to the awaiting task, raised there
                outcome = functools.partial(_settle, future, None, error)
            with contextlib.suppress(RuntimeError):  # the loop closed: the run was interrupted
                loop.call_soon_threadsafe(outcome)

        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="recallbench", daemon=True)
            self._thread.start()
        self._jobs.put(job)
        return await future

    def stop(self) -> None:
        """End the thread once the calls already given are done (a later call starts a
        new one)."""
        if self._thread is not None:
            self._jobs.put(None)
            self._thread = None

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()


def _settle(future: asyncio.Future[Any], value: Any, error: Exception | None) -> None:
    if future.done():  # the awaiting task was cancelled
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)
