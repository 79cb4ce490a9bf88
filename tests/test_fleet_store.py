"""The store's keys for a fleet of writers (m012): a batch written twice stores each row
once, ids drawn in different processes never collide, and a store made before m012 is
upgraded with its duplicates removed. Both engines."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

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


def test_two_deciders_at_once_record_one_decision(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes deciding the same test at once on PostgreSQL (read committed): both
    read it running; the second's compare-and-set finds it decided and records nothing."""
    from recallbench.core import ConfigError
    from recallbench.store._pg_server import create_database, drop_database
    from recallbench.store._shadow_tests_store import ShadowTestStore

    url = create_database(postgres_url)
    try:
        with open_store(url) as store:
            store.start_shadow_test("t", "A", "B", "rr", {}, at=T0)
        both_read = threading.Barrier(2, timeout=10)
        read = ShadowTestStore._test_row
        waited: set[int] = set()

        def read_then_wait(self: ShadowTestStore, connection: object, name: str) -> object:
            row = read(self, connection, name)  # type: ignore[arg-type]
            if threading.get_ident() not in waited:  # the decision's own read only
                waited.add(threading.get_ident())
                both_read.wait()
            return row

        monkeypatch.setattr(ShadowTestStore, "_test_row", read_then_wait)
        outcomes: dict[str, str] = {}

        def decide(decision: str) -> None:
            with open_store(url) as store:
                try:
                    store.log_shadow_decision("t", decision, {}, actor=decision)  # type: ignore[arg-type]
                    outcomes[decision] = "recorded"
                except ConfigError as error:
                    outcomes[decision] = str(error)

        threads = [threading.Thread(target=decide, args=(d,)) for d in ("graduate", "rollback")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        monkeypatch.undo()
        with open_store(url) as store:
            decisions = [d.decision for d in store.shadow_decisions("t")]
            test = store.shadow_test("t")
        assert sorted(outcomes.values())[0] == "recorded", outcomes
        assert "decided meanwhile" in sorted(outcomes.values())[1], outcomes
        assert len(decisions) == 2 and decisions[0] == "start"
        assert test is not None
        assert test.status == {"graduate": "graduated", "rollback": "rolled_back"}[decisions[1]]
    finally:
        drop_database(postgres_url, url)


def test_a_fleets_pairs_are_decided_as_one_proxys(db_url: str, tmp_path: Path) -> None:
    """Three proxies commit their batches in their own order (and two pairs share each
    timestamp, from different proxies): the pairs are read in their own order (timestamp,
    then query id), so the decision equals that of one proxy writing the same pairs."""
    from recallbench.online._shadow_decide import decide_test
    from recallbench.online._shadow_rule import GraduationRule
    from test_shadow_decide import stream

    rows, events = stream(240, seed=7, effect=0.4)
    rows = [{**row, "created_at": T0 + timedelta(seconds=i // 2)} for i, row in enumerate(rows)]
    rule = GraduationRule(min_queries=20, settle_seconds=0).to_dict()
    decided = {}
    for name, url in (("single", f"sqlite:///{tmp_path / 'single.db'}"), ("fleet", db_url)):
        with open_store(url) as store:
            test = store.start_shadow_test(
                "t", "A", "B", "rr", rule, rule["guardrails"], at=T0 - timedelta(seconds=1)
            )
            named = [{**row, "control": "A", "treatment": "B"} for row in rows]
            if name == "single":
                store.log_shadow_runs(named)
            else:  # proxy i % 3 made pair i; their batches of 16 commit proxy 2, 0, 1
                for proxy in (2, 0, 1):
                    own = named[proxy::3]
                    for start in range(0, len(own), 16):
                        store.log_shadow_runs(own[start : start + 16])
            store.log(feedback=events)
            order = [row["query_id"] for row in store.shadow_runs()]
            decided[name] = (order, decide_test(store, test, now=T0 + timedelta(hours=1)))
    (single_order, single), (fleet_order, fleet) = decided["single"], decided["fleet"]
    assert fleet_order == single_order
    assert single.decision == "graduate" and 20 <= single.n < 240  # decided mid-stream
    assert fleet.to_dict() == single.to_dict()
