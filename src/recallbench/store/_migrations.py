"""The store's schema, as numbered migrations.

APPEND ONLY. A migration that has run on someone's database must never change: fix or
extend the schema with a new function ``mNNN_what(connection)`` appended to
``MIGRATIONS`` (numbers consecutive from 1). Each one runs once, in its own transaction,
and is recorded in ``schema_migrations`` (see ``_migrate``). Each migration declares the
tables it creates in its own ``MetaData``, frozen as they were, and only generic types, so
one definition serves SQLite and PostgreSQL. ``tests/test_store.py`` asserts the exact
resulting schema on SQLite and PostgreSQL (written out in ``tests/store_schema.py``): a
change here must change that file too.

Every table carries ``workspace_id`` so that one database can hold several teams'
or projects' data; ``eval_`` tables hold evaluation results (the history the gate reads).

The module is over 500 lines because it is one concept that reads better whole: the
schema's history, each migration frozen in order beside the column helpers they share (a
split would part a migration from what it was written against). The runner is apart
(``_migrate``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Connection,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    false,
    select,
)
from sqlalchemy import inspect as inspect_db
from sqlalchemy import text as sql_text

from recallbench.core._errors import ConfigError

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


def _id() -> Column[int]:
    return Column("id", RUN_ID, primary_key=True, autoincrement=True)


def _created_at() -> Column[datetime]:
    return Column("created_at", DateTime(timezone=True), nullable=False)


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(value) for value in values)})"


def m002_telemetry(connection: Connection) -> None:
    """Online telemetry: the query log, feedback events, graded judgments, and the state of
    A/B tests with their shadow runs. JSON columns are TEXT (one type for both databases).

    The CHECK lists are written out here, frozen: widening ``FEEDBACK_KINDS`` or
    ``JUDGMENT_SOURCES`` later needs a new migration."""
    feedback_kinds = (
        "read_after_search",
        "re_search",
        "scroll_past",
        "reference",
        "validated_useful",
        "validated_not_useful",
    )
    judgment_sources = ("manual", "implicit", "bootstrapped", "validated")
    metadata = MetaData()
    Table(
        "query_log",
        metadata,
        _id(),
        _workspace(),
        Column("query_id", Text, nullable=False),
        Column("text", Text, nullable=False),
        Column("intent", Text),
        Column("mode", Text),
        Column("session_id", Text),
        Column("tool", Text),
        Column("results", Text, nullable=False),  # JSON: ranked ids
        Column("channels", Text, nullable=False),  # JSON: channel -> ids
        Column("texts", Text, nullable=False),  # JSON: id -> text
        Column("latency_ms", Float),
        Column("trace_id", Text),
        _created_at(),
        Column("golden", Boolean, nullable=False, server_default=false()),
        Column("category", Text),
        UniqueConstraint("workspace_id", "query_id", name="uq_query_log_query"),
        Index("ix_query_log_created", "workspace_id", "created_at"),
        Index("ix_query_log_session", "workspace_id", "session_id"),
    )
    Table(
        "feedback_events",
        metadata,
        _id(),
        _workspace(),
        Column("query_id", Text, nullable=False),
        Column("kind", Text, nullable=False),
        Column("doc_id", Text),
        Column("rank", Integer),
        Column("session_id", Text),
        _created_at(),
        CheckConstraint(_one_of("kind", feedback_kinds), name="ck_feedback_events_kind"),
        Index("ix_feedback_events_query", "workspace_id", "query_id"),
    )
    _judgments(metadata, "judgments", judgment_sources)
    Table(
        "ab_tests",
        metadata,
        _id(),
        _workspace(),
        Column("name", Text, nullable=False),
        Column("control", Text, nullable=False),
        Column("treatment", Text, nullable=False),
        Column("measure", Text, nullable=False),
        Column("status", Text, nullable=False),
        Column("sprt_state", Text),  # JSON
        Column("beta_state", Text),  # JSON
        _created_at(),
        Column("updated_at", DateTime(timezone=True), nullable=False),
        Column("decided_at", DateTime(timezone=True)),
        Column("decision", Text),
        UniqueConstraint("workspace_id", "name", name="uq_ab_tests_name"),
    )
    Table(
        "shadow_runs",
        metadata,
        _id(),
        _workspace(),
        Column("ab_test_id", RUN_ID, ForeignKey("ab_tests.id", ondelete="CASCADE")),
        Column("query_id", Text, nullable=False),
        Column("control_results", Text, nullable=False),  # JSON: ranked ids
        Column("treatment_results", Text, nullable=False),  # JSON: ranked ids
        Column("control_latency_ms", Float),
        Column("treatment_latency_ms", Float),
        Column("kendall_tau", Float),
        Column("jaccard", Float),
        Column("top1_changed", Boolean),
        _created_at(),
        Index("ix_shadow_runs_created", "workspace_id", "created_at"),
        Index("ix_shadow_runs_ab_test", "ab_test_id", "created_at"),
    )
    metadata.create_all(connection)


def _judgments(metadata: MetaData, name: str, sources: tuple[str, ...]) -> Table:
    """The ``judgments`` table as m002 made it, under ``name`` and allowing ``sources`` (m004
    rebuilds it on SQLite with one more source). Frozen: later changes are new migrations."""
    return Table(
        name,
        metadata,
        _id(),
        _workspace(),
        Column("query_id", Text, nullable=False),
        Column("doc_id", Text, nullable=False),
        Column("grade", Integer, nullable=False),
        Column("source", Text, nullable=False),
        Column("annotator", Text),
        Column("confidence", Float),
        _created_at(),
        CheckConstraint("grade BETWEEN 0 AND 3", name="ck_judgments_grade"),
        CheckConstraint(_one_of("source", sources), name="ck_judgments_source"),
        UniqueConstraint(
            "workspace_id", "query_id", "doc_id", "source", name="uq_judgments_judgment"
        ),
    )


def m003_judge_cache(connection: Connection) -> None:
    """The judge cache: one row per judgment a model gave, keyed by the sha256 of (task,
    prompt version, model, parameters, input), with the answer as it came (so that a replay
    parses it again exactly), the value read from it, and what it cost."""
    metadata = MetaData()
    Table(
        "judge_cache",
        metadata,
        _workspace(),
        Column("cache_key", Text, nullable=False),  # sha256 hex
        Column("task", Text, nullable=False),
        Column("prompt_version", Text, nullable=False),
        Column("model", Text, nullable=False),  # as asked for (part of the key)
        Column("params", Text, nullable=False),  # JSON, canonical
        Column("input_sha256", Text, nullable=False),
        Column("response", Text, nullable=False),  # the answer text
        Column("parsed", Text),  # JSON: the answer as the provider parsed it
        Column("raw", Text),  # JSON: the provider's response body
        Column("value", Text),  # JSON: the task's value; NULL when it did not parse
        Column("score", Float),  # NULL when it did not parse
        Column("failure", Text),  # why it did not parse
        Column("answered_by", Text),  # the model as the server named it
        Column("tokens_in", Integer),
        Column("tokens_out", Integer),
        Column("latency_ms", Float),
        Column("cost", Float),
        _created_at(),
        PrimaryKeyConstraint("workspace_id", "cache_key"),
        Index("ix_judge_cache_task", "workspace_id", "task", "prompt_version", "model"),
    )
    metadata.create_all(connection)


def m004_llm_judgments(connection: Connection) -> None:
    """Judgments may come from an LLM judge: ``judgments.source`` also allows ``llm``.

    PostgreSQL swaps the CHECK constraint. SQLite cannot alter a constraint, so the table is
    rebuilt (SQLite's documented procedure: create the new table, copy the rows with their
    ids, drop the old one, rename): the new table is m002's but for the wider CHECK."""
    sources = ("manual", "implicit", "bootstrapped", "validated", "llm")
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql("ALTER TABLE judgments DROP CONSTRAINT ck_judgments_source")
        connection.exec_driver_sql(
            "ALTER TABLE judgments ADD CONSTRAINT ck_judgments_source "
            f"CHECK ({_one_of('source', sources)})"
        )
        return
    rebuilt = _judgments(MetaData(), "judgments_m004", sources)
    rebuilt.create(connection)
    columns = ", ".join(column.name for column in rebuilt.columns)
    connection.exec_driver_sql(
        f"INSERT INTO judgments_m004 ({columns}) SELECT {columns} FROM judgments"
    )
    connection.exec_driver_sql("DROP TABLE judgments")
    connection.exec_driver_sql("ALTER TABLE judgments_m004 RENAME TO judgments")


