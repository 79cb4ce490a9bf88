"""A write that fails after its commit went through (the connection dropped before the
acknowledgement came back) is retried, and the retry stores nothing twice: the SDK's
batch writer (query log, feedback, judgments) and the proxy's shadow pairs. Both engines."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from recallbench.store import FeedbackEvent, Judgment, QueryLogEntry, Store, open_store
from recallbench.telemetry import TelemetryLogger
from recallbench.telemetry._sink import StoreSink


class CommitThenFail:
    """A sink whose first write commits, then raises as a dropped connection would."""

    def __init__(self, url: str) -> None:
        self.inner = StoreSink(url, "default")
        self.failed = 0

    def write(
        self,
        queries: Sequence[QueryLogEntry],
        feedback: Sequence[FeedbackEvent],
        judgments: Sequence[Judgment],
    ) -> None:
        self.inner.write(queries, feedback, judgments)
        if not self.failed:
            self.failed += 1
            raise ConnectionResetError("server closed the connection after the commit")


def test_the_writers_retry_after_a_commit_stores_nothing_twice(db_url: str) -> None:
    sink = CommitThenFail(db_url)
    logger = TelemetryLogger(sink=sink, batch_size=1_000, flush_interval=5)
    try:
        for i in range(50):
            query_id = logger.log_search(f"query {i}", [f"m{i}", "m-common"])
            logger.log_feedback(query_id, "read_after_search", doc_id=f"m{i}", rank=1)
            logger.log_validation(query_id, f"m{i}", useful=True)
        assert logger.flush(timeout=30)
        stats = logger.stats
    finally:
        logger.close()
        sink.inner.close()
    assert sink.failed == 1 and stats.errors == 1  # the one batch failed once, then passed
    assert stats.written == 200 and stats.dropped == 0
    with open_store(db_url) as store:
        assert store.count("query_log") == 50
        assert store.count("feedback_events") == 100  # 50 reads, 50 validations
        assert store.count("judgments") == 50


class CommitThenFailStore:
    """A store whose first batch of shadow runs commits, then raises."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.calls = 0

    def log_shadow_runs(self, rows: Sequence[dict[str, Any]]) -> None:
        self.calls += 1
        self.store.log_shadow_runs(rows)
        if self.calls == 1:
            raise ConnectionResetError("server closed the connection after the commit")

    def close(self) -> None:
        self.store.close()


def test_the_proxys_pairs_are_written_again_once_and_stored_once(db_url: str) -> None:
    from recallbench.online._shadow_ledger import ShadowStats
    from recallbench.online._shadow_rows import BATCH_ROWS, Mirrored, ShadowRuns
    from recallbench.systems._profile import load_profile, shipped_profiles

    profile = load_profile(shipped_profiles()["server-memory"])
    stats = ShadowStats()
    store = CommitThenFailStore(open_store(db_url))
    runs = ShadowRuns(profile, profile, "candidate", stats, store, lambda *_: None)  # type: ignore[arg-type]

    def answer(*names: str) -> dict[str, Any]:
        entities = [{"name": n, "entityType": "memory", "observations": [n]} for n in names]
        return {"content": [], "structuredContent": {"entities": entities}}

    for i in range(BATCH_ROWS + 5):  # a full batch (written at once), and 5 more
        search = Mirrored(f"q{i}", f"query {i}", {}, answer("a", "b"), 1.0)
        runs.record(search, answer("b", "a"), 2.0)
    runs.finish()  # the last 5, and the store closed
    assert store.calls == 3  # the first batch twice, then the last
    assert stats.written == BATCH_ROWS + 5 and not stats.dropped
    with open_store(db_url) as check:
        stored = check.shadow_runs()
    assert [row["query_id"] for row in stored] == [f"q{i}" for i in range(BATCH_ROWS + 5)]
    assert stored[0]["control_results"] == ("a", "b")
    assert stored[0]["treatment_results"] == ("b", "a")
    assert datetime.now(UTC) >= stored[-1]["created_at"]
