"""Session outcomes from the SDK, session summaries, feature-flag bucketing and the
grouping of sessions by the variant that served them; on both store engines."""

from __future__ import annotations

import logging
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from recallbench.core import ConfigError
from recallbench.online._sessions import (
    outcomes_by_variant,
    session_summaries,
    summarise_sessions,
)
from recallbench.store import FeatureFlag, FeedbackEvent, Judgment, QueryLogEntry, open_store
from recallbench.telemetry import TelemetryLogger
from recallbench.telemetry._flags import bucket, flag_variant, variant_at

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


# ---------------------------------------------------------------- the SDK


def test_the_sdk_records_a_session_outcome_in_the_store(db_url: str) -> None:
    with TelemetryLogger(db_url, workspace="team") as logger:
        assert logger.log_session_outcome("s1", success=True, note="tests pass")
        assert logger.log_session_outcome("s2", 0.75)
        with pytest.raises(ValueError, match="give an outcome, a success, or both"):
            logger.log_session_outcome("s3")
        with pytest.raises(ValueError, match="outcome must be a finite number"):
            logger.log_session_outcome("s3", float("nan"))
    with open_store(db_url, workspace="team") as store:
        first, second = store.session_outcomes()
    assert (first.session_id, first.success, first.note, first.source) == (
        "s1",
        True,
        "tests pass",
        "sdk",
    )
    assert (second.outcome, second.success) == (0.75, None)