def m005_run_judge(connection: Connection) -> None:
    """A run measured with an LLM judge's labels records the judge: model, prompt version,
    the pairs it labelled, its failure rate, whether that made it unreliable, and its tokens
    (in + out) and cost in USD. All NULL for runs on the dataset authors' labels alone.

    ``ALTER TABLE ... ADD COLUMN`` of a nullable column without a default is cheap on both
    engines (no table rewrite); each type is compiled by the connection's dialect, as
    ``create_all`` would (``Float``: SQLite ``FLOAT``, PostgreSQL ``double precision``)."""
    columns = (
        Column("judge_model", Text),
        Column("judge_prompt", Text),
        Column("llm_labels", Integer),
        Column("judge_failure_rate", Float),
        Column("judge_unreliable", Boolean),
        Column("judge_tokens", Integer),
        Column("judge_cost", Float),
    )
    for column in columns:
        kind = column.type.compile(dialect=connection.dialect)
        connection.exec_driver_sql(f"ALTER TABLE eval_runs ADD COLUMN {column.name} {kind}")


def m006_pairwise_preferences(connection: Connection) -> None:
    """Blind pairwise preferences from the dashboard: one row per (workspace, item,
    annotator), the two rankings as shown (JSON lists) and which one was preferred.

    Dashboards before this migration created the table themselves (``CREATE TABLE IF NOT
    EXISTS``) from this very definition, so such a table is adopted with its rows; a table
    of that name with other columns is refused rather than guessed at. ``workspace_id`` has
    no server default, unlike the other tables: that table never had one. No index beyond
    the unique constraint's: its (workspace_id, item, annotator) serves every lookup, and a
    workspace's preferences, made by hand, are few enough to sort."""
    metadata = MetaData()
    table = Table(
        "pairwise_preferences",
        metadata,
        _id(),
        Column("workspace_id", Text, nullable=False),
        Column("item", Text, nullable=False),
        Column("query_text", Text, nullable=False),
        Column("first_label", Text, nullable=False),
        Column("first_results", Text, nullable=False),  # JSON: ranked ids
        Column("second_label", Text, nullable=False),
        Column("second_results", Text, nullable=False),  # JSON: ranked ids
        Column("preferred", Text, nullable=False),  # first, second or tie
        Column("shown", Text, nullable=False),  # the one shown on the left: first or second
        Column("annotator", Text, nullable=False),
        _created_at(),
        UniqueConstraint("workspace_id", "item", "annotator", name="uq_pairwise_preference"),
    )
    inspector = inspect_db(connection)
    if not inspector.has_table(table.name):
        metadata.create_all(connection)
        return
    found = [column["name"] for column in inspector.get_columns(table.name)]
    if found != [column.name for column in table.columns]:
        raise ConfigError(
            f"the history store has a table {table.name} that recallbench did not make "
            f"(columns {found}): rename or drop it, then open the store again"
        )


