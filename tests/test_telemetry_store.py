"""The online telemetry in the store, on SQLite and PostgreSQL (``db_url`` runs each test on
both): query log, feedback and judgment round trips, idempotent re-delivery, judgment
upserts, CHECK constraints, golden queries, retention and workspaces."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy.exc import IntegrityError

from recallbench.store import (
    FEEDBACK_KINDS,
    JUDGMENT_SOURCES,
    FeedbackEvent,
    Judgment,
    QueryLogEntry,
    open_store,
)
from recallbench.store._engine import transaction
from recallbench.store._tables import shadow_runs

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
NOW = datetime(2025, 9, 1, 0, 0, tzinfo=UTC)


def entry(n: int, at: datetime = T0, **fields: object) -> QueryLogEntry:
    """Query ``q{n}`` at ``at`` with three results."""
    values: dict[str, object] = {
        "query_id": f"q{n}",
        "text": f"where did we put note {n}?",
        "created_at": at,
        "results": (f"m{n}a", f"m{n}b", f"m{n}c"),
    }
    values.update(fields)
    return QueryLogEntry(**values)  # type: ignore[arg-type]


def days_ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


def test_everything_logged_reads_back_equal(db_url: str) -> None:
    full = QueryLogEntry(
        query_id="a1b2",
        text="Qu'a dit Zoë du déploiement ? 🚀",
        created_at=datetime(2025, 3, 1, 14, 30, 15, 123456, tzinfo=timezone(timedelta(hours=2))),
        results=("m1", "m7", "m3"),
        intent="recall",
        mode="hybrid",
        session_id="s1",
        tool="search_memory",
        channels={"bm25": ("m1", "m3"), "vector": ("m7", "m1")},
        texts={"m1": "deploy on Fridays? no", "m7": "Zoë: ship it", "m3": "rollback plan"},
        latency_ms=12.5,
        trace_id="trace-9",
        golden=True,
        category="decisions",
    )
    bare = QueryLogEntry(query_id="bare", text="", created_at=datetime(2025, 3, 2, 8, 0))
    events = [
        FeedbackEvent("a1b2", "read_after_search", T0, doc_id="m7", rank=2, session_id="s1"),
        FeedbackEvent("a1b2", "re_search", T0 + timedelta(seconds=5)),
    ]
    graded = [
        Judgment("a1b2", "m7", 3, "manual", T0, annotator="ana", confidence=0.9),
        Judgment("a1b2", "m1", 0, "implicit", T0),
    ]
    with open_store(db_url) as store:
        assert store.log() is None  # nothing to write: no transaction
        store.log(queries=[full, bare], feedback=events, judgments=graded)
        logged = store.query_log()
        utc = datetime(2025, 3, 2, 8, 0, tzinfo=UTC)  # a naive time is taken as UTC
        assert logged == [full, replace(bare, created_at=utc)]  # oldest first
        assert logged[0].created_at.tzinfo == UTC  # the same instant, read back in UTC
        assert logged[0].channels == {"bm25": ("m1", "m3"), "vector": ("m7", "m1")}
        assert store.feedback() == events
        assert store.judgments() == sorted(graded, key=lambda j: (j.query_id, j.doc_id))
        assert store.judgments(source="manual") == [graded[0]]
        assert store.judgments(query_ids=["other"]) == []
        for table, rows in (("query_log", 2), ("feedback_events", 2), ("judgments", 2)):
            assert store.count(table) == rows


def test_non_finite_latency_is_stored_as_none(db_url: str) -> None:
    with open_store(db_url) as store:
        store.log([entry(1, latency_ms=float("nan")), entry(2, latency_ms=float("inf"))])
        assert [e.latency_ms for e in store.query_log()] == [None, None]


def test_query_log_window_order_and_limit(db_url: str) -> None:
    with open_store(db_url) as store:
        store.log([entry(3, T0 + timedelta(hours=2)), entry(1, T0), entry(2, T0)])
        store.log([entry(4, T0 + timedelta(hours=1))])
        ids = [e.query_id for e in store.query_log()]
        assert ids == ["q1", "q2", "q4", "q3"]  # by time, then logging order
        after = store.query_log(since=T0 + timedelta(hours=1))
        assert [e.query_id for e in after] == ["q4", "q3"]  # since is inclusive
        before = store.query_log(until=T0 + timedelta(hours=1))
        assert [e.query_id for e in before] == ["q1", "q2"]  # until is exclusive
        naive = store.query_log(since=datetime(2025, 3, 1, 13, 0))  # naive: UTC
        assert [e.query_id for e in naive] == ["q4", "q3"]
        assert [e.query_id for e in store.query_log(limit=2)] == ["q1", "q2"]


def test_a_redelivered_query_is_ignored(db_url: str) -> None:
    with open_store(db_url) as store:
        batch = [entry(1), entry(2)]
        store.log(batch)
        store.log([*batch, entry(3)])  # the SDK delivers a batch again, with one more
        store.log([entry(1, text="changed on the way")])
        assert [e.query_id for e in store.query_log()] == ["q1", "q2", "q3"]
        assert store.query_log()[0] == batch[0]  # the first delivery is kept
        store.log([entry(5), entry(5, text="same id twice in one batch")])
        assert store.query_log()[-1] == entry(5)
        assert store.count("query_log") == 4


def test_feedback_events_are_appended_and_filtered(db_url: str) -> None:
    with open_store(db_url) as store:
        many = [
            FeedbackEvent(f"q{n}", "scroll_past", T0 + timedelta(seconds=n % 7), doc_id="d")
            for n in range(1_200)
        ]
        store.log(feedback=many)
        wanted = [f"q{n}" for n in range(0, 1_200, 2)]  # several chunks of ids
        found = store.feedback(query_ids=wanted)
        assert sorted(e.query_id for e in found) == sorted(wanted)
        assert [e.created_at for e in found] == sorted(e.created_at for e in found)
        later = store.feedback(since=T0 + timedelta(seconds=6))
        assert len(later) == len([n for n in range(1_200) if n % 7 == 6])
        assert store.feedback(query_ids=[]) == []


def test_the_latest_judgment_wins_whatever_the_delivery_order(db_url: str) -> None:
    with open_store(db_url) as store:
        first = Judgment("q1", "d1", 1, "implicit", T0)
        store.log(judgments=[first])
        newer = Judgment("q1", "d1", 3, "implicit", T0 + timedelta(hours=1), confidence=0.7)
        store.log(judgments=[newer])
        assert store.judgments() == [newer]
        store.log(judgments=[first])  # an old one delivered late
        assert store.judgments() == [newer]
        same_time = Judgment("q1", "d1", 2, "implicit", newer.created_at, annotator="b")
        store.log(judgments=[same_time])  # a tie: the later write wins
        assert store.judgments() == [same_time]
        manual = Judgment("q1", "d1", 0, "manual", T0)  # another source: its own row
        twice = [
            Judgment("q2", "d1", 1, "bootstrapped", T0 + timedelta(minutes=2)),
            Judgment("q2", "d1", 2, "bootstrapped", T0 + timedelta(minutes=1)),
        ]  # the same key twice in one call: the latest is kept
        store.log(judgments=[manual, *twice])
        assert store.judgments() == [same_time, manual, twice[0]]
        assert store.count("judgments") == 3


@pytest.mark.parametrize(
    ("feedback", "judgments"),
    [
        ([FeedbackEvent("q1", "clicked", T0)], []),  # type: ignore[arg-type]
        ([], [Judgment("q1", "d", 4, "manual", T0)]),
        ([], [Judgment("q1", "d", -1, "manual", T0)]),
        ([], [Judgment("q1", "d", 2, "crowd", T0)]),  # type: ignore[arg-type]
    ],
    ids=["feedback kind", "grade 4", "grade -1", "source"],
)
def test_values_outside_the_checks_are_refused_and_nothing_is_written(
    db_url: str, feedback: list[FeedbackEvent], judgments: list[Judgment]
) -> None:
    with open_store(db_url) as store:
        with pytest.raises(IntegrityError):
            store.log([entry(1)], feedback, judgments)
        assert store.count("query_log") == 0  # one transaction: all or nothing
        assert store.count("feedback_events") == store.count("judgments") == 0


def test_every_declared_kind_and_source_and_grade_is_accepted(db_url: str) -> None:
    """The CHECK lists frozen in m002 accept every value the dataclasses declare."""
    with open_store(db_url) as store:
        store.log(
            feedback=[FeedbackEvent("q", kind, T0) for kind in FEEDBACK_KINDS],
            judgments=[
                Judgment("q", f"d{grade}", grade, source, T0)
                for source in JUDGMENT_SOURCES
                for grade in range(4)
            ],
        )
        assert {e.kind for e in store.feedback()} == set(FEEDBACK_KINDS)
        assert store.count("judgments") == 4 * len(JUDGMENT_SOURCES)


def test_set_golden_marks_and_categorises(db_url: str) -> None:
    with open_store(db_url) as store:
        store.log([entry(1, category="facts"), entry(2), entry(3)])
        assert store.set_golden(["q1", "q2", "q2", "never-logged"]) == 2
        golden = {e.query_id: (e.golden, e.category) for e in store.query_log()}
        assert golden == {"q1": (True, "facts"), "q2": (True, None), "q3": (False, None)}
        assert store.set_golden(["q2", "q3"], category="decisions") == 2
        golden = {e.query_id: (e.golden, e.category) for e in store.query_log()}
        assert golden["q2"] == golden["q3"] == (True, "decisions")
        assert store.set_golden([]) == 0
        assert store.set_golden([f"x{n}" for n in range(1_100)] + ["q1"]) == 1  # chunked


def test_prune_removes_old_telemetry_and_keeps_golden_judgments_and_history(
    db_url: str,
) -> None:
    from test_store import synthetic_report

    with open_store(db_url) as store:
        store.log(
            queries=[
                entry(1, days_ago(200)),
                entry(2, days_ago(91)),
                entry(3, days_ago(89)),
                entry(4, days_ago(365), golden=True),
            ],
            feedback=[
                FeedbackEvent("q1", "re_search", days_ago(200)),
                FeedbackEvent("q2", "reference", days_ago(90.5)),
                FeedbackEvent("q3", "reference", days_ago(10)),
                FeedbackEvent("q4", "validated_useful", days_ago(365)),  # of a golden query
            ],
            judgments=[Judgment("q1", "m1a", 2, "implicit", days_ago(200))],
        )
        run = store.record(synthetic_report(created_at=days_ago(400)))
        with transaction(store._engine, write=True) as connection:
            connection.execute(
                shadow_runs.insert(),
                [
                    {
                        "workspace_id": store.workspace,
                        "query_id": f"q{n}",
                        "control_results": "[]",
                        "treatment_results": "[]",
                        "created_at": days_ago(age),
                    }
                    for n, age in enumerate((31, 29, 45))
                ],
            )
        expected = {"query_log": 2, "feedback_events": 2, "shadow_runs": 2}
        before = {name: store.count(name) for name in expected}
        assert store.prune(now=NOW, dry_run=True) == expected
        assert {name: store.count(name) for name in expected} == before  # nothing removed
        assert store.prune(now=NOW) == expected
        assert [e.query_id for e in store.query_log()] == ["q4", "q3"]
        assert sorted(e.query_id for e in store.feedback()) == ["q3", "q4"]
        assert store.count("shadow_runs") == 1
        assert store.count("judgments") == 1  # judgments are kept
        assert store.get(run.id) == run  # evaluation results are kept
        assert store.prune(now=NOW) == dict.fromkeys(expected, 0)
        assert store.prune(now=NOW, query_log_days=0, feedback_days=0, shadow_days=0) == {
            "query_log": 1,
            "feedback_events": 1,
            "shadow_runs": 1,
        }
        assert [e.query_id for e in store.query_log()] == ["q4"]  # golden, whatever its age
        with pytest.raises(ValueError, match="negative"):
            store.prune(now=NOW, feedback_days=-1)


def test_workspaces_see_only_their_own_telemetry(db_url: str) -> None:
    with open_store(db_url, workspace="a") as a, open_store(db_url, workspace="b") as b:
        a.log([entry(1, days_ago(200))], [FeedbackEvent("q1", "reference", T0)])
        a.log(judgments=[Judgment("q1", "d", 1, "manual", T0)])
        b.log([entry(1, days_ago(200), text="b's own q1")])  # the same id in another space
        assert [e.text for e in b.query_log()] == ["b's own q1"]
        assert b.feedback() == [] and b.judgments() == []
        b.log(judgments=[Judgment("q1", "d", 3, "manual", T0 + timedelta(days=1))])
        assert [j.grade for j in a.judgments()] == [1]  # b's upsert did not touch a's row
        assert b.set_golden(["q1"]) == 1
        assert not a.query_log()[0].golden
        assert b.prune(now=NOW) == {"query_log": 0, "feedback_events": 0, "shadow_runs": 0}
        assert a.prune(now=NOW) == {"query_log": 1, "feedback_events": 1, "shadow_runs": 0}
        assert (a.count("query_log"), b.count("query_log")) == (0, 1)


def test_count_names_a_workspace_table() -> None:
    with open_store("sqlite://") as store, pytest.raises(ValueError, match="schema_migrations"):
        store.count("schema_migrations")


def test_store_prune_command(db_url: str) -> None:
    from click.testing import CliRunner

    from recallbench.cli import main

    now = datetime.now(UTC)
    with open_store(db_url, workspace="w") as store:
        store.log(
            [entry(1, now - timedelta(days=100)), entry(2, now - timedelta(days=10))],
            [FeedbackEvent("q1", "re_search", now - timedelta(days=40))],
        )
        shown = store.url

    def prune(*args: str) -> str:
        result = CliRunner().invoke(
            main, ["store", "prune", "--store", db_url, "--workspace", "w", *args]
        )
        assert result.exit_code == 0, result.output
        return result.output.replace(shown, "URL")

    assert prune("--dry-run") == (
        "URL (workspace 'w'): would remove\n"
        "  query log                1  (older than 90 days)\n"
        "  feedback events          0  (older than 90 days)\n"
        "  shadow runs              0  (older than 30 days)\n"
        "kept: golden queries and their feedback, judgments, A/B tests, evaluation results, "
        "running shadow tests' evidence, shadow decisions, flags, session outcomes "
        "(dry run: nothing removed)\n"
    )
    output = prune("--feedback-days", "30", "--query-log-days", "5")
    assert output.splitlines()[:3] == [
        "URL (workspace 'w'): removed",
        "  query log                2  (older than 5 days)",
        "  feedback events          1  (older than 30 days)",
    ]
    with open_store(db_url, workspace="w") as store:
        assert store.count("query_log") == store.count("feedback_events") == 0
    bad = CliRunner().invoke(main, ["store", "prune", "--store", db_url, "--shadow-days", "-1"])
    assert bad.exit_code == 2 and "-1" in bad.output