def test_a_store_failure_is_counted_not_raised(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with TelemetryLogger(f"sqlite:///{blocker}/store.db") as logger:
        with caplog.at_level(logging.WARNING, logger="recallbench.telemetry"):
            assert not logger.log_session_outcome("s1", success=False)
        assert logger.stats.errors == 1
    assert "outcome of session s1 was not recorded" in caplog.text


def test_a_sink_takes_outcomes_when_it_can() -> None:
    class Recording:
        def __init__(self) -> None:
            self.outcomes: list[tuple[Any, ...]] = []

        def write(self, *batch: Any) -> None:
            pass

        def log_session_outcome(self, *args: Any) -> None:
            self.outcomes.append(args)

    sink = Recording()
    with TelemetryLogger(sink=sink) as logger:
        assert logger.log_session_outcome("s1", 1.0, True, note="n")
    assert sink.outcomes == [("s1", 1.0, True, "n", "sdk")]
    plain = type("S", (), {"write": lambda *a: None})()
    with (
        TelemetryLogger(sink=plain) as logger,
        pytest.raises(ConfigError, match="has no log_session_outcome"),
    ):
        logger.log_session_outcome("s1", success=True)


# ---------------------------------------------------------------- summaries


def search(
    query_id: str, session: str | None, seconds: float, results: list[str], **kw: Any
) -> Any:
    return QueryLogEntry(
        query_id, f"text {query_id}", at(seconds), tuple(results), session_id=session, **kw
    )


def event(query_id: str, kind: str, seconds: float, doc: str | None = None) -> FeedbackEvent:
    return FeedbackEvent(query_id, kind, at(seconds), doc_id=doc)  # type: ignore[arg-type]


QUERIES = [
    search("a1", "A", 0, ["m1", "m2", "m3"], golden=True),
    search("a2", "A", 30, ["m4", "m1"]),
    search("a3", "A", 60, ["m9"], golden=True),
    search("b1", "B", 5, ["m1"]),
    search("x", None, 7, ["m1"]),  # no session: left out
]
FEEDBACK = [
    event("a1", "read_after_search", 10, "m2"),
    event("a1", "read_after_search", 12, "m2"),  # the same memory again
    event("a2", "read_after_search", 40, "m1"),
    event("a1", "re_search", 30),
    event("a2", "validated_useful", 45, "m1"),
    event("a3", "validated_not_useful", 90, "m9"),
    event("x", "read_after_search", 8, "m1"),
]
LABELS = [
    Judgment("a1", "m2", 2, "manual", T0),
    Judgment("a1", "m1", 3, "llm", T0),
    Judgment("a1", "m1", 0, "manual", T0),  # manual wins over the judge: m1 not relevant
    Judgment("a3", "m7", 1, "llm", T0),  # relevant, never returned: RR 0
]


def test_a_session_summary_counts_what_the_session_did() -> None:
    a, b = summarise_sessions(QUERIES, FEEDBACK, LABELS)
    assert (a.session_id, a.searches, a.memories_read) == ("A", 3, 2)
    assert (a.validated_useful, a.validated_not_useful, a.re_searches) == (1, 1, 1)
    assert a.re_search_rate == pytest.approx(1 / 3)
    assert a.duration_s == 90.0  # first search to the last validation
    assert a.golden_searches == 2 and a.mean_mrr == pytest.approx((1 / 2 + 0) / 2)
    assert (b.searches, b.memories_read, b.mean_mrr, b.duration_s) == (1, 0, None, 0.0)
    assert a.outcome is None and a.success is None
    assert a.to_dict()["started_at"] == T0.isoformat()


def test_sessions_from_the_store_carry_their_latest_outcome(db_url: str) -> None:
    with open_store(db_url) as store:
        store.log(queries=QUERIES, feedback=FEEDBACK, judgments=LABELS)
        store.log_session_outcome("A", success=False, at=at(100))
        store.log_session_outcome("A", outcome=0.9, success=True, at=at(120))
        a, b = session_summaries(store)
    assert (a.outcome, a.success, a.duration_s) == (0.9, True, 120.0)
    assert (b.outcome, b.success) == (None, None)
    assert a.mean_mrr == pytest.approx(0.25)


# ---------------------------------------------------------------- flags


def flag(
    percent: float, variant: str = "B", fallback: str | None = "A", when: float = 0
) -> FeatureFlag:
    return FeatureFlag("memory", variant, percent, fallback, at(when))


def test_a_flag_gives_a_unit_the_same_variant_every_time_and_the_planned_share() -> None:
    flags = [flag(30)]
    units = [f"session-{i}" for i in range(10_000)]
    first = [flag_variant(flags, "memory", unit) for unit in units]
    assert first == [flag_variant({"memory": flags[0]}, "memory", unit) for unit in units]
    share = Counter(first)["B"] / len(units)
    assert share == pytest.approx(0.30, abs=0.015)  # 3.3 standard errors
    assert set(first) == {"A", "B"}


def test_raising_the_percent_only_moves_units_into_the_variant() -> None:
    units = [f"u{i}" for i in range(2_000)]
    at_10 = {u for u in units if flag_variant([flag(10)], "memory", u) == "B"}
    at_50 = {u for u in units if flag_variant([flag(50)], "memory", u) == "B"}
    assert at_10 < at_50
    assert all(flag_variant([flag(100)], "memory", u) == "B" for u in units)
    assert all(flag_variant([flag(0)], "memory", u) == "A" for u in units)


def test_flags_bucket_independently_and_default_to_off() -> None:
    assert bucket("memory", "u1") != bucket("ranker", "u1")
    assert 0 <= bucket("memory", "u1") < 100
    assert flag_variant([], "memory", "u1") == "off"
    assert flag_variant([flag(0, fallback=None)], "memory", "u1") == "off"
    with pytest.raises(ConfigError, match="unit id must be a non-empty string"):
        flag_variant([flag(50)], "memory", "")


def test_a_session_gets_the_variant_of_the_flag_as_it_was_then() -> None:
    history = [flag(0, when=0), flag(100, when=60)]
    assert variant_at(history, "memory", "u1", at(30)) == "A"
    assert variant_at(history, "memory", "u1", at(60)) == "B"
    assert variant_at(history, "memory", "u1", at(-1)) == "off"


def test_outcomes_are_compared_per_variant() -> None:
    queries = [search(f"q{i}", f"s{i}", i, ["m1"]) for i in range(6)]
    from recallbench.store import SessionOutcome

    outcomes = [
        SessionOutcome(f"s{i}", at(100), outcome=float(i), success=i % 2 == 0) for i in range(5)
    ]
    summaries = summarise_sessions(queries, outcomes=outcomes)
    groups = outcomes_by_variant(summaries, lambda s: "B" if s.session_id in {"s0", "s1"} else "A")
    a, b = groups
    assert (a.variant, a.sessions, a.with_outcome) == ("A", 4, 3)  # s5 has no outcome
    assert a.success_rate == pytest.approx(2 / 3) and a.mean_outcome == pytest.approx(3.0)
    assert (b.variant, b.sessions, b.success_rate, b.mean_outcome) == ("B", 2, 0.5, 0.5)
    assert b.mean_searches == 1.0 and b.mean_mrr is None
