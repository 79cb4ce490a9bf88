"""The online telemetry half of the store: the query log, feedback events and judgments
that the SDK logger and the MCP proxy write and ``recallbench harvest`` reads, and the
retention that keeps them from growing without end.

A mixin of :class:`~recallbench.store.Store` (kept apart so that each file stays small):
every read and write is confined to the store's workspace.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    RowMapping,
    Table,
    and_,
    delete,
    exists,
    func,
    select,
    true,
    update,
)

from recallbench.core._errors import ConfigError
from recallbench.store._engine import transaction
from recallbench.store._rows import chunks
from recallbench.store._tables import (
    WORKSPACE_TABLES,
    as_utc,
    feature_flags,
    feedback_events,
    judgments,
    query_log,
    session_outcomes,
    shadow_decisions,
    shadow_runs,
    shadow_tests,
)
from recallbench.store._telemetry import FeedbackEvent, Judgment, JudgmentSource, QueryLogEntry
from recallbench.store._telemetry_rows import (
    SHADOW_DECISIONS,
    FeatureFlag,
    SessionOutcome,
    ShadowDecision,
    ShadowDecisionKind,
    ShadowTest,
    check_session_outcome,
    cutoff,
    evidence_json,
    feature_flag,
    feedback_event,
    feedback_row,
    interleaved_json,
    judgment,
    judgment_rows,
    query_entry,
    query_row,
    session_outcome,
    shadow_decision,
    shadow_test,
    unique,
)

if TYPE_CHECKING:
    from sqlalchemy.dialects.postgresql import Insert as PostgresInsert
    from sqlalchemy.dialects.sqlite import Insert as SqliteInsert

BATCH = 5_000
"""Rows per executemany call: bounds the memory of one statement's parameters."""