def m007_shadow_errors(connection: Connection) -> None:
    """A shadow run records why a side gave no readable search: a short message (the
    exception's type and message, the tool's ``isError`` text, or ``timeout``); NULL for a
    side that answered. Nullable columns without a default, added as m005 adds its own."""
    columns = (
        Column("control_error", Text),
        Column("treatment_error", Text),
    )
    for column in columns:
        kind = column.type.compile(dialect=connection.dialect)
        connection.exec_driver_sql(f"ALTER TABLE shadow_runs ADD COLUMN {column.name} {kind}")


def m008_shadow_tests(connection: Connection) -> None:
    """Shadow tests with their decisions, feature flags and session outcomes.

    * ``shadow_runs`` gains ``interleaved`` (JSON list of ``[doc_id, team]``, team
      ``control`` or ``treatment``: what the agent saw when the two lists were team-draft
      interleaved; NULL otherwise), ``session_id``, and ``control`` / ``treatment`` (the
      profiles that answered, so that a test reads only its own pairs). Nullable, no
      default, added as m005 adds its own.
    * ``shadow_tests``: one row per named test and workspace, its graduation rule (JSON,
      fixed when it starts), guardrails with their non-inferiority margins (JSON), alpha and
      status.
    * ``shadow_decisions``: every decision taken on a test (start, continue, graduate,
      rollback, stop), when, by whom, with its evidence (JSON); append only.
    * ``feature_flags``: append only, one row per change; a flag's state is its latest row,
      its history the rows before. ``percent`` of the units (by a hash) get ``variant``, the
      others ``fallback``.
    * ``session_outcomes``: a session's task outcome, a number or success, from the SDK or
      the proxy; several per session allowed (the latest counts).

    The CHECK lists are written out here, frozen: widening them needs a new migration."""
    statuses = ("running", "stopped", "graduated", "rolled_back")
    decisions = ("start", "continue", "graduate", "rollback", "stop")
    sources = ("sdk", "proxy")
    columns = (
        Column("interleaved", Text),
        Column("session_id", Text),
        Column("control", Text),
        Column("treatment", Text),
    )
    for column in columns:
        kind = column.type.compile(dialect=connection.dialect)
        connection.exec_driver_sql(f"ALTER TABLE shadow_runs ADD COLUMN {column.name} {kind}")
    metadata = MetaData()
    Table(
        "shadow_tests",
        metadata,
        _id(),
        _workspace(),
        Column("name", Text, nullable=False),
        Column("control", Text, nullable=False),
        Column("treatment", Text, nullable=False),
        Column("measure", Text, nullable=False),
        Column("guardrails", Text, nullable=False),  # JSON
        Column("rule", Text, nullable=False),  # JSON
        Column("alpha", Float, nullable=False),
        Column("started_at", DateTime(timezone=True), nullable=False),
        Column("stopped_at", DateTime(timezone=True)),
        Column("status", Text, nullable=False),
        CheckConstraint(_one_of("status", statuses), name="ck_shadow_tests_status"),
        CheckConstraint("alpha > 0 AND alpha < 1", name="ck_shadow_tests_alpha"),
        UniqueConstraint("workspace_id", "name", name="uq_shadow_tests_name"),
    )
    Table(
        "shadow_decisions",
        metadata,
        _id(),
        _workspace(),
        Column(
            "test_id",
            RUN_ID,
            ForeignKey("shadow_tests.id", ondelete="CASCADE"),
            nullable=False,
        ),
        Column("at", DateTime(timezone=True), nullable=False),
        Column("decision", Text, nullable=False),
        Column("evidence", Text, nullable=False),  # JSON
        Column("actor", Text),
        CheckConstraint(_one_of("decision", decisions), name="ck_shadow_decisions_decision"),
        Index("ix_shadow_decisions_test", "test_id", "at"),
    )
    Table(
        "feature_flags",
        metadata,
        _id(),
        _workspace(),
        Column("name", Text, nullable=False),
        Column("variant", Text, nullable=False),
        Column("percent", Float, nullable=False),
        Column("fallback", Text),
        Column("updated_at", DateTime(timezone=True), nullable=False),
        CheckConstraint("percent >= 0 AND percent <= 100", name="ck_feature_flags_percent"),
        Index("ix_feature_flags_name", "workspace_id", "name", "updated_at"),
    )
    Table(
        "session_outcomes",
        metadata,
        _id(),
        _workspace(),
        Column("session_id", Text, nullable=False),
        Column("outcome", Float),
        Column("success", Boolean),
        Column("note", Text),
        Column("recorded_at", DateTime(timezone=True), nullable=False),
        Column("source", Text, nullable=False),
        CheckConstraint(_one_of("source", sources), name="ck_session_outcomes_source"),
        CheckConstraint(
            "outcome IS NOT NULL OR success IS NOT NULL", name="ck_session_outcomes_value"
        ),
        Index("ix_session_outcomes_session", "workspace_id", "session_id"),
    )
    metadata.create_all(connection)


