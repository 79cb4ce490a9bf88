"""Between the telemetry dataclasses (``_telemetry``) and the store's rows, both ways."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, cast

from sqlalchemy import RowMapping

from recallbench.store._rows import Row, finite
from recallbench.store._tables import as_utc
from recallbench.store._telemetry import (
    FeedbackEvent,
    FeedbackKind,
    Judgment,
    JudgmentSource,
    QueryLogEntry,
)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def query_row(entry: QueryLogEntry, workspace: str) -> Row:
    return {
        "workspace_id": workspace,
        "query_id": entry.query_id,
        "text": entry.text,
        "intent": entry.intent,
        "mode": entry.mode,
        "session_id": entry.session_id,
        "tool": entry.tool,
        "results": _json(list(entry.results)),
        "channels": _json({name: list(ids) for name, ids in entry.channels.items()}),
        "texts": _json(entry.texts),
        "latency_ms": finite(entry.latency_ms),
        "trace_id": entry.trace_id,
        "created_at": as_utc(entry.created_at),
        "golden": entry.golden,
        "category": entry.category,
    }


def query_entry(row: RowMapping) -> QueryLogEntry:
    channels: dict[str, list[str]] = json.loads(row["channels"])
    return QueryLogEntry(
        query_id=row["query_id"],
        text=row["text"],
        created_at=row["created_at"],
        results=tuple(json.loads(row["results"])),
        intent=row["intent"],
        mode=row["mode"],
        session_id=row["session_id"],
        tool=row["tool"],
        channels={name: tuple(ids) for name, ids in channels.items()},
        texts=json.loads(row["texts"]),
        latency_ms=row["latency_ms"],
        trace_id=row["trace_id"],
        golden=bool(row["golden"]),
        category=row["category"],
    )


def feedback_row(event: FeedbackEvent, workspace: str) -> Row:
    return {
        "workspace_id": workspace,
        "query_id": event.query_id,
        "kind": event.kind,
        "doc_id": event.doc_id,
        "rank": event.rank,
        "session_id": event.session_id,
        "created_at": as_utc(event.created_at),
        "event_id": event.event_id,
    }


def feedback_event(row: RowMapping) -> FeedbackEvent:
    return FeedbackEvent(
        query_id=row["query_id"],
        kind=cast(FeedbackKind, row["kind"]),
        created_at=row["created_at"],
        doc_id=row["doc_id"],
        rank=row["rank"],
        session_id=row["session_id"],
        event_id=row["event_id"],
    )


def judgment_rows(judgments: Iterable[Judgment], workspace: str) -> list[Row]:
    """One row per (query, doc, source): the latest ``created_at`` wins, the later one in
    the sequence on a tie. (PostgreSQL refuses an upsert that meets the same key twice in
    one statement, so duplicates go before the database sees them.)"""
    latest: dict[tuple[str, str, str], Judgment] = {}
    for judgment in judgments:
        key = (judgment.query_id, judgment.doc_id, judgment.source)
        kept = latest.get(key)
        if kept is None or as_utc(judgment.created_at) >= as_utc(kept.created_at):
            latest[key] = judgment
    return [
        {
            "workspace_id": workspace,
            "query_id": judgment.query_id,
            "doc_id": judgment.doc_id,
            "grade": judgment.grade,
            "source": judgment.source,
            "annotator": judgment.annotator,
            "confidence": finite(judgment.confidence),
            "created_at": as_utc(judgment.created_at),
        }
        for judgment in latest.values()
    ]


def judgment(row: RowMapping) -> Judgment:
    return Judgment(
        query_id=row["query_id"],
        doc_id=row["doc_id"],
        grade=row["grade"],
        source=cast(JudgmentSource, row["source"]),
        created_at=row["created_at"],
        annotator=row["annotator"],
        confidence=row["confidence"],
    )


def cutoff(now: datetime, days: int) -> datetime:
    """``now`` minus ``days`` whole days, in UTC."""
    if days < 0:
        raise ValueError(f"a retention of {days} days is negative")
    return as_utc(now) - timedelta(days=days)


def unique(values: Sequence[str]) -> list[str]:
    """``values`` without repeats, first occurrence order."""
    return list(dict.fromkeys(values))


# ---------------------------------------------------------------- shadow tests (m008)

ShadowTestStatus = Literal["running", "stopped", "graduated", "rolled_back"]
SHADOW_TEST_STATUSES: tuple[ShadowTestStatus, ...] = (
    "running",
    "stopped",
    "graduated",
    "rolled_back",
)
ShadowDecisionKind = Literal["start", "continue", "graduate", "rollback", "stop"]
SHADOW_DECISIONS: tuple[ShadowDecisionKind, ...] = (
    "start",
    "continue",
    "graduate",
    "rollback",
    "stop",
)
OutcomeSource = Literal["sdk", "proxy"]
OUTCOME_SOURCES: tuple[OutcomeSource, ...] = ("sdk", "proxy")
TEAMS = ("control", "treatment")
"""The teams of a team-draft interleaving, as ``shadow_runs.interleaved`` names them."""


@dataclass(frozen=True, slots=True)
class ShadowTest:
    """A named shadow test: control against treatment, with the graduation rule and the
    guardrails fixed when it started (JSON objects, as the decision module wrote them)."""

    id: int
    name: str
    control: str
    treatment: str
    measure: str
    """The primary paired measure the rule tests."""
    guardrails: dict[str, Any]
    """Guardrail name -> its non-inferiority margin (and how it is read)."""
    rule: dict[str, Any]
    """The graduation rule: method, minimum queries, SRM check, ... fixed at the start."""
    alpha: float
    started_at: datetime
    stopped_at: datetime | None
    status: ShadowTestStatus


@dataclass(frozen=True, slots=True)
class ShadowDecision:
    """One decision taken on a shadow test, with the evidence it was taken on."""

    test: str
    at: datetime
    decision: ShadowDecisionKind
    evidence: dict[str, Any]
    actor: str | None = None


@dataclass(frozen=True, slots=True)
class FeatureFlag:
    """A feature flag's state: ``percent`` of the units (by a hash of the unit's id) get
    ``variant``, the others ``fallback`` (None: the flag is off for them)."""

    name: str
    variant: str
    percent: float
    fallback: str | None
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class SessionOutcome:
    """A session's task outcome: a number, a success, or both, with a note."""

    session_id: str
    recorded_at: datetime
    outcome: float | None = None
    success: bool | None = None
    note: str | None = None
    source: OutcomeSource = "sdk"


