"""The writers' end with the process: on a clean interpreter exit an ``atexit`` hook stops
every running writer and waits (at most :data:`EXIT_TIMEOUT` seconds in all) until their
queues are written. SIGTERM, when the program left it at its default, does the same and then
ends the process with status 128 + 15 (see :func:`flush_on_sigterm`). ``os._exit``, SIGKILL
or a crash loses what is still queued. A record still queued or being written when the exit
gave up waiting is counted in ``lost`` and warned about on standard error.

Each :class:`~recallbench.telemetry._writer.Writer` tells :func:`started` when its thread
starts and :func:`ended` when it ends (or is given up on).
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
from typing import Protocol

EXIT_TIMEOUT = 10.0
"""Seconds the exit hook waits, for all writers together, before giving up on the rest."""


class RunningWriter(Protocol):
    """What the exit hook does with a writer (:class:`~recallbench.telemetry._writer.Writer`)."""

    def stop(self) -> None: ...

    def join(self, timeout: float | None) -> bool: ...

    def give_up(self) -> int: ...


# --- the exit hook -----------------------------------------------------------------------

_running: set[RunningWriter] = set()
_running_lock = threading.Lock()
_hooked = False


def started(writer: RunningWriter) -> None:
    global _hooked
    with _running_lock:
        _running.add(writer)
        first, _hooked = not _hooked, True
    if first:
        atexit.register(stop_all)
    flush_on_sigterm()


def ended(writer: RunningWriter) -> None:
    with _running_lock:
        _running.discard(writer)


def stop_all(timeout: float = EXIT_TIMEOUT) -> bool:
    """Stop every running writer and wait for them (``timeout`` seconds in all); the
    ``atexit`` hook. True if all of them ended in time; the records of those that did not
    are counted as lost, and said so on standard error (logging may be shut down)."""
    with _running_lock:
        writers = list(_running)
    for writer in writers:
        writer.stop()
    deadline = time.monotonic() + timeout
    late = [w for w in writers if not w.join(max(0.0, deadline - time.monotonic()))]
    lost = sum(writer.give_up() for writer in late)
    if lost:
        print(
            f"recallbench telemetry: {lost} records lost at exit: the store did not take them "
            f"within {timeout:g} s",
            file=sys.stderr,
            flush=True,
        )
    return not late


# --- SIGTERM -----------------------------------------------------------------------------

_sigterm_pid: int | None = None
"""The process that installed the SIGTERM handler (a forked child installs its own)."""
_terminate = threading.Event()


def flush_on_sigterm() -> bool:
    """Make SIGTERM write the queued telemetry before the process ends, as a clean exit
    (and SIGINT's KeyboardInterrupt) does; the default handler would end the process at once
    and lose it. Only when SIGTERM is at its default and this is the main thread: a program
    that handles SIGTERM itself keeps its handler (and should close its loggers there).
    The process then ends with status 128 + 15 without running other exit code, as the
    default action would have ended it. True if the handler is (now) installed."""
    global _sigterm_pid
    if _sigterm_pid == os.getpid():
        return True
    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, _on_sigterm):
            return False  # (ours: inherited by a forked child, which has no terminator)
        signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):  # no signals here (an embedded interpreter)
        return False
    _sigterm_pid = os.getpid()
    _terminate.clear()
    threading.Thread(target=_terminator, name="recallbench-sigterm", daemon=True).start()
    return True


def _on_sigterm(signum: int, frame: object) -> None:
    # the main thread may hold a writer's lock right now: the waiting is done elsewhere
    _terminate.set()


def _terminator() -> None:
    _terminate.wait()
    stop_all()
    os._exit(128 + signal.SIGTERM)


def forget_all_after_fork() -> list[RunningWriter]:
    """In a forked child: the parent's writers have no thread here; forget them (and make
    the lock new, it may have been held at the fork). Returns them, to be kept alive."""
    global _running_lock
    _running_lock = threading.Lock()
    writers = list(_running)
    _running.clear()
    return writers