MARKER_TABLE = "recallbench_store"
"""The table whose presence says "this database is a recallbench store" (see ``_identity``)."""


def m009_store_marker(connection: Connection) -> None:
    """The store's marker: ``recallbench_store``, one row (id 1) naming the recallbench
    version that marked the database and when. A database holding tables but no marker is
    not opened as a store (``_identity``), so that a mistyped ``--store`` never migrates an
    application's database; stores made before this migration are recognised by their
    ``schema_migrations`` and marked here. A table instead of SQLite's ``application_id``:
    one marker for SQLite and PostgreSQL alike."""
    from recallbench._version import __version__

    metadata = MetaData()
    table = Table(
        MARKER_TABLE,
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=False),
        Column("recallbench_version", Text, nullable=False),
        Column("marked_at", DateTime(timezone=True), nullable=False),
        CheckConstraint("id = 1", name="ck_recallbench_store_one_row"),
    )
    metadata.create_all(connection)
    connection.execute(
        table.insert().values(id=1, recallbench_version=__version__, marked_at=datetime.now(UTC))
    )


def m010_interleaved_credited(connection: Connection) -> None:
    """``shadow_runs.interleaved_credited``: how many leading items of ``interleaved`` a
    click credits to their team, the team draft of both lists cut to the depth both reach;
    the items after them were shown from below that depth and credit no one (a longer list
    is not preferred for its length). NULL where nothing was interleaved and on rows written
    before this migration, which are credited to the common depth of their own lists.
    Nullable, no default, added as m005 adds its own."""
    column = Column("interleaved_credited", Integer)
    kind = column.type.compile(dialect=connection.dialect)
    connection.exec_driver_sql(f"ALTER TABLE shadow_runs ADD COLUMN {column.name} {kind}")


