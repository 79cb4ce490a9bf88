"""The tables as the code reads and writes them today (the schema after every migration).

Kept apart from ``_migrations`` on purpose: a migration freezes a table as it was created,
this module follows the latest state. The round-trip tests catch any drift between them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Dialect,
    Float,
    Integer,
    MetaData,
    Table,
    Text,
    TypeDecorator,
)

from recallbench.store._migrations import RUN_ID


class UTCDateTime(TypeDecorator[datetime]):
    """Timestamps stored in UTC and read back tz-aware: SQLite keeps no time zone, so a
    naive value read from it is UTC by construction (a naive value written is taken as UTC)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else as_utc(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        return None if value is None else as_utc(value)


def as_utc(value: datetime) -> datetime:
    """``value`` in UTC; a naive value is taken to be UTC already."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


metadata = MetaData()

eval_runs = Table(
    "eval_runs",
    metadata,
    Column("id", RUN_ID, primary_key=True, autoincrement=True),
    Column("workspace_id", Text, nullable=False),
    Column("system", Text, nullable=False),
    Column("system_settings", Text, nullable=False),
    Column("dataset_name", Text, nullable=False),
    Column("dataset_version", Text, nullable=False),
    Column("dataset_sha256", Text, nullable=False),
    Column("dataset_loader", Text),
    Column("relevance_threshold", Integer, nullable=False),
    Column("k", Integer),
    Column("recallbench_version", Text, nullable=False),
    Column("git_revision", Text),
    Column("created_at", UTCDateTime, nullable=False),
    Column("recorded_at", UTCDateTime, nullable=False),
    Column("accepted", Boolean, nullable=False),
    Column("accepted_at", UTCDateTime),
    Column("queries", Integer, nullable=False),
    Column("evaluated", Integer, nullable=False),
    Column("failed", Integer, nullable=False),
    Column("missing", Integer, nullable=False),
    Column("no_relevant", Integer, nullable=False),
    Column("latency_p50", Float),
    Column("latency_p95", Float),
    Column("latency_p99", Float),
    Column("source", Text),
    Column("rules", Text, nullable=False),
)

eval_measures = Table(
    "eval_measures",
    metadata,
    Column("run_id", RUN_ID, primary_key=True),
    Column("workspace_id", Text, nullable=False),
    Column("measure", Text, primary_key=True),
    Column("mean", Float),
    Column("higher_is_better", Boolean, nullable=False),
    Column("position", Integer, nullable=False),
)

eval_queries = Table(
    "eval_queries",
    metadata,
    Column("run_id", RUN_ID, primary_key=True),
    Column("workspace_id", Text, nullable=False),
    Column("query_id", Text, primary_key=True),
    Column("position", Integer, nullable=False),
    Column("category", Text),
    Column("intent", Text),
    Column("status", Text, nullable=False),
    Column("latency_ms", Float),
)

eval_query_values = Table(
    "eval_query_values",
    metadata,
    Column("run_id", RUN_ID, primary_key=True),
    Column("workspace_id", Text, nullable=False),
    Column("query_id", Text, primary_key=True),
    Column("measure", Text, primary_key=True),
    Column("value", Float),
)
