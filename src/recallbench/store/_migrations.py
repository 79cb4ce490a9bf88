"""The store's schema, as numbered migrations.

APPEND ONLY. A migration that has run on someone's database must never change: fix or
extend the schema with a new function ``mNNN_what(connection)`` appended to
``MIGRATIONS`` (numbers consecutive from 1). Each one runs once, in its own transaction,
and is recorded in ``schema_migrations`` (see ``_migrate``). Each migration declares the
tables it creates in its own ``MetaData``, frozen as they were, and only generic types, so
one definition serves SQLite and PostgreSQL. ``tests/test_store.py`` asserts the exact
resulting schema: a change here must change that test too.

Every table carries ``workspace_id`` so that one database can hold several teams'
or projects' data; ``eval_`` tables hold evaluation results (the history the gate reads).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    false,
)

Migration = Callable[[Connection], None]

RUN_ID = BigInteger().with_variant(Integer(), "sqlite")
"""64-bit ids on PostgreSQL; SQLite autoincrements only an ``INTEGER PRIMARY KEY``."""


def _workspace() -> Column[str]:
    return Column("workspace_id", Text, nullable=False, server_default="default")


def _run_fk() -> Column[int]:
    return Column("run_id", RUN_ID, ForeignKey("eval_runs.id", ondelete="CASCADE"), nullable=False)


def m001_history(connection: Connection) -> None:
    """Evaluation history: one row per run, its measure means, its queries and values."""
    metadata = MetaData()
    Table(
        "eval_runs",
        metadata,
        Column("id", RUN_ID, primary_key=True, autoincrement=True),
        _workspace(),
        Column("system", Text, nullable=False),
        Column("system_settings", Text, nullable=False),  # JSON
        Column("dataset_name", Text, nullable=False),
        Column("dataset_version", Text, nullable=False),
        Column("dataset_sha256", Text, nullable=False),
        Column("dataset_loader", Text),
        Column("relevance_threshold", Integer, nullable=False),
        Column("k", Integer),
        Column("recallbench_version", Text, nullable=False),
        Column("git_revision", Text),
        Column("created_at", DateTime(timezone=True), nullable=False),
        Column("recorded_at", DateTime(timezone=True), nullable=False),
        Column("accepted", Boolean, nullable=False, server_default=false()),
        Column("accepted_at", DateTime(timezone=True)),
        Column("queries", Integer, nullable=False),
        Column("evaluated", Integer, nullable=False),
        Column("failed", Integer, nullable=False),
        Column("missing", Integer, nullable=False),
        Column("no_relevant", Integer, nullable=False),
        Column("latency_p50", Float),
        Column("latency_p95", Float),
        Column("latency_p99", Float),
        Column("source", Text),
        Column("rules", Text, nullable=False),  # JSON
        Index("ix_eval_runs_series", "workspace_id", "system", "dataset_sha256", "created_at"),
        sqlite_autoincrement=True,  # never reuse the id of a deleted run
    )
    Table(
        "eval_measures",
        metadata,
        _run_fk(),
        _workspace(),
        Column("measure", Text, nullable=False),
        Column("mean", Float),
        Column("higher_is_better", Boolean, nullable=False),
        Column("position", Integer, nullable=False),
        PrimaryKeyConstraint("run_id", "measure"),
    )
    Table(
        "eval_queries",
        metadata,
        _run_fk(),
        _workspace(),
        Column("query_id", Text, nullable=False),
        Column("position", Integer, nullable=False),
        Column("category", Text),
        Column("intent", Text),
        Column("status", Text, nullable=False),
        Column("latency_ms", Float),
        PrimaryKeyConstraint("run_id", "query_id"),
        sqlite_with_rowid=False,
    )
    Table(
        "eval_query_values",
        metadata,
        _run_fk(),
        _workspace(),
        Column("query_id", Text, nullable=False),
        Column("measure", Text, nullable=False),
        Column("value", Float),
        PrimaryKeyConstraint("run_id", "query_id", "measure"),
        sqlite_with_rowid=False,  # rows kept in the key's b-tree: a third less disk
    )
    metadata.create_all(connection)


MIGRATIONS: list[Migration] = [m001_history]
"""In order; append only."""