def interleaved_json(value: Any) -> str | None:
    """``shadow_runs.interleaved`` from a sequence of ``(doc_id, team)`` (None stays None);
    ValueError, located, for a pair that is not (str, control|treatment)."""
    if value is None:
        return None
    pairs = []
    for at, pair in enumerate(value):
        if (
            not isinstance(pair, (list, tuple))
            or len(pair) != 2
            or not isinstance(pair[0], str)
            or pair[1] not in TEAMS
        ):
            raise ValueError(
                f"interleaved[{at}]: expected (doc_id, 'control' | 'treatment'), got {pair!r}"
            )
        pairs.append([pair[0], pair[1]])
    return _json(pairs)


def shadow_test(row: RowMapping) -> ShadowTest:
    return ShadowTest(
        id=int(row["id"]),
        name=row["name"],
        control=row["control"],
        treatment=row["treatment"],
        measure=row["measure"],
        guardrails=json.loads(row["guardrails"]),
        rule=json.loads(row["rule"]),
        alpha=float(row["alpha"]),
        started_at=row["started_at"],
        stopped_at=row["stopped_at"],
        status=cast(ShadowTestStatus, row["status"]),
    )


def shadow_decision(row: RowMapping, test: str) -> ShadowDecision:
    return ShadowDecision(
        test=test,
        at=row["at"],
        decision=cast(ShadowDecisionKind, row["decision"]),
        evidence=json.loads(row["evidence"]),
        actor=row["actor"],
    )


def feature_flag(row: RowMapping) -> FeatureFlag:
    return FeatureFlag(
        name=row["name"],
        variant=row["variant"],
        percent=float(row["percent"]),
        fallback=row["fallback"],
        updated_at=row["updated_at"],
    )


def session_outcome(row: RowMapping) -> SessionOutcome:
    return SessionOutcome(
        session_id=row["session_id"],
        recorded_at=row["recorded_at"],
        outcome=row["outcome"],
        success=None if row["success"] is None else bool(row["success"]),
        note=row["note"],
        source=cast(OutcomeSource, row["source"]),
    )


def evidence_json(value: Mapping[str, Any]) -> str:
    """A JSON object of evidence or rule: NaN and infinities refused (the JSON would not be
    portable), keys kept in their order."""
    try:
        return json.dumps(dict(value), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError as error:
        raise ValueError(f"not storable as JSON: {error}") from None


def check_session_outcome(
    session_id: object, outcome: object, success: object, source: object = "sdk"
) -> None:
    """ValueError, naming the argument, unless ``session_id`` is a non-empty string, at
    least one of ``outcome`` (a finite number) and ``success`` (a bool) is given, and
    ``source`` is ``sdk`` or ``proxy``."""
    if not isinstance(session_id, str) or not session_id:
        raise ValueError(f"session_id must be a non-empty string, got {session_id!r}")
    if outcome is None and success is None:
        raise ValueError(f"session {session_id}: give an outcome, a success, or both")
    if outcome is not None and (
        isinstance(outcome, bool)
        or not isinstance(outcome, (int, float))
        or not math.isfinite(outcome)
    ):
        raise ValueError(f"session {session_id}: outcome must be a finite number, got {outcome!r}")
    if success is not None and not isinstance(success, bool):
        raise ValueError(f"session {session_id}: success must be True or False, got {success!r}")
    if source not in OUTCOME_SOURCES:
        raise ValueError(f"session {session_id}: source must be sdk or proxy, got {source!r}")
