"""Between the telemetry dataclasses (``_telemetry``) and the store's rows, both ways."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, cast

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
    }


def feedback_event(row: RowMapping) -> FeedbackEvent:
    return FeedbackEvent(
        query_id=row["query_id"],
        kind=cast(FeedbackKind, row["kind"]),
        created_at=row["created_at"],
        doc_id=row["doc_id"],
        rank=row["rank"],
        session_id=row["session_id"],
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
