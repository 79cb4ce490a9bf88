"""The telemetry SDK under faults: SIGTERM writes what is queued, a locked SQLite store and
a stopped PostgreSQL server leave records counted as lost or dropped (never silently), the
exit says how many were lost; and what of the texts is stored (--no-texts, --redact)."""

from __future__ import annotations

import logging
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from recallbench.core import ConfigError
from recallbench.store import open_store
from recallbench.store._telemetry import FeedbackEvent, Judgment, QueryLogEntry
from recallbench.telemetry import TelemetryLogger
from recallbench.telemetry._exit import stop_all
from recallbench.telemetry._privacy import REDACTED, withheld

GUARD = 60.0
"""Seconds after which a test gives up waiting (a hang guard, never a measurement)."""


class Recording:
    def __init__(self, hold: bool = False) -> None:
        self.queries: list[QueryLogEntry] = []
        self.release = threading.Event()
        if not hold:
            self.release.set()

    def write(
        self,
        queries: Sequence[QueryLogEntry],
        feedback: Sequence[FeedbackEvent],
        judgments: Sequence[Judgment],
    ) -> None:
        self.release.wait(GUARD)
        self.queries.extend(queries)


def test_sigterm_writes_what_is_queued(tmp_path: Path) -> None:
    """A program that logs and is then sent SIGTERM (its handler left at the default): the
    records still queued are written before it ends with status 128 + 15. Nothing is
    written before the signal (long interval, huge batch), so none of it is luck."""
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    program = textwrap.dedent(f"""
        import time
        from recallbench.telemetry import TelemetryLogger
        logger = TelemetryLogger({url!r}, batch_size=100_000, flush_interval=3600)
        for index in range(2000):
            logger.log_search(f"q{{index}}", ["m1", "m2"])
        print("queued", flush=True)
        time.sleep(3600)
    """)
    process = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None and process.stdout.readline() == b"queued\n"
        process.send_signal(signal.SIGTERM)
        status = process.wait(GUARD)
    finally:
        process.kill()
    assert status == 128 + signal.SIGTERM
    with open_store(url) as store:
        assert len(store.query_log()) == 2000


def test_a_program_with_its_own_sigterm_handler_keeps_it(tmp_path: Path) -> None:
    program = textwrap.dedent("""
        import signal
        from recallbench.telemetry import TelemetryLogger
        mine = lambda signum, frame: None
        signal.signal(signal.SIGTERM, mine)
        with TelemetryLogger(sink=type("S", (), {"write": lambda *a: None})()):
            assert signal.getsignal(signal.SIGTERM) is mine
        print("kept")
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=GUARD)
    assert done.stdout == b"kept\n", done.stderr


def test_a_locked_sqlite_store_counts_records_as_lost(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another connection holds the SQLite store locked: close gives up, and the three
    searches are counted (lost, or dropped if the store refused them in time) and warned
    about; the exit does not wait for them again."""
    path = tmp_path / "telemetry.db"
    url = f"sqlite:///{path}"
    open_store(url).close()
    lock = sqlite3.connect(path)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        logger = TelemetryLogger(url, flush_interval=0.01)
        only_these_writers(monkeypatch, logger)
        for query in ("first", "second", "third"):
            logger.log_search(query, ["m1"])
        assert logger.close(timeout=1) is False
        stats = logger.stats  # before the lock goes: the writer may still succeed later
        assert stats.written == 0 and stats.lost + stats.dropped == 3
        assert stop_all(timeout=0)  # the given-up writer is not waited for again
    finally:
        lock.rollback()
        lock.close()
    assert any("records lost" in record.getMessage() for record in caplog.records)


def test_a_stopped_postgresql_server_counts_records_as_lost() -> None:
    """The store's PostgreSQL server stops after the first write: the next searches are
    counted as lost or dropped, never silently missing."""
    from recallbench.store._pg_server import PostgresUnavailable, start_postgres

    try:
        server = start_postgres()
    except PostgresUnavailable as error:
        pytest.fail(f"a PostgreSQL server is required: {error}")
    try:
        logger = TelemetryLogger(server.url(), flush_interval=0.01)
        logger.log_search("before", ["m1"])
        assert logger.flush(GUARD) and logger.stats.written == 1
    finally:
        server.stop()
    for query in ("first", "second", "third"):
        logger.log_search(query, ["m1"])
    logger.close(timeout=5)
    stats = logger.stats
    assert stats.written == 1 and stats.lost + stats.dropped == 3


def only_these_writers(monkeypatch: pytest.MonkeyPatch, *loggers: TelemetryLogger) -> None:
    """The exit hook sees these loggers' writers only (not other tests' loggers)."""
    from recallbench.telemetry import _exit

    monkeypatch.setattr(_exit, "_running", {logger._writer for logger in loggers})


def test_the_exit_hook_reports_what_it_could_not_write(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = Recording(hold=True)
    logger = TelemetryLogger(sink=sink, flush_interval=0.01)
    only_these_writers(monkeypatch, logger)
    for query in ("a", "b", "c"):
        logger.log_search(query, ["m1"])
    try:
        assert stop_all(timeout=0.2) is False
        assert logger.stats.lost == 3
        assert "3 records lost at exit" in capsys.readouterr().err
    finally:
        sink.release.set()
    logger.close(GUARD)
    assert logger.stats.lost == 0 and logger.stats.written == 3  # written late: not lost


# --- what of the texts is stored -----------------------------------------------------------


def test_redact_replaces_matches_in_queries_and_memory_texts() -> None:
    sink = Recording()
    patterns = [r"[\w.]+@[\w.]+", r"sk-\w+"]
    with TelemetryLogger(sink=sink, redact=patterns) as logger:
        logger.log_search(
            "mail ana@example.org about sk-123",
            [{"id": "m1", "text": "Ana's key is sk-abc, mail ana@example.org"}, "m2"],
        )
    [entry] = sink.queries
    assert entry.text == f"mail {REDACTED} about {REDACTED}"
    assert entry.texts == {"m1": f"Ana's key is {REDACTED}, mail {REDACTED}"}
    assert entry.results == ("m1", "m2")


def test_no_texts_stores_a_fingerprint_and_no_memory_text() -> None:
    sink = Recording()
    with TelemetryLogger(sink=sink, store_texts=False) as logger:
        logger.log_search("Where do I live?", [{"id": "m1", "text": "In Lisbon."}])
        logger.log_search("where do i live", ["m1"])
    first, second = sink.queries
    assert "live" not in first.text and first.text == withheld("Where do I live?")
    assert first.text.endswith(" 16 chars]") and first.texts == {} and first.results == ("m1",)
    assert first.text.split()[1] == second.text.split()[1]  # one question, one fingerprint


@pytest.mark.parametrize("pattern", ["(", ""])
def test_a_bad_redact_pattern_is_refused(pattern: str) -> None:
    with pytest.raises(ConfigError, match="redact pattern"):
        TelemetryLogger(sink=Recording(), redact=[pattern])


def test_the_queue_overflow_warning_reaches_logging(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "recallbench.telemetry")
    sink = Recording(hold=True)
    logger = TelemetryLogger(sink=sink, queue_size=1, batch_size=1)
    try:
        for index in range(20):
            logger.log_search(f"q{index}", ["m1"])
    finally:
        sink.release.set()
    logger.close(GUARD)
    stats = logger.stats
    assert stats.overflowed > 0 and stats.overflowed == stats.dropped
    assert stats.written + stats.overflowed == 20
    assert sum("queue is full" in r.getMessage() for r in caplog.records) == 1
