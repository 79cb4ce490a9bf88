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
    LargeBinary,
    MetaData,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
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
    Column("judge_model", Text),
    Column("judge_prompt", Text),
    Column("llm_labels", Integer),
    Column("judge_failure_rate", Float),
    Column("judge_unreliable", Boolean),
    Column("judge_tokens", Integer),
    Column("judge_cost", Float),
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

eval_run_statistics = Table(
    "eval_run_statistics",
    metadata,
    Column("run_id", RUN_ID, primary_key=True),
    Column("workspace_id", Text, nullable=False),
    Column("measure", Text, primary_key=True),
    Column("settings", Text, primary_key=True),
    Column("n", Integer, nullable=False),
    Column("low", Float),
    Column("high", Float),
    Column("small", Boolean, nullable=False),
    Column("reason", Text),
    Column("previous_run_id", RUN_ID),
    Column("change_n", Integer),
    Column("change_delta", Float),
    Column("change_p", Float),
)

query_log = Table(
    "query_log",
    metadata,
    Column("id", RUN_ID, primary_key=True, autoincrement=True),
    Column("workspace_id", Text, nullable=False),
    Column("query_id", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("intent", Text),
    Column("mode", Text),
    Column("session_id", Text),
    Column("tool", Text),
    Column("results", Text, nullable=False),
    Column("channels", Text, nullable=False),
    Column("texts", Text, nullable=False),
    Column("latency_ms", Float),
    Column("trace_id", Text),
    Column("created_at", UTCDateTime, nullable=False),
    Column("golden", Boolean, nullable=False),
    Column("category", Text),
    UniqueConstraint("workspace_id", "query_id", name="uq_query_log_query"),
)

feedback_events = Table(
    "feedback_events",
    metadata,
    Column("id", RUN_ID, primary_key=True, autoincrement=True),
    Column("workspace_id", Text, nullable=False),
    Column("query_id", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("doc_id", Text),
    Column("rank", Integer),
    Column("session_id", Text),
    Column("created_at", UTCDateTime, nullable=False),
    Column("event_id", Text),  # m012: the event's own id, unique per workspace
    UniqueConstraint("workspace_id", "event_id", name="uq_feedback_events_event"),
)

judgments = Table(
    "judgments",
    metadata,
    Column("id", RUN_ID, primary_key=True, autoincrement=True),
    Column("workspace_id", Text, nullable=False),
    Column("query_id", Text, nullable=False),
    Column("doc_id", Text, nullable=False),
    Column("grade", Integer, nullable=False),
    Column("source", Text, nullable=False),
    Column("annotator", Text),
    Column("confidence", Float),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("workspace_id", "query_id", "doc_id", "source", name="uq_judgments_judgment"),
)

ab_tests = Table(
    "ab_tests",
    metadata,
    Column("id", RUN_ID, primary_key=True, autoincrement=True),
    Column("workspace_id", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("control", Text, nullable=False),
    Column("treatment", Text, nullable=False),
    Column("measure", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("sprt_state", Text),
    Column("beta_state", Text),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("decided_at", UTCDateTime),
    Column("decision", Text),
)

shadow_runs = Table(
    "shadow_runs",
    metadata,
    Column("id", RUN_ID, primary_key=True, autoincrement=True),
    Column("workspace_id", Text, nullable=False),
    Column("ab_test_id", RUN_ID),
    Column("query_id", Text, nullable=False),
    Column("control_results", Text, nullable=False),
    Column("treatment_results", Text, nullable=False),
    Column("control_latency_ms", Float),
    Column("treatment_latency_ms", Float),
    Column("kendall_tau", Float),
    Column("jaccard", Float),
    Column("top1_changed", Boolean),
    Column("created_at", UTCDateTime, nullable=False),
    Column("control_error", Text),  # m007
    Column("treatment_error", Text),  # m007
    Column("interleaved", Text),  # m008: JSON [[doc_id, team], ...]
    Column("session_id", Text),  # m008
    Column("control", Text),  # m008: the control's profile
    Column("treatment", Text),  # m008: the treatment's profile
    Column("interleaved_credited", Integer),  # m010: leading items of interleaved credited
    Column("query_key", Text),  # m014: the key of the searched text, the query unit
    UniqueConstraint("workspace_id", "query_id", name="uq_shadow_runs_query"),  # m012
)

shadow_tests = Table(
    "shadow_tests",
    metadata,
    Column("id", RUN_ID, primary_key=True, autoincrement=True),
    Column("workspace_id", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("control", Text, nullable=False),
    Column("treatment", Text, nullable=False),
    Column("measure", Text, nullable=False),
    Column("guardrails", Text, nullable=False),
    Column("rule", Text, nullable=False),
    Column("alpha", Float, nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("stopped_at", UTCDateTime),
    Column("status", Text, nullable=False),
    UniqueConstraint("workspace_id", "name", name="uq_shadow_tests_name"),
)

shadow_checkpoints = Table(  # m016: a cache of each test's progress (online._shadow_progress)
    "shadow_checkpoints",
    metadata,
    Column("test_id", RUN_ID, primary_key=True, autoincrement=False),
    Column("workspace_id", Text, nullable=False),
    Column("covered_until", UTCDateTime, nullable=False),
    Column("marks", Text, nullable=False),
    Column("progress", LargeBinary, nullable=False),
    Column("written_at", UTCDateTime, nullable=False),
)

shadow_decisions = Table(
    "shadow_decisions",
    metadata,
    Column("id", RUN_ID, primary_key=True, autoincrement=True),
    Column("workspace_id", Text, nullable=False),
    Column("test_id", RUN_ID, nullable=False),
    Column("at", UTCDateTime, nullable=False),
    Column("decision", Text, nullable=False),
    Column("evidence", Text, nullable=False),
    Column("actor", Text),
)

feature_flags = Table(
    "feature_flags",
    metadata,
    Column("id", RUN_ID, primary_key=True, autoincrement=True),
    Column("workspace_id", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("variant", Text, nullable=False),
    Column("percent", Float, nullable=False),
    Column("fallback", Text),
    Column("updated_at", UTCDateTime, nullable=False),
)

session_outcomes = Table(
    "session_outcomes",
    metadata,
    Column("id", RUN_ID, primary_key=True, autoincrement=True),
    Column("workspace_id", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("outcome", Float),
    Column("success", Boolean),
    Column("note", Text),
    Column("recorded_at", UTCDateTime, nullable=False),
    Column("source", Text, nullable=False),
)

judge_cache = Table(
    "judge_cache",
    metadata,
    Column("workspace_id", Text, primary_key=True),
    Column("cache_key", Text, primary_key=True),
    Column("task", Text, nullable=False),
    Column("prompt_version", Text, nullable=False),
    Column("model", Text, nullable=False),
    Column("params", Text, nullable=False),
    Column("input_sha256", Text, nullable=False),
    Column("response", Text, nullable=False),
    Column("parsed", Text),
    Column("raw", Text),
    Column("value", Text),
    Column("score", Float),
    Column("failure", Text),
    Column("answered_by", Text),
    Column("tokens_in", Integer),
    Column("tokens_out", Integer),
    Column("latency_ms", Float),
    Column("cost", Float),
    Column("created_at", UTCDateTime, nullable=False),
)

pairwise_preferences = Table(
    "pairwise_preferences",
    metadata,
    Column("id", RUN_ID, primary_key=True, autoincrement=True),
    Column("workspace_id", Text, nullable=False),
    Column("item", Text, nullable=False),
    Column("query_text", Text, nullable=False),
    Column("first_label", Text, nullable=False),
    Column("first_results", Text, nullable=False),
    Column("second_label", Text, nullable=False),
    Column("second_results", Text, nullable=False),
    Column("preferred", Text, nullable=False),
    Column("shown", Text, nullable=False),
    Column("annotator", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("workspace_id", "item", "annotator", name="uq_pairwise_preference"),
)

annotation_labels = Table(
    "annotations",
    metadata,
    Column("id", RUN_ID, primary_key=True, autoincrement=True),
    Column("workspace_id", Text, nullable=False),
    Column("query_id", Text, nullable=False),
    Column("doc_id", Text, nullable=False),
    Column("annotator", Text, nullable=False),
    Column("grade", Integer),  # NULL: withdrawn
    Column("version", Integer, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    UniqueConstraint(
        "workspace_id", "query_id", "doc_id", "annotator", name="uq_annotations_label"
    ),
)

adjudications = Table(
    "adjudications",
    metadata,
    Column("id", RUN_ID, primary_key=True, autoincrement=True),
    Column("workspace_id", Text, nullable=False),
    Column("query_id", Text, nullable=False),
    Column("doc_id", Text, nullable=False),
    Column("adjudicator", Text, nullable=False),
    Column("grade", Integer),  # NULL: withdrawn
    Column("version", Integer, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    UniqueConstraint("workspace_id", "query_id", "doc_id", name="uq_adjudications_pair"),
)

annotation_events = Table(
    "annotation_events",
    metadata,
    Column("id", RUN_ID, primary_key=True, autoincrement=True),
    Column("workspace_id", Text, nullable=False),
    Column("query_id", Text, nullable=False),
    Column("doc_id", Text, nullable=False),
    Column("annotator", Text, nullable=False),
    Column("action", Text, nullable=False),
    Column("adjudication", Boolean, nullable=False),
    Column("old_grade", Integer),
    Column("new_grade", Integer),
    Column("created_at", UTCDateTime, nullable=False),
)

WORKSPACE_TABLES = {
    table.name: table
    for table in (
        eval_runs,
        eval_measures,
        eval_queries,
        eval_query_values,
        query_log,
        feedback_events,
        judgments,
        ab_tests,
        shadow_runs,
        judge_cache,
        pairwise_preferences,
        shadow_tests,
        shadow_checkpoints,
        shadow_decisions,
        feature_flags,
        session_outcomes,
        annotation_labels,
        adjudications,
        annotation_events,
    )
}
"""Every table that holds workspace rows, by name (``Store.count`` accepts these)."""
