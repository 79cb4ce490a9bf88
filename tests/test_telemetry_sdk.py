"""The telemetry SDK: the logger's queue and writer thread against a recording sink, then
end to end against real stores (SQLite files, and PostgreSQL where the fixture gives it),
including a child process that exits without closing its logger."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from recallbench.core import ConfigError
from recallbench.store import open_store
from recallbench.store._telemetry import FeedbackEvent, Judgment, QueryLogEntry
from recallbench.telemetry import TelemetryLogger, TelemetryStats, get_logger, last_query_id

WAIT = 10.0
"""Seconds a test waits for the writer thread before failing."""


class RecordingSink:
    """Remembers every write; can fail its first ``fail`` writes and hold writes until
    ``release`` is set."""

    def __init__(self, fail: int = 0, hold: bool = False) -> None:
        self.writes: list[tuple[list[QueryLogEntry], list[FeedbackEvent], list[Judgment]]] = []
        self.fail = fail
        self.entered = threading.Event()
        self.release = threading.Event()
        if not hold:
            self.release.set()
        self.threads: set[str] = set()

    def write(
        self,
        queries: Sequence[QueryLogEntry],
        feedback: Sequence[FeedbackEvent],
        judgments: Sequence[Judgment],
    ) -> None:
        self.threads.add(threading.current_thread().name)
        self.entered.set()
        assert self.release.wait(WAIT), "the test never released the sink"
        if self.fail > 0:
            self.fail -= 1
            raise RuntimeError("the sink is down")
        self.writes.append((list(queries), list(feedback), list(judgments)))

    @property
    def queries(self) -> list[QueryLogEntry]:
        return [entry for write in self.writes for entry in write[0]]

    @property
    def feedback(self) -> list[FeedbackEvent]:
        return [event for write in self.writes for event in write[1]]

    @property
    def judgments(self) -> list[Judgment]:
        return [judgment for write in self.writes for judgment in write[2]]


def make(sink: RecordingSink, **options: float) -> TelemetryLogger:
    settings: dict[str, float] = {"flush_interval": 0.01, **options}
    return TelemetryLogger(
        sink=sink,
        queue_size=int(settings.pop("queue_size", 10_000)),
        batch_size=int(settings.pop("batch_size", 500)),
        flush_interval=settings["flush_interval"],
    )


# --- batching, flush, close --------------------------------------------------------------


def test_one_write_per_batch_grouped_by_kind_in_logging_order() -> None:
    sink = RecordingSink()
    with make(sink, batch_size=100, flush_interval=30.0) as logger:
        ids = [logger.log_search(f"q{i}", [f"m{i}"]) for i in range(250)]
        assert logger.flush(WAIT)
        # full batches go without waiting for the interval; the rest on flush
        assert [len(write[0]) for write in sink.writes] == [100, 100, 50]
        assert [entry.query_id for entry in sink.queries] == ids
        sink.writes.clear()
        for i in range(3):
            logger.log_search(f"again {i}", ["m1"], query_id=f"q-{i}")
            logger.log_feedback(f"q-{i}", "read_after_search", doc_id="m1", rank=1)
            logger.log_validation(f"q-{i}", "m1", useful=i != 1)
        assert logger.flush(WAIT)
        assert len(sink.writes) == 1
        queries, feedback, judgments = sink.writes[0]
        assert [entry.query_id for entry in queries] == ["q-0", "q-1", "q-2"]
        assert [(event.query_id, event.kind) for event in feedback] == [
            ("q-0", "read_after_search"),
            ("q-0", "validated_useful"),
            ("q-1", "read_after_search"),
            ("q-1", "validated_not_useful"),
            ("q-2", "read_after_search"),
            ("q-2", "validated_useful"),
        ]
        assert [judgment.grade for judgment in judgments] == [3, 0, 3]
    assert logger.stats == TelemetryStats(queued=262, written=262, dropped=0, errors=0, batches=4)
    assert sink.threads == {"recallbench-telemetry"}


def test_a_partial_batch_is_written_after_the_flush_interval() -> None:
    sink = RecordingSink()
    with make(sink, batch_size=100, flush_interval=0.05) as logger:
        logger.log_search("alone", ["m1"])
        deadline = time.monotonic() + WAIT
        while not sink.writes and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [entry.text for entry in sink.queries] == ["alone"]


def test_flush_waits_for_everything_queued_and_times_out_on_a_stuck_sink() -> None:
    sink = RecordingSink(hold=True)
    logger = make(sink, flush_interval=30.0)
    logger.log_search("q", ["m1"])
    started = time.monotonic()
    assert logger.flush(timeout=0.2) is False
    assert time.monotonic() - started >= 0.2  # it waited its timeout, not less
    sink.release.set()
    assert logger.flush(WAIT) is True
    assert logger.stats.written == 1
    assert logger.flush(WAIT) is True  # nothing queued: at once
    logger.close()


def test_close_is_idempotent_and_later_records_are_dropped() -> None:
    sink = RecordingSink()
    logger = make(sink, flush_interval=30.0)
    for i in range(5):
        logger.log_search(f"q{i}", ["m1"])
    logger.close()  # writes the five without waiting for the interval
    assert len(sink.queries) == 5
    assert not logger._writer._thread.is_alive()
    logger.close()
    query_id = logger.log_search("too late", ["m1"])
    logger.log_validation(query_id, "m1", useful=True)
    assert len(query_id) == 32
    assert logger.flush(1.0) is True
    assert logger.closed
    assert logger.stats == TelemetryStats(queued=5, written=5, dropped=3, errors=0, batches=1)


def test_a_logger_collected_without_close_writes_what_it_queued() -> None:
    sink = RecordingSink()
    logger = make(sink, flush_interval=30.0)
    for i in range(10):
        logger.log_search(f"q{i}", ["m1"])
    del logger
    gc.collect()
    deadline = time.monotonic() + WAIT
    while len(sink.queries) < 10 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(sink.queries) == 10


# --- never block, never raise -------------------------------------------------------------


def test_a_full_queue_drops_and_counts_without_blocking_the_caller(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sink = RecordingSink(hold=True)
    logger = make(sink, queue_size=50, batch_size=1)
    logger.log_search("first", ["m1"])
    assert sink.entered.wait(WAIT)  # the writer holds "first" inside the blocked sink
    # 50 fill the queue, 30 find it full; a caller that blocked would never finish while
    # the sink holds the writer (no timing asserted: finishing at all is the property)
    caller = threading.Thread(
        target=lambda: [logger.log_search(f"q{i}", [f"m{j}" for j in range(10)]) for i in range(80)]
    )
    caller.start()
    caller.join(WAIT)
    assert not caller.is_alive() and not sink.release.is_set()
    assert logger.stats.dropped == 30
    sink.release.set()
    logger.close(WAIT)
    assert logger.stats == TelemetryStats(
        queued=51, written=51, dropped=30, errors=0, batches=51, overflowed=30
    )
    assert [entry.text for entry in sink.queries] == ["first"] + [f"q{i}" for i in range(50)]
    full = [r for r in caplog.records if "queue is full" in r.getMessage()]
    assert [r.levelname for r in full] == ["WARNING"]  # once, not 30 times


def test_a_failed_write_is_retried_once() -> None:
    sink = RecordingSink(fail=1)
    with make(sink, flush_interval=30.0) as logger:
        for i in range(3):
            logger.log_search(f"q{i}", ["m1"])
        assert logger.flush(WAIT)
    assert logger.stats == TelemetryStats(queued=3, written=3, dropped=0, errors=1, batches=1)
    assert len(sink.queries) == 3


def test_a_batch_failing_twice_is_dropped_and_nothing_reaches_the_caller(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sink = RecordingSink(fail=1_000)
    with caplog.at_level(logging.DEBUG, logger="recallbench.telemetry"):
        logger = make(sink, batch_size=2, flush_interval=30.0)
        for i in range(4):
            logger.log_search(f"q{i}", ["m1"])
        assert logger.flush(WAIT)
        logger.close()
    assert logger.stats == TelemetryStats(queued=4, written=0, dropped=4, errors=4, batches=0)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1  # the first loss warns, the others go to debug
    assert "dropped" in warnings[0].getMessage()
    assert "the sink is down" in warnings[0].getMessage()


def test_a_bad_store_url_costs_the_caller_nothing() -> None:
    logger = TelemetryLogger("nosuchdatabase://x/y", flush_interval=0.01)
    logger.log_search("q", ["m1"])  # the URL is opened (and fails) in the writer thread
    assert logger.flush(WAIT)
    logger.close()
    assert logger.stats == TelemetryStats(queued=1, written=0, dropped=1, errors=2, batches=0)


# --- what is logged -------------------------------------------------------------------------


def test_results_of_every_shape_are_normalised_without_touching_the_callers() -> None:
    sink = RecordingSink()
    results: list[object] = [
        "m1",
        ("m2", 0.9),
        {"id": "m3", "text": "the third", "channels": ["bm25", "vector"]},
        {"id": 4, "channels": "vector"},
        ["m5", 0.1],
    ]
    snapshot = repr(results)
    with make(sink) as logger:
        query_id = logger.log_search(
            "where?",
            results,  # type: ignore[arg-type]
            session_id="s1",
            intent="fact",
            mode="hybrid",
            tool="memory_search",
            latency_ms=12.5,
            channels={"graph": ["m2"]},
            texts={"m1": "the first"},
            trace_id="t1",
            category="facts",
        )
    assert repr(results) == snapshot
    (entry,) = sink.queries
    assert entry.query_id == query_id
    assert entry.results == ("m1", "m2", "m3", "4", "m5")
    assert entry.texts == {"m3": "the third", "m1": "the first"}
    assert entry.channels == {"bm25": ("m3",), "vector": ("m3", "4"), "graph": ("m2",)}
    assert (entry.session_id, entry.intent, entry.mode, entry.tool) == (
        "s1",
        "fact",
        "hybrid",
        "memory_search",
    )
    assert (entry.latency_ms, entry.trace_id, entry.category, entry.golden) == (
        12.5,
        "t1",
        "facts",
        False,
    )
    assert entry.created_at.tzinfo is UTC
    assert abs((datetime.now(UTC) - entry.created_at).total_seconds()) < 60


@pytest.mark.parametrize(
    "results",
    [None, "m1", {"id": "m1"}, [{"text": "no id"}], [3.5], [("m1",), ()], [None]],
    ids=["none", "string", "mapping", "dict-without-id", "float", "empty-pair", "none-item"],
)
def test_malformed_results_are_counted_not_raised(results: object) -> None:
    sink = RecordingSink()
    with make(sink) as logger:
        query_id = logger.log_search("q", results)  # type: ignore[arg-type]
        assert len(query_id) == 32
        logger.log_search("fine", ["m1"])
    assert [entry.text for entry in sink.queries] == ["fine"]
    assert logger.stats == TelemetryStats(queued=1, written=1, dropped=1, errors=1, batches=1)


def test_query_ids_are_fresh_unless_given() -> None:
    sink = RecordingSink()
    with make(sink) as logger:
        first = logger.log_search("q", [])
        second = logger.log_search("q", [])
        given = logger.log_search("q", [], query_id="mine")
    assert first != second and len(first) == 32 and given == "mine"
    assert [entry.results for entry in sink.queries] == [(), (), ()]


def test_feedback_and_validation_records() -> None:
    sink = RecordingSink()
    with make(sink) as logger:
        logger.log_feedback("q1", "read_after_search", doc_id="m2", rank=2, session_id="s")
        logger.log_feedback("q1", "re_search")
        logger.log_validation("q1", "m2", useful=True, annotator="ana")
        logger.log_validation("q1", "m3", useful=False)
        with pytest.raises(ValueError, match="unknown feedback kind 'clicked'"):
            logger.log_feedback("q1", "clicked")  # type: ignore[arg-type]
    assert [(e.kind, e.doc_id, e.rank, e.session_id) for e in sink.feedback] == [
        ("read_after_search", "m2", 2, "s"),
        ("re_search", None, None, None),
        ("validated_useful", "m2", None, None),
        ("validated_not_useful", "m3", None, None),
    ]
    assert [(j.doc_id, j.grade, j.source, j.annotator, j.confidence) for j in sink.judgments] == [
        ("m2", 3, "validated", "ana", 1.0),
        ("m3", 0, "validated", None, 1.0),
    ]
    assert sink.judgments[0].created_at == sink.feedback[2].created_at
    assert logger.stats.written == 6


# --- timing a search ------------------------------------------------------------------------


def test_search_span_logs_results_and_measured_latency() -> None:
    sink = RecordingSink()
    with make(sink) as logger:
        with logger.search("where?", session_id="s1", tool="recall") as span:
            time.sleep(0.02)
            span.results = [("m1", 0.9), {"id": "m2", "text": "two"}]
            during = span.query_id
        assert last_query_id() == during
        with pytest.raises(KeyError), logger.search("boom") as failed:
            raise KeyError("search failed")
        assert failed.latency_ms is not None
        with logger.search("nothing set"):
            pass
    first, empty = sink.queries
    assert (first.query_id, first.text, first.results) == (during, "where?", ("m1", "m2"))
    assert (first.session_id, first.tool, first.texts) == ("s1", "recall", {"m2": "two"})
    assert first.latency_ms is not None and 20.0 <= first.latency_ms < 1_000.0
    assert span.latency_ms == first.latency_ms
    assert empty.results == ()
    assert logger.stats.errors == 1  # the failed search, not logged


def test_async_search_span() -> None:
    sink = RecordingSink()

    async def main(logger: TelemetryLogger) -> str:
        async with logger.search("async?") as span:
            await asyncio.sleep(0.02)
            span.results = ["m1"]
        return span.query_id

    with make(sink) as logger:
        query_id = asyncio.run(main(logger))
    (entry,) = sink.queries
    assert entry.query_id == query_id and entry.results == ("m1",)
    assert entry.latency_ms is not None and entry.latency_ms >= 20.0


def test_searched_decorator_on_sync_functions_and_methods() -> None:
    sink = RecordingSink()
    with make(sink) as logger:

        @logger.searched
        def search(query: str, k: int = 10) -> list[str]:
            time.sleep(0.01)
            return [f"m{i}" for i in range(k)]

        @logger.searched(query_arg="text", tool="recall", session_id="s9")
        def recall(text: str) -> list[tuple[str, float]]:
            return [("m7", 0.5)]

        class Memory:
            @logger.searched
            def search(self, query: str) -> list[str]:
                if query == "fail":
                    raise RuntimeError("backend down")
                return ["m3"]

        assert search("positional", 2) == ["m0", "m1"]
        positional = last_query_id()
        assert search(k=1, query="keyword") == ["m0"]
        assert recall("recall me") == [("m7", 0.5)]
        assert Memory().search("method") == ["m3"]
        with pytest.raises(RuntimeError, match="backend down"):
            Memory().search("fail")
    assert search.__name__ == "search"
    assert [(e.text, e.results, e.tool, e.session_id) for e in sink.queries] == [
        ("positional", ("m0", "m1"), "search", None),
        ("keyword", ("m0",), "search", None),
        ("recall me", ("m7",), "recall", "s9"),
        ("method", ("m3",), "search", None),
    ]
    assert sink.queries[0].query_id == positional
    latency = sink.queries[0].latency_ms
    assert latency is not None and 10.0 <= latency < 1_000.0
    assert logger.stats.errors == 1


def test_searched_decorator_on_async_functions() -> None:
    sink = RecordingSink()
    with make(sink) as logger:

        @logger.searched(mode="hybrid")
        async def search(query: str) -> list[dict[str, str]]:
            await asyncio.sleep(0.02)
            return [{"id": "m1", "text": "one"}]

        async def main() -> tuple[list[dict[str, str]], str | None]:
            found = await search("async decorated")
            return found, last_query_id()

        results, query_id = asyncio.run(main())
    assert results == [{"id": "m1", "text": "one"}]
    (entry,) = sink.queries
    assert (entry.query_id, entry.text, entry.mode, entry.texts) == (
        query_id,
        "async decorated",
        "hybrid",
        {"m1": "one"},
    )
    assert entry.latency_ms is not None and entry.latency_ms >= 20.0


def test_searched_without_the_query_parameter_fails_at_decoration() -> None:
    with make(RecordingSink()) as logger, pytest.raises(TypeError, match="query_arg"):

        @logger.searched
        def lookup(text: str) -> list[str]:
            return []


def test_bad_options_are_refused_together() -> None:
    with pytest.raises(ConfigError) as error:
        TelemetryLogger("sqlite://", sink=RecordingSink(), workspace="", batch_size=0)
    message = str(error.value)
    assert "not both" in message and "workspace" in message and "batch_size" in message


# --- real stores ---------------------------------------------------------------------------


def test_every_record_reaches_the_store(db_url: str) -> None:
    count = 5_000
    logger = TelemetryLogger(db_url, workspace="sdk")
    first = logger.log_search("first", ["m1"])  # the store opens in the writer thread
    logger.log_feedback(first, "read_after_search", doc_id="m1", rank=1)
    for i in range(1, count):
        query_id = logger.log_search(
            f"question {i}",
            [{"id": f"m{i}", "text": f"memory {i}"}, (f"m{i + 1}", 0.5)],
            session_id=f"s{i % 7}",
            latency_ms=1.5,
        )
        logger.log_feedback(query_id, "read_after_search", doc_id=f"m{i}", rank=1)
    logger.close(timeout=60)
    assert logger.stats == TelemetryStats(
        queued=2 * count, written=2 * count, dropped=0, errors=0, batches=logger.stats.batches
    )
    with open_store(db_url, "sdk") as store:
        assert store.count("query_log") == count
        assert store.count("feedback_events") == count
        entries = store.query_log(limit=2)
        assert [entry.text for entry in entries] == ["first", "question 1"]
        assert entries[1].results == ("m1", "m2") and entries[1].texts == {"m1": "memory 1"}
        assert [event.doc_id for event in store.feedback(query_ids=[first])] == ["m1"]


def test_a_clean_exit_loses_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'exit.db'}"
    script = textwrap.dedent(
        f"""
        from recallbench.telemetry import TelemetryLogger, get_logger

        default = get_logger({url!r}, workspace="exit")
        other = TelemetryLogger({url!r}, workspace="exit", flush_interval=5.0)
        for i in range(2_000):
            query_id = default.log_search(f"question {{i}}", [f"m{{i}}", f"m{{i + 1}}"])
            other.log_validation(query_id, f"m{{i}}", useful=i % 2 == 0)
        # no close, no flush: the exit hook writes what is queued
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    with open_store(url, "exit") as store:
        assert store.count("query_log") == 2_000
        assert store.count("feedback_events") == 2_000
        assert store.count("judgments") == 2_000


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_gets_its_own_writer(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fork.db'}"
    logger = TelemetryLogger(url, workspace="fork")
    logger.log_search("parent before", ["m1"])
    assert logger.flush(WAIT)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's result is checked by the parent
        status = 1
        try:
            for i in range(20):
                logger.log_search(f"child {i}", ["m1"])
            logger.close(WAIT)
            status = 0 if logger.stats.written == 20 else 2
        finally:
            os._exit(status)
    logger.log_search("parent after", ["m1"])
    _, status = os.waitpid(pid, 0)
    logger.close(WAIT)
    assert os.waitstatus_to_exitcode(status) == 0
    with open_store(url, "fork") as store:
        texts = sorted(entry.text for entry in store.query_log())
    assert texts == sorted(["parent before", "parent after"] + [f"child {i}" for i in range(20)])


def test_get_logger_is_one_per_store_and_workspace(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'default.db'}"
    logger = get_logger(url, "a")
    try:
        assert get_logger(url, "a") is logger
        assert get_logger(url, "b") is not logger
        logger.close()
        assert get_logger(url, "a") is not logger  # a closed one is replaced
    finally:
        for workspace in ("a", "b"):
            get_logger(url, workspace).close()


def test_one_refused_record_does_not_take_its_batch_with_it(tmp_path: Path) -> None:
    """A record the store refuses (a None text violates NOT NULL) is dropped alone: the
    batch is retried record by record, and the five good searches are written."""
    url = f"sqlite:///{tmp_path / 'refuse.db'}"
    logger = TelemetryLogger(url, flush_interval=0.05)
    for i in range(5):
        logger.log_search(f"good {i}", ["a", "b"])
    logger.log_search(None, ["a"])  # type: ignore[arg-type]
    logger.close()
    stats = logger.stats
    from recallbench.store import open_store

    with open_store(url) as store:
        assert store.count("query_log") == 5
    assert (stats.written, stats.dropped) == (5, 1)


def test_repr_masks_the_password() -> None:
    logger = TelemetryLogger("postgresql://alice:s3cr3t@127.0.0.1:1/db")
    try:
        assert "s3cr3t" not in repr(logger)
    finally:
        logger.close(timeout=0.1)