class TelemetryStore:
    """Query log, feedback and judgments of one workspace (mixed into ``Store``)."""

    _engine: Engine
    url: str
    workspace: str

    def log(
        self,
        queries: Sequence[QueryLogEntry] = (),
        feedback: Sequence[FeedbackEvent] = (),
        judgments: Sequence[Judgment] = (),
    ) -> None:
        """Write telemetry in one transaction: all of it or, on an error, none of it.

        A query whose ``query_id`` is already logged in this workspace is skipped (the SDK
        may deliver a batch twice); a judgment replaces the stored one with the same query,
        document and source when it is at least as recent (``created_at``), so the latest
        grade is kept whatever the order of delivery. Feedback events have no key: each
        call appends them. A feedback kind, judgment source or grade outside the allowed
        values is refused by the database (``sqlalchemy.exc.IntegrityError``)."""
        if not (queries or feedback or judgments):
            return
        query_rows = [query_row(entry, self.workspace) for entry in queries]
        feedback_rows = [feedback_row(event, self.workspace) for event in feedback]
        judged = judgment_rows(judgments, self.workspace)
        with transaction(self._engine, write=True) as connection:
            if query_rows:
                ignore = _insert(connection, query_log).on_conflict_do_nothing(
                    index_elements=["workspace_id", "query_id"]
                )
                _execute_many(connection, ignore, query_rows)
            if feedback_rows:
                _execute_many(connection, feedback_events.insert(), feedback_rows)
            if judged:
                _execute_many(connection, _judgment_upsert(connection), judged)

    def log_shadow_run(self, run: dict[str, Any]) -> None:
        """Write one shadow run (``shadow_runs`` columns but the workspace and, when not
        given, ``created_at``): the ranked lists as JSON arrays of ids.

        Optional keys from m008: ``interleaved``, a sequence of ``(doc_id, team)`` with team
        ``"control"`` or ``"treatment"`` (what the agent saw when the two lists were
        team-draft interleaved; ValueError, located, for a malformed pair), ``session_id``,
        and ``control`` / ``treatment``, the profiles that answered. From m010:
        ``interleaved_credited``, how many leading items of ``interleaved`` a click
        credits (the rest were shown from below the depth both lists reach)."""
        self.log_shadow_runs([run])

    def log_shadow_runs(self, runs: Sequence[Mapping[str, Any]]) -> None:
        """Write shadow runs as :meth:`log_shadow_run` does, all in one transaction (one
        commit, one sync to disk: the proxy writes its pairs in batches). Nothing is
        written when one of them is malformed."""
        now = datetime.now(UTC)
        rows = []
        for run in runs:
            row = {"created_at": now, **run, "workspace_id": self.workspace}
            for side in ("control_results", "treatment_results"):
                row[side] = json.dumps(list(row[side]))
            if "interleaved" in row:
                row["interleaved"] = interleaved_json(row["interleaved"])
            rows.append(row)
        groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for row in rows:  # one executemany per set of columns (a missing key is its default)
            groups.setdefault(tuple(sorted(row)), []).append(row)
        if not groups:
            return
        with transaction(self._engine, write=True) as connection:
            for group in groups.values():
                connection.execute(shadow_runs.insert(), group)

    def shadow_runs(
        self, since: datetime | None = None, until: datetime | None = None
    ) -> list[dict[str, Any]]:
        """This workspace's shadow runs (with ``since <= created_at`` and ``created_at <=
        until`` when given), oldest first: the ranked lists as tuples of ids,
        ``interleaved`` as a tuple of ``(doc_id, team)`` or None."""
        query = select(shadow_runs).where(_mine(shadow_runs, self.workspace))
        if since is not None:
            query = query.where(shadow_runs.c.created_at >= since)
        if until is not None:
            query = query.where(shadow_runs.c.created_at <= until)
        query = query.order_by(shadow_runs.c.created_at, shadow_runs.c.id)
        with transaction(self._engine) as connection:
            rows = [dict(row) for row in connection.execute(query).mappings()]
        for row in rows:
            for side in ("control_results", "treatment_results"):
                row[side] = tuple(json.loads(row[side]))
            shown = row["interleaved"]
            row["interleaved"] = (
                None if shown is None else tuple((doc, team) for doc, team in json.loads(shown))
            )
        return rows

    def shadow_profiles(self) -> set[str]:
        """The profile names this workspace's shadow runs were logged with, either side."""
        query = (
            select(shadow_runs.c.control, shadow_runs.c.treatment)
            .where(_mine(shadow_runs, self.workspace))
            .distinct()
        )
        with transaction(self._engine) as connection:
            rows = connection.execute(query).all()
        return {name for row in rows for name in row if name is not None}

    # ------------------------------------------------------------ shadow tests (m008)

    def start_shadow_test(
        self,
        name: str,
        control: str,
        treatment: str,
        measure: str,
        rule: Mapping[str, Any],
        guardrails: Mapping[str, Any] | None = None,
        alpha: float = 0.05,
        actor: str | None = None,
        at: datetime | None = None,
    ) -> ShadowTest:
        """Start the shadow test ``name`` (status ``running``) with its graduation rule and
        guardrails, fixed from now on, and record a ``start`` decision whose evidence is
        the rule. ConfigError when the name is taken in this workspace or an argument is
        out of range (empty names, control = treatment, alpha outside (0, 1))."""
        for label, value in (("name", name), ("control", control), ("treatment", treatment)):
            if not value or not value.strip():
                raise ConfigError(f"shadow test: {label} must not be empty")
        if not measure:
            raise ConfigError("shadow test: measure must not be empty")
        if control == treatment:
            raise ConfigError(f"shadow test {name}: control and treatment are both {control!r}")
        if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
            raise ConfigError(f"shadow test {name}: alpha must be in (0, 1), got {alpha!r}")
        at = as_utc(at) if at is not None else datetime.now(UTC)
        try:
            rule_text = evidence_json(rule)
            guard_text = evidence_json(guardrails or {})
        except ValueError as error:
            raise ConfigError(f"shadow test {name}: the rule is {error}") from None
        row = {
            "workspace_id": self.workspace,
            "name": name,
            "control": control,
            "treatment": treatment,
            "measure": measure,
            "guardrails": guard_text,
            "rule": rule_text,
            "alpha": float(alpha),
            "started_at": at,
            "stopped_at": None,
            "status": "running",
        }
        with transaction(self._engine, write=True) as connection:
            taken = select(shadow_tests.c.id).where(
                _mine(shadow_tests, self.workspace), shadow_tests.c.name == name
            )
            if connection.execute(taken).first() is not None:
                raise ConfigError(
                    f"a shadow test named {name!r} exists already in workspace "
                    f"{self.workspace!r}: choose another name"
                )
            key = connection.execute(shadow_tests.insert().values(**row)).inserted_primary_key
            assert key is not None
            decision = {
                "workspace_id": self.workspace,
                "test_id": key[0],
                "at": at,
                "decision": "start",
                "evidence": _json_object({"rule": rule, "guardrails": guardrails or {}}),
                "actor": actor,
            }
            connection.execute(shadow_decisions.insert().values(**decision))
        found = self.shadow_test(name)
        assert found is not None
        return found

    def shadow_test(self, name: str) -> ShadowTest | None:
        """The shadow test ``name`` of this workspace, None when there is none."""
        query = select(shadow_tests).where(
            _mine(shadow_tests, self.workspace), shadow_tests.c.name == name
        )
        with transaction(self._engine) as connection:
            row = connection.execute(query).mappings().first()
        return None if row is None else shadow_test(row)

    def shadow_tests(self) -> list[ShadowTest]:
        """This workspace's shadow tests, oldest first."""
        query = (
            select(shadow_tests)
            .where(_mine(shadow_tests, self.workspace))
            .order_by(shadow_tests.c.started_at, shadow_tests.c.id)
        )
        with transaction(self._engine) as connection:
            return [shadow_test(row) for row in connection.execute(query).mappings()]

    def log_shadow_decision(
        self,
        name: str,
        decision: ShadowDecisionKind,
        evidence: Mapping[str, Any],
        actor: str | None = None,
        at: datetime | None = None,
    ) -> ShadowDecision:
        """Record a decision on the shadow test ``name``; ``graduate``, ``rollback`` and
        ``stop`` also end the test (status ``graduated``, ``rolled_back``, ``stopped``;
        ``stopped_at`` set when it was not), in the same transaction.

        ConfigError for an unknown test or decision, a ``stop`` of a test that is not
        running, or a graduation or rollback of a test already graduated or rolled back."""
        if decision not in SHADOW_DECISIONS or decision == "start":
            allowed = ", ".join(kind for kind in SHADOW_DECISIONS if kind != "start")
            raise ConfigError(f"shadow test {name}: decision {decision!r} is not one of {allowed}")
        try:
            evidence_text = evidence_json(evidence)
        except ValueError as error:
            raise ConfigError(f"shadow test {name}: the evidence is {error}") from None
        at = as_utc(at) if at is not None else datetime.now(UTC)
        ends = {"graduate": "graduated", "rollback": "rolled_back", "stop": "stopped"}
        with transaction(self._engine, write=True) as connection:
            test = self._test_row(connection, name)
            status = test["status"]
            if decision == "stop" and status != "running":
                raise ConfigError(f"shadow test {name} is {status}, not running: nothing to stop")
            if decision in ("graduate", "rollback") and status in ("graduated", "rolled_back"):
                raise ConfigError(f"shadow test {name} is {status} already")
            connection.execute(
                shadow_decisions.insert().values(
                    workspace_id=self.workspace,
                    test_id=test["id"],
                    at=at,
                    decision=decision,
                    evidence=evidence_text,
                    actor=actor,
                )
            )
            if decision in ends:
                connection.execute(
                    update(shadow_tests)
                    .where(shadow_tests.c.id == test["id"])
                    .values(status=ends[decision], stopped_at=test["stopped_at"] or at)
                )
        return ShadowDecision(name, at, decision, json.loads(evidence_text), actor)

    def shadow_decisions(self, name: str) -> list[ShadowDecision]:
        """Every decision taken on the shadow test ``name``, oldest first (ConfigError when
        there is no such test)."""
        with transaction(self._engine) as connection:
            test = self._test_row(connection, name)
            query = (
                select(shadow_decisions)
                .where(shadow_decisions.c.test_id == test["id"])
                .order_by(shadow_decisions.c.at, shadow_decisions.c.id)
            )
            rows = list(connection.execute(query).mappings())
        return [shadow_decision(row, name) for row in rows]

    def _test_row(self, connection: Connection, name: str) -> RowMapping:
        query = select(shadow_tests).where(
            _mine(shadow_tests, self.workspace), shadow_tests.c.name == name
        )
        row = connection.execute(query).mappings().first()
        if row is None:
            raise ConfigError(f"no shadow test named {name!r} in workspace {self.workspace!r}")
        return row

    # ------------------------------------------------------------ feature flags (m008)

    def set_flag(
        self,
        name: str,
        variant: str,
        percent: float,
        fallback: str | None = None,
        at: datetime | None = None,
    ) -> FeatureFlag:
        """Set the feature flag ``name``: ``percent`` (0-100) of the units get ``variant``,
        the others ``fallback`` (None: the flag is off for them). Appends a row: the flag's
        earlier states stay as its history (:meth:`flag_history`). ConfigError for an empty
        name or variant or a percent outside [0, 100]."""
        if not name or not name.strip():
            raise ConfigError("feature flag: the name must not be empty")
        if not variant or not variant.strip():
            raise ConfigError(f"feature flag {name}: the variant must not be empty")
        if (
            isinstance(percent, bool)
            or not isinstance(percent, (int, float))
            or not 0 <= percent <= 100
        ):
            raise ConfigError(f"feature flag {name}: percent must be in [0, 100], got {percent!r}")
        flag = FeatureFlag(
            name=name,
            variant=variant,
            percent=float(percent),
            fallback=fallback,
            updated_at=as_utc(at) if at is not None else datetime.now(UTC),
        )
        with transaction(self._engine, write=True) as connection:
            connection.execute(
                feature_flags.insert().values(
                    workspace_id=self.workspace,
                    name=flag.name,
                    variant=flag.variant,
                    percent=flag.percent,
                    fallback=flag.fallback,
                    updated_at=flag.updated_at,
                )
            )
        return flag

    def flags(self) -> list[FeatureFlag]:
        """Every feature flag of this workspace in its latest state, by name."""
        latest: dict[str, FeatureFlag] = {}
        for flag in self._flag_rows(None):
            latest[flag.name] = flag  # rows come oldest first: the last one stays
        return [latest[name] for name in sorted(latest)]

    def flag_history(self, name: str) -> list[FeatureFlag]:
        """Every state the feature flag ``name`` had, oldest first (empty when never set)."""
        return self._flag_rows(name)

    def _flag_rows(self, name: str | None) -> list[FeatureFlag]:
        query = select(feature_flags).where(_mine(feature_flags, self.workspace))
        if name is not None:
            query = query.where(feature_flags.c.name == name)
        query = query.order_by(feature_flags.c.updated_at, feature_flags.c.id)
        with transaction(self._engine) as connection:
            return [feature_flag(row) for row in connection.execute(query).mappings()]

    # ------------------------------------------------------------ session outcomes (m008)

    def log_session_outcome(
        self,
        session_id: str,
        outcome: float | None = None,
        success: bool | None = None,
        note: str | None = None,
        source: str = "sdk",
        at: datetime | None = None,
    ) -> None:
        """Record the task outcome of the session ``session_id``: a number (``outcome``,
        finite), a success (``success``), or both, with an optional note; ``source`` is who
        recorded it, ``sdk`` or ``proxy``. A session may have several (the latest counts).
        ValueError, naming the argument, when neither value is given or one is malformed."""
        check_session_outcome(session_id, outcome, success, source)
        row = {
            "workspace_id": self.workspace,
            "session_id": session_id,
            "outcome": None if outcome is None else float(outcome),
            "success": success,
            "note": note,
            "recorded_at": as_utc(at) if at is not None else datetime.now(UTC),
            "source": source,
        }
        with transaction(self._engine, write=True) as connection:
            connection.execute(session_outcomes.insert().values(**row))

    def session_outcomes(self, session_ids: Sequence[str] | None = None) -> list[SessionOutcome]:
        """Recorded session outcomes (of these sessions when given), oldest first."""
        table = session_outcomes
        query = select(table).where(_mine(table, self.workspace))
        query = query.order_by(table.c.recorded_at, table.c.id)
        with transaction(self._engine) as connection:
            if session_ids is None:
                rows = list(connection.execute(query).mappings())
            else:
                rows = []
                for part in chunks(unique(session_ids)):
                    rows.extend(
                        connection.execute(query.where(table.c.session_id.in_(part))).mappings()
                    )
        outcomes = [session_outcome(row) for row in rows]
        outcomes.sort(key=lambda outcome: outcome.recorded_at)
        return outcomes

    def query_log(
        self,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
    ) -> list[QueryLogEntry]:
        """Logged queries with ``since <= created_at < until``, oldest first (then in
        logging order); at most ``limit`` of them. Naive datetimes are taken as UTC."""
        query = select(query_log).where(query_log.c.workspace_id == self.workspace)
        if since is not None:
            query = query.where(query_log.c.created_at >= since)
        if until is not None:
            query = query.where(query_log.c.created_at < until)
        query = query.order_by(query_log.c.created_at, query_log.c.id)
        if limit is not None:
            query = query.limit(limit)
        with transaction(self._engine) as connection:
            return [query_entry(row) for row in connection.execute(query).mappings()]

    def feedback(
        self, query_ids: Sequence[str] | None = None, since: datetime | None = None
    ) -> list[FeedbackEvent]:
        """Feedback events (of these queries when given; from ``since`` on when given),
        oldest first, then in logging order."""
        table = feedback_events
        where = [table.c.workspace_id == self.workspace]
        if since is not None:
            where.append(table.c.created_at >= since)
        rows = self._select_for(table, where, query_ids, (table.c.created_at, table.c.id))
        return [feedback_event(row) for row in rows]

    def judgments(
        self, query_ids: Sequence[str] | None = None, source: str | None = None
    ) -> list[Judgment]:
        """Judgments (of these queries when given; from this source when given), ordered
        by query, document and source."""
        table = judgments
        where = [table.c.workspace_id == self.workspace]
        if source is not None:
            where.append(table.c.source == source)
        order = (table.c.query_id, table.c.doc_id, table.c.source)
        return [judgment(row) for row in self._select_for(table, where, query_ids, order)]

    def delete_judgment(
        self,
        query_id: str,
        doc_id: str,
        source: JudgmentSource = "manual",
        annotator: str | None = None,
    ) -> bool:
        """Delete the judgment of ``doc_id`` for ``query_id`` from ``source`` (there is at
        most one), only when ``annotator`` gave it if one is named: an undo must not take
        back a label someone else wrote since. True when a row was deleted."""
        table = judgments
        where = [
            _mine(table, self.workspace),
            table.c.query_id == query_id,
            table.c.doc_id == doc_id,
            table.c.source == source,
        ]
        if annotator is not None:
            where.append(table.c.annotator == annotator)
        with transaction(self._engine, write=True) as connection:
            return connection.execute(delete(table).where(*where)).rowcount > 0

    def count(self, table_name: str) -> int:
        """Rows of this workspace in ``table_name`` (any table that has a workspace)."""
        table = WORKSPACE_TABLES.get(table_name)
        if table is None:
            raise ValueError(
                f"no table {table_name!r} with workspace rows; one of {sorted(WORKSPACE_TABLES)}"
            )
        query = select(func.count()).select_from(table).where(_mine(table, self.workspace))
        with transaction(self._engine) as connection:
            return int(connection.execute(query).scalar_one())

    def set_golden(self, query_ids: Sequence[str], category: str | None = None) -> int:
        """Mark logged queries as golden (kept by :meth:`prune` whatever their age), and set
        their category when ``category`` is given (None leaves it as it is). Returns how
        many logged queries matched; ids that were never logged are ignored."""
        values: dict[str, Any] = {"golden": True}
        if category is not None:
            values["category"] = category
        matched = 0
        with transaction(self._engine, write=True) as connection:
            for part in chunks(unique(query_ids)):
                result = connection.execute(
                    update(query_log)
                    .where(_mine(query_log, self.workspace), query_log.c.query_id.in_(part))
                    .values(**values)
                )
                matched += result.rowcount
        return matched

    def prune(
        self,
        now: datetime | None = None,
        query_log_days: int = 90,
        feedback_days: int = 90,
        shadow_days: int = 30,
        dry_run: bool = False,
    ) -> dict[str, int]:
        """Delete this workspace's telemetry older than its retention; rows removed (or,
        with ``dry_run``, that would be) per table, in one transaction.

        A row is old when ``created_at < now - days``. Kept whatever their age: golden
        queries and the feedback events of golden queries (the evidence behind a golden
        dataset), every judgment, A/B test states and the evaluation results (``eval_*``,
        the gate's history), shadow tests with their decisions, feature flags and session
        outcomes, and the query log, feedback and shadow runs logged since the start of
        the oldest running shadow test (its evidence must not change under it)."""
        now = now or datetime.now(UTC)
        golden = exists().where(
            query_log.c.workspace_id == feedback_events.c.workspace_id,
            query_log.c.query_id == feedback_events.c.query_id,
            query_log.c.golden == true(),
        )
        plan: dict[str, tuple[Table, list[ColumnElement[bool]]]] = {
            "query_log": (
                query_log,
                [
                    query_log.c.created_at < cutoff(now, query_log_days),
                    query_log.c.golden != true(),
                ],
            ),
            "feedback_events": (
                feedback_events,
                [feedback_events.c.created_at < cutoff(now, feedback_days), ~golden],
            ),
            "shadow_runs": (shadow_runs, [shadow_runs.c.created_at < cutoff(now, shadow_days)]),
        }
        removed = {}
        running = select(func.min(shadow_tests.c.started_at)).where(
            _mine(shadow_tests, self.workspace), shadow_tests.c.status == "running"
        )
        with transaction(self._engine, write=True) as connection:
            oldest = connection.execute(running).scalar_one()
            # feedback first: its golden test reads query_log as it was
            for name in ("feedback_events", "query_log", "shadow_runs"):
                table, old = plan[name]
                if oldest is not None:
                    old = [*old, table.c.created_at < oldest]
                where = and_(_mine(table, self.workspace), *old)
                if dry_run:
                    counted = select(func.count()).select_from(table).where(where)
                    removed[name] = int(connection.execute(counted).scalar_one())
                else:
                    removed[name] = connection.execute(delete(table).where(where)).rowcount
        return {name: removed[name] for name in plan}

    def _select_for(
        self,
        table: Table,
        where: list[ColumnElement[bool]],
        query_ids: Sequence[str] | None,
        order: tuple[ColumnElement[Any], ...],
    ) -> list[Any]:
        """Rows matching ``where`` and, when given, one of ``query_ids`` (queried in
        chunks: bound parameters per statement are limited), sorted by ``order``."""
        base = select(table).where(*where).order_by(*order)
        with transaction(self._engine) as connection:
            if query_ids is None:
                return list(connection.execute(base).mappings())
            parts = list(chunks(unique(query_ids)))
            rows: list[Any] = []
            for part in parts:
                rows.extend(connection.execute(base.where(table.c.query_id.in_(part))).mappings())
        if len(parts) > 1:  # each chunk came sorted; sort them together
            names = [column.key for column in order]
            rows.sort(key=lambda row: tuple(row[name] for name in names))
        return rows