def m011_annotations(connection: Connection) -> None:
    """A team's labels of (query, memory) pairs, each annotator's kept apart, with history.

    * ``annotations``: one row per (workspace, query, memory, annotator), the annotator's
      current grade (NULL once withdrawn) and ``version``, raised by every write: a write
      names the version it replaces, so a stale one (another tab) changes nothing.
    * ``adjudications``: one row per (workspace, query, memory), the grade an adjudicator
      resolved a conflict to (NULL once withdrawn), who and when, with its ``version``.
    * ``annotation_events``: append only, every write of either: who, the pair, the grade
      before and after, the action (``label``, ``relabel``, ``withdraw`` (an undo) or
      ``adjudicate``) and whether it concerns the pair's adjudication rather than the
      annotator's own label.

    The ``manual`` judgments already stored become their annotator's label (``unknown``
    when none was named), each with a ``label`` event, so that a pair labelled before keeps
    its label and counts as labelled. The CHECK list is frozen here."""
    actions = ("label", "relabel", "withdraw", "adjudicate")
    metadata = MetaData()
    annotations = Table(
        "annotations",
        metadata,
        _id(),
        _workspace(),
        Column("query_id", Text, nullable=False),
        Column("doc_id", Text, nullable=False),
        Column("annotator", Text, nullable=False),
        Column("grade", Integer),
        Column("version", Integer, nullable=False),
        Column("updated_at", DateTime(timezone=True), nullable=False),
        CheckConstraint("grade BETWEEN 0 AND 3", name="ck_annotations_grade"),
        UniqueConstraint(
            "workspace_id", "query_id", "doc_id", "annotator", name="uq_annotations_label"
        ),
    )
    Table(
        "adjudications",
        metadata,
        _id(),
        _workspace(),
        Column("query_id", Text, nullable=False),
        Column("doc_id", Text, nullable=False),
        Column("adjudicator", Text, nullable=False),
        Column("grade", Integer),
        Column("version", Integer, nullable=False),
        Column("updated_at", DateTime(timezone=True), nullable=False),
        CheckConstraint("grade BETWEEN 0 AND 3", name="ck_adjudications_grade"),
        UniqueConstraint("workspace_id", "query_id", "doc_id", name="uq_adjudications_pair"),
    )
    events = Table(
        "annotation_events",
        metadata,
        _id(),
        _workspace(),
        Column("query_id", Text, nullable=False),
        Column("doc_id", Text, nullable=False),
        Column("annotator", Text, nullable=False),
        Column("action", Text, nullable=False),
        Column("adjudication", Boolean, nullable=False),
        Column("old_grade", Integer),
        Column("new_grade", Integer),
        _created_at(),
        CheckConstraint(_one_of("action", actions), name="ck_annotation_events_action"),
        Index("ix_annotation_events_pair", "workspace_id", "query_id", "doc_id", "created_at"),
    )
    metadata.create_all(connection)
    judged = _judgments(MetaData(), "judgments", ("manual",))  # read through m002's types
    rows = connection.execute(
        select(
            judged.c.workspace_id,
            judged.c.query_id,
            judged.c.doc_id,
            judged.c.grade,
            judged.c.annotator,
            judged.c.created_at,
        ).where(judged.c.source == "manual")
    ).all()
    labels = [
        {
            "workspace_id": workspace,
            "query_id": query_id,
            "doc_id": doc_id,
            "annotator": annotator or "unknown",
            "grade": grade,
            "version": 1,
            "updated_at": at,
        }
        for workspace, query_id, doc_id, grade, annotator, at in rows
    ]
    if labels:
        connection.execute(annotations.insert(), labels)
        connection.execute(
            events.insert(),
            [
                {
                    "workspace_id": row["workspace_id"],
                    "query_id": row["query_id"],
                    "doc_id": row["doc_id"],
                    "annotator": row["annotator"],
                    "action": "label",
                    "adjudication": False,
                    "old_grade": None,
                    "new_grade": row["grade"],
                    "created_at": row["updated_at"],
                }
                for row in labels
            ],
        )


