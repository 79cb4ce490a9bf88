"""The store's shadow-test half (m008) on real SQLite files and a real PostgreSQL server:
shadow runs with interleaving and sessions, shadow tests and their decisions, feature flags
with their history, session outcomes, and the upgrade of a store made at m007."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

import store_schema as schema
from recallbench.core import ConfigError
from recallbench.store import _migrations, open_store
from recallbench.store._tables import shadow_runs

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def pair(query_id: str, at: datetime = T0, **extra: object) -> dict[str, object]:
    return {
        "query_id": query_id,
        "control_results": ["a", "b"],
        "treatment_results": ["b", "c"],
        "control_latency_ms": 3.0,
        "treatment_latency_ms": 4.0,
        "created_at": at,
        **extra,
    }


# ---------------------------------------------------------------- shadow runs


def test_a_shadow_run_keeps_its_interleaving_session_and_profiles(db_url: str) -> None:
    shown = [("b", "treatment"), ("a", "control"), ("c", "treatment")]
    with open_store(db_url) as store:
        store.log_shadow_run(
            pair("q1", interleaved=shown, session_id="s1", control="A", treatment="B")
        )
        store.log_shadow_run(pair("q2", at=T0 + timedelta(seconds=1)))  # m007's keys only
        first, second = store.shadow_runs()
    assert first["interleaved"] == tuple(shown)
    assert (first["session_id"], first["control"], first["treatment"]) == ("s1", "A", "B")
    assert first["control_results"] == ("a", "b")
    assert second["interleaved"] is None and second["session_id"] is None


def test_shadow_runs_are_read_within_a_window(db_url: str) -> None:
    with open_store(db_url) as store:
        for minute in range(5):
            store.log_shadow_run(pair(f"q{minute}", at=T0 + timedelta(minutes=minute)))
        found = store.shadow_runs(since=T0 + timedelta(minutes=1), until=T0 + timedelta(minutes=3))
    assert [row["query_id"] for row in found] == ["q1", "q2", "q3"]


@pytest.mark.parametrize(
    ("shown", "where"),
    [
        ([("a", "control"), ("b", "both")], r"interleaved\[1\]"),
        ([("a",)], r"interleaved\[0\]"),
        ([(1, "control")], r"interleaved\[0\]"),
    ],
)
def test_a_malformed_interleaving_is_refused_where_it_is_wrong(
    shown: list[tuple[object, ...]], where: str, tmp_path: object
) -> None:
    with open_store(f"sqlite:///{tmp_path}/s.db") as store:
        with pytest.raises(ValueError, match=where):
            store.log_shadow_run(pair("q1", interleaved=shown))
        assert store.count("shadow_runs") == 0


# ---------------------------------------------------------------- shadow tests


RULE = {"method": "msprt", "min_queries": 50, "tau": 0.1}
GUARDS = {"latency_p95": {"max_relative_increase": 0.2}}


def test_a_shadow_test_keeps_its_rule_and_its_decisions(db_url: str) -> None:
    with open_store(db_url) as store, open_store(db_url, workspace="other") as other:
        started = store.start_shadow_test(
            "hybrid", "A", "B", "rr", RULE, GUARDS, alpha=0.05, actor="ann", at=T0
        )
        assert started.status == "running" and started.rule == RULE
        assert started.guardrails == GUARDS and started.started_at == T0
        assert store.shadow_test("hybrid") == started
        assert store.shadow_test("nope") is None and other.shadow_test("hybrid") is None
        store.log_shadow_decision("hybrid", "continue", {"p": 0.4, "n": 10}, at=T0 + timedelta(1))
        store.log_shadow_decision(
            "hybrid", "graduate", {"p": 0.01}, actor="bob", at=T0 + timedelta(2)
        )
        ended = store.shadow_test("hybrid")
        history = store.shadow_decisions("hybrid")
        # the same name is free in another workspace
        other.start_shadow_test("hybrid", "A", "C", "ndcg@10", RULE)
    assert ended is not None
    assert ended.status == "graduated" and ended.stopped_at == T0 + timedelta(2)
    assert [decision.decision for decision in history] == ["start", "continue", "graduate"]
    assert history[0].evidence == {"rule": RULE, "guardrails": GUARDS}
    assert history[0].actor == "ann" and history[2].actor == "bob"
    assert history[1].evidence == {"p": 0.4, "n": 10}


def test_shadow_test_mistakes_are_refused_with_a_clear_message(db_url: str) -> None:
    with open_store(db_url) as store:
        store.start_shadow_test("t", "A", "B", "rr", RULE)
        with pytest.raises(ConfigError, match="named 't' exists already"):
            store.start_shadow_test("t", "A", "C", "rr", RULE)
        with pytest.raises(ConfigError, match="control and treatment are both"):
            store.start_shadow_test("u", "A", "A", "rr", RULE)
        with pytest.raises(ConfigError, match="alpha must be in"):
            store.start_shadow_test("u", "A", "B", "rr", RULE, alpha=1.5)
        with pytest.raises(ConfigError, match="not storable as JSON"):
            store.start_shadow_test("u", "A", "B", "rr", {"tau": math.nan})
        with pytest.raises(ConfigError, match="no shadow test named 'nope'"):
            store.log_shadow_decision("nope", "stop", {})
        with pytest.raises(ConfigError, match="no shadow test named 'nope'"):
            store.shadow_decisions("nope")
        with pytest.raises(ConfigError, match="decision 'start' is not one of"):
            store.log_shadow_decision("t", "start", {})  # type: ignore[arg-type]
        store.log_shadow_decision("t", "stop", {})
        with pytest.raises(ConfigError, match="stopped, not running"):
            store.log_shadow_decision("t", "stop", {})
        store.log_shadow_decision("t", "rollback", {"why": "latency"})
        with pytest.raises(ConfigError, match="rolled_back already"):
            store.log_shadow_decision("t", "graduate", {})
        assert [test.name for test in store.shadow_tests()] == ["t"]
        assert store.shadow_test("t").status == "rolled_back"  # type: ignore[union-attr]


# ---------------------------------------------------------------- feature flags


def test_flags_keep_their_history_and_show_the_latest_state(db_url: str) -> None:
    with open_store(db_url) as store, open_store(db_url, workspace="other") as other:
        store.set_flag("memory", "B", 10, fallback="A", at=T0)
        store.set_flag("memory", "B", 50, fallback="A", at=T0 + timedelta(1))
        store.set_flag("embedder", "large", 100, at=T0)
        flags = store.flags()
        history = store.flag_history("memory")
        assert other.flags() == []
    assert [(flag.name, flag.variant, flag.percent) for flag in flags] == [
        ("embedder", "large", 100.0),
        ("memory", "B", 50.0),
    ]
    assert [flag.percent for flag in history] == [10.0, 50.0]
    assert history[0].fallback == "A" and history[0].updated_at == T0


@pytest.mark.parametrize("percent", [-1, 100.5, math.nan, True])
def test_a_flag_percent_outside_0_to_100_is_refused(percent: float, tmp_path: object) -> None:
    with open_store(f"sqlite:///{tmp_path}/s.db") as store:
        with pytest.raises(ConfigError, match="percent must be in"):
            store.set_flag("memory", "B", percent)
        assert store.flags() == []


# ---------------------------------------------------------------- session outcomes


def test_session_outcomes_round_trip(db_url: str) -> None:
    with open_store(db_url) as store:
        store.log_session_outcome("s1", success=True, note="fixed the bug", at=T0)
        store.log_session_outcome("s2", outcome=0.25, source="proxy", at=T0 + timedelta(1))
        store.log_session_outcome("s1", outcome=1.0, success=False, at=T0 + timedelta(2))
        every = store.session_outcomes()
        s1 = store.session_outcomes(["s1"])
    assert [(o.session_id, o.outcome, o.success) for o in every] == [
        ("s1", None, True),
        ("s2", 0.25, None),
        ("s1", 1.0, False),
    ]
    assert every[0].note == "fixed the bug" and every[1].source == "proxy"
    assert [o.recorded_at for o in s1] == [T0, T0 + timedelta(2)]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "give an outcome, a success, or both"),
        ({"outcome": math.inf}, "outcome must be a finite number"),
        ({"outcome": "0.5"}, "outcome must be a finite number"),
        ({"success": 1}, "success must be True or False"),
        ({"success": True, "source": "cli"}, "source must be sdk or proxy"),
    ],
)
def test_a_malformed_session_outcome_is_refused(
    kwargs: dict[str, object], message: str, tmp_path: object
) -> None:
    with open_store(f"sqlite:///{tmp_path}/s.db") as store:
        with pytest.raises(ValueError, match=message):
            store.log_session_outcome("s1", **kwargs)  # type: ignore[arg-type]
        assert store.session_outcomes() == []


# ---------------------------------------------------------------- m008 on a store at m007


def test_m008_upgrades_a_store_made_at_m007(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patched:
        patched.setattr(_migrations, "MIGRATIONS", _migrations.MIGRATIONS[:7])
        with open_store(db_url) as old, old._engine.begin() as connection:
            # a plain INSERT, as m007's writer made it (today's skips stored query ids,
            # which needs m012's key)
            row = {
                "workspace_id": "default",
                "query_id": "q-old",
                "control_results": '["a"]',
                "treatment_results": '["b"]',
                "created_at": T0,
                "control_error": None,
                "treatment_error": "timeout",
            }
            connection.execute(shadow_runs.insert().values(**row))
    from test_store import sql

    assert len(sql(db_url, "SELECT id FROM schema_migrations")) == 7
    with open_store(db_url) as store:
        [kept] = store.shadow_runs()
        store.start_shadow_test("t", "A", "B", "rr", RULE)
        store.set_flag("memory", "B", 5)
        store.log_session_outcome("s1", success=True)
    assert kept["query_id"] == "q-old" and kept["treatment_error"] == "timeout"
    assert kept["interleaved"] is None and kept["session_id"] is None
    assert sql(db_url, "SELECT id, name FROM schema_migrations ORDER BY id") == schema.MIGRATIONS


def test_prune_keeps_the_evidence_of_a_running_test(db_url: str) -> None:
    now = T0 + timedelta(days=100)
    with open_store(db_url) as store:
        for day in (1, 5, 10):
            store.log_shadow_run(pair(f"q{day}", at=T0 + timedelta(days=day)))
        store.start_shadow_test("t", "A", "B", "rr", RULE, at=T0 + timedelta(days=4))
        assert store.prune(now=now, shadow_days=30, dry_run=True)["shadow_runs"] == 1
        store.log_shadow_decision("t", "stop", {})  # stopped: its window is history now
        assert store.prune(now=now, shadow_days=30)["shadow_runs"] == 3
        assert store.shadow_tests() and store.shadow_decisions("t")  # kept whatever their age