def _mine(table: Table, workspace: str) -> ColumnElement[bool]:
    return table.c.workspace_id == workspace


def _insert(connection: Connection, table: Table) -> PostgresInsert | SqliteInsert:
    """INSERT with the dialect's ON CONFLICT clauses (both spell them the same way)."""
    name = connection.dialect.name
    if name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as postgres_insert

        return postgres_insert(table)
    if name == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert(table)
    raise ConfigError(f"the history store supports SQLite and PostgreSQL, not {name}")


def _judgment_upsert(connection: Connection) -> Any:
    statement = _insert(connection, judgments)
    new = statement.excluded
    return statement.on_conflict_do_update(
        index_elements=["workspace_id", "query_id", "doc_id", "source"],
        set_={
            "grade": new.grade,
            "annotator": new.annotator,
            "confidence": new.confidence,
            "created_at": new.created_at,
        },
        where=new.created_at >= judgments.c.created_at,
    )


def _json_object(value: Mapping[str, Any]) -> str:
    try:
        return evidence_json(value)
    except ValueError as error:
        raise ConfigError(f"shadow test: {error}") from None


def _execute_many(connection: Connection, statement: Any, rows: list[dict[str, Any]]) -> None:
    for start in range(0, len(rows), BATCH):
        connection.execute(statement, rows[start : start + BATCH])