def m012_fleet_keys(connection: Connection) -> None:
    """Keys that make the proxies' and the SDK's writes idempotent, so that several
    processes (a fleet of proxies on one PostgreSQL) and a writer retrying a batch whose
    first commit did succeed never store a row twice:

    * ``shadow_runs``: unique ``(workspace_id, query_id)``, the search's id (a uuid4 the
      proxy draws; one pair per search). Rows already stored twice under one query id
      keep the first (lowest ``id``).
    * ``feedback_events.event_id``: the event's own id (a uuid4 drawn when the event is
      made, so a retried batch carries the same ids), unique per workspace. Events stored
      before are given ``m012-<id>``; events identical in every column but ``id`` (a
      retried batch: an event's ``created_at`` is taken when it is made, to the
      microsecond) keep the first. Nullable: SQLite adds no NOT NULL column without a
      default, and the writers always set it.

    ``query_log`` (unique query id since m002) and ``judgments`` (one per query, memory
    and source) were idempotent already. Unique indexes rather than constraints: SQLite
    adds no constraint to a table, and ``ON CONFLICT`` takes either."""
    connection.exec_driver_sql(
        "DELETE FROM shadow_runs WHERE id NOT IN "
        "(SELECT MIN(id) FROM shadow_runs GROUP BY workspace_id, query_id)"
    )
    connection.exec_driver_sql(
        "CREATE UNIQUE INDEX uq_shadow_runs_query ON shadow_runs (workspace_id, query_id)"
    )
    connection.exec_driver_sql("ALTER TABLE feedback_events ADD COLUMN event_id TEXT")
    connection.exec_driver_sql(
        "DELETE FROM feedback_events WHERE id NOT IN (SELECT MIN(id) FROM feedback_events "
        "GROUP BY workspace_id, query_id, kind, doc_id, rank, session_id, created_at)"
    )
    connection.exec_driver_sql("UPDATE feedback_events SET event_id = 'm012-' || CAST(id AS TEXT)")
    connection.exec_driver_sql(
        "CREATE UNIQUE INDEX uq_feedback_events_event ON feedback_events (workspace_id, event_id)"
    )


def m013_read_indexes(connection: Connection) -> None:
    """Indexes for reading a large store: the dashboard's feedback pages, newest first, of
    every kind (``ix_feedback_events_created``) or of one (``ix_feedback_events_kind``),
    read a page from an index instead of sorting every event, and the count per kind (with
    each kind's first event) is read from the second alone. ``id`` ends both, so that the
    order of events logged at one instant comes from the index on PostgreSQL too (SQLite
    ends every index with the rowid)."""
    connection.exec_driver_sql(
        "CREATE INDEX ix_feedback_events_created ON feedback_events (workspace_id, created_at, id)"
    )
    connection.exec_driver_sql(
        "CREATE INDEX ix_feedback_events_kind ON feedback_events "
        "(workspace_id, kind, created_at, id)"
    )


