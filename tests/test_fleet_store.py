"""The store's keys for a fleet of writers (m012): a batch written twice stores each row
once, ids drawn in different processes never collide, and a store made before m012 is
upgraded with its duplicates removed. Both engines."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from recallbench.store import _migrations, open_store
from recallbench.store._tables import feedback_events, shadow_runs
from recallbench.store._telemetry import FeedbackEvent, QueryLogEntry

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def pair(query_id: str, at: datetime = T0) -> dict[str, object]:
    return {
        "query_id": query_id,
        "control_results": ["a", "b"],
        "treatment_results": ["b", "a"],
        "created_at": at,
        "control": "A",
        "treatment": "B",
    }


def test_a_batch_written_twice_is_stored_once(db_url: str) -> None:
    queries = [QueryLogEntry(f"q{i}", f"text {i}", T0, ("a",)) for i in range(3)]
    events = [FeedbackEvent(f"q{i}", "read_after_search", T0, "a", 1) for i in range(3)]
    runs = [pair(f"q{i}", T0 + timedelta(seconds=i)) for i in range(3)]
    with open_store(db_url) as store:
        for _ in range(2):  # the retry of a batch whose first commit went through
            store.log(queries=queries, feedback=events)
            store.log_shadow_runs(runs)
        assert store.count("query_log") == 3
        assert store.count("feedback_events") == 3
        assert store.count("shadow_runs") == 3
        # the same event said again later is a new event (a new id), not a duplicate
        store.log(feedback=[FeedbackEvent("q0", "read_after_search", T0, "a", 1)])
        assert store.count("feedback_events") == 4
        stored = store.feedback(["q1"])
    assert [event.event_id for event in stored] == [events[1].event_id]


def test_event_ids_are_drawn_per_event() -> None:
    events = {FeedbackEvent("q", "re_search", T0).event_id for _ in range(1000)}
    assert len(events) == 1000 and all(len(event) == 32 for event in events)


def test_m012_upgrades_a_store_with_duplicates(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patched:
        patched.setattr(_migrations, "MIGRATIONS", _migrations.MIGRATIONS[:11])
        with open_store(db_url) as old, old._engine.begin() as connection:
            # what a retried batch left before m012: plain INSERTs, rows twice
            for query_id, tau in (("q1", 0.5), ("q1", 0.9), ("q2", 0.1)):
                run = {**pair(query_id), "workspace_id": "default", "kendall_tau": tau}
                run["control_results"] = json.dumps(run["control_results"])
                run["treatment_results"] = json.dumps(run["treatment_results"])
                connection.execute(shadow_runs.insert().values(**run))
            # feedback_events as m011 knew it: no event_id yet
            insert = text(
                "INSERT INTO feedback_events (workspace_id, query_id, kind, doc_id, created_at)"
                " VALUES ('default', 'q1', 'read_after_search', 'a', :at)"
            )
            sqlite = connection.dialect.name == "sqlite"
            for at in (T0, T0, T0 + timedelta(microseconds=1)):
                connection.execute(insert, {"at": at.isoformat(" ") if sqlite else at})
    with open_store(db_url) as store:
        runs = store.shadow_runs()
        events = store.feedback()
        with store._engine.connect() as connection:
            ids = connection.execute(
                feedback_events.select().order_by(feedback_events.c.id)
            ).mappings()
            expected = [f"m012-{row['id']}" for row in ids]
        # the first of each pair of duplicates is kept; distinct rows all are
        assert [(run["query_id"], run["kendall_tau"]) for run in runs] == [
            ("q1", 0.5),
            ("q2", 0.1),
        ]
        assert [event.created_at for event in events] == [T0, T0 + timedelta(microseconds=1)]
        assert [event.event_id for event in events] == expected
        # and from now on the keys hold
        store.log_shadow_runs([pair("q1"), pair("q3")])
        assert store.count("shadow_runs") == 3