def m014_shadow_query_key(connection: Connection) -> None:
    """``shadow_runs.query_key``: the key of the searched text
    (:func:`recallbench.core._query_key.query_key`), a shadow test's query unit, written
    with the pair so that ``shadow status`` need not read a million pairs' texts out of
    ``query_log`` (scattered reads of its largest rows: most of the command's time). Rows
    written before are filled here from their logged text; a pair whose query was never
    logged keeps NULL (a unit of its own, as before). Filled in batches of row ids, so that
    neither side is read whole into memory."""
    column = Column("query_key", Text)
    kind = column.type.compile(dialect=connection.dialect)
    connection.exec_driver_sql(f"ALTER TABLE shadow_runs ADD COLUMN {column.name} {kind}")
    from recallbench.core._query_key import query_key

    read = (
        "SELECT s.id, q.text FROM shadow_runs s JOIN query_log q "
        "ON q.workspace_id = s.workspace_id AND q.query_id = s.query_id "
        "WHERE s.id > :after ORDER BY s.id LIMIT 20000"
    )
    after = 0
    while True:
        rows = connection.execute(sql_text(read), {"after": after}).all()
        if not rows:
            return
        connection.execute(
            sql_text("UPDATE shadow_runs SET query_key = :key WHERE id = :id"),
            [{"id": row_id, "key": query_key(str(text))} for row_id, text in rows],
        )
        after = rows[-1][0]


def m015_run_statistics(connection: Connection) -> None:
    """``eval_run_statistics``: each run's statistics as `history` shows them, kept so that
    a trend of thousands of runs is read rather than resampled. One row per (run, measure,
    ``settings``: the computation's version, the measure's scale and the interval's and
    test's settings, as text): the bootstrap interval of the run's mean (``n``, ``low``,
    ``high``, ``small``, ``reason``, the fields of ``report.Interval``) and the raw paired
    test of the change into the run from ``previous_run_id`` (``change_n``,
    ``change_delta``, ``change_p``; NULL until tested; no foreign key: a predecessor
    removed never matches the run before it again). Holm's correction is not stored: it
    depends on which changes are shown. Rows are filled when a run is recorded and when
    `history` reads a run that has none; a run's removal removes them."""
    metadata = MetaData()
    Table("eval_runs", metadata, Column("id", RUN_ID, primary_key=True))  # the key's target
    statistics = Table(
        "eval_run_statistics",
        metadata,
        _run_fk(),
        _workspace(),
        Column("measure", Text, nullable=False),
        Column("settings", Text, nullable=False),
        Column("n", Integer, nullable=False),
        Column("low", Float),
        Column("high", Float),
        Column("small", Boolean, nullable=False),
        Column("reason", Text),
        Column("previous_run_id", RUN_ID),
        Column("change_n", Integer),
        Column("change_delta", Float),
        Column("change_p", Float),
        PrimaryKeyConstraint("run_id", "measure", "settings"),
    )
    metadata.create_all(connection, tables=[statistics])


def m016_shadow_checkpoints(connection: Connection) -> None:
    """``shadow_checkpoints``: per shadow test, its progress over the pairs settled up to
    ``covered_until`` (``progress``: the document of
    :meth:`recallbench.online._shadow_progress.Progress.dump`) and ``marks``, what the
    store held when it was taken (JSON: the count and largest id of the test's pairs so
    far, the largest feedback and judgment ids, the late evidence it took in), so that
    ``shadow status`` adds only the pairs since and sees when older ones changed. A cache:
    removing a row costs one rebuild of its test, never a different decision."""
    metadata = MetaData()
    Table("shadow_tests", metadata, Column("id", RUN_ID, primary_key=True))  # the key's target
    checkpoints = Table(
        "shadow_checkpoints",
        metadata,
        Column(
            "test_id",
            RUN_ID,
            ForeignKey("shadow_tests.id", ondelete="CASCADE"),
            primary_key=True,
            autoincrement=False,
        ),
        _workspace(),
        Column("covered_until", DateTime(timezone=True), nullable=False),
        Column("marks", Text, nullable=False),
        Column("progress", LargeBinary, nullable=False),
        Column("written_at", DateTime(timezone=True), nullable=False),
    )
    metadata.create_all(connection, tables=[checkpoints])


MIGRATIONS: list[Migration] = [
    m001_history,
    m002_telemetry,
    m003_judge_cache,
    m004_llm_judgments,
    m005_run_judge,
    m006_pairwise_preferences,
    m007_shadow_errors,
    m008_shadow_tests,
    m009_store_marker,
    m010_interleaved_credited,
    m011_annotations,
    m012_fleet_keys,
    m013_read_indexes,
    m014_shadow_query_key,
    m015_run_statistics,
    m016_shadow_checkpoints,
]
"""In order; append only."""
