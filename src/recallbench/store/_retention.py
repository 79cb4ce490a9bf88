"""The retention of the store's telemetry: what ``recallbench store prune`` deletes (the
query log, feedback and shadow runs past their age, and what is kept whatever its age),
and the row counts of a workspace's tables.

A mixin of :class:`~recallbench.store.Store` (through ``TelemetryStore``): every read and
write is confined to the store's workspace.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import ColumnElement, Engine, Table, and_, delete, exists, func, select, true

from recallbench.store._engine import transaction
from recallbench.store._shadow_checkpoints_store import forget_checkpoints
from recallbench.store._statements import mine
from recallbench.store._tables import (
    WORKSPACE_TABLES,
    feedback_events,
    query_log,
    shadow_runs,
    shadow_tests,
)
from recallbench.store._telemetry_rows import cutoff


class RetentionStore:
    """Retention and row counts of one workspace (mixed into ``Store``)."""

    _engine: Engine
    workspace: str

    def count(self, table_name: str) -> int:
        """Rows of this workspace in ``table_name`` (any table that has a workspace)."""
        table = WORKSPACE_TABLES.get(table_name)
        if table is None:
            raise ValueError(
                f"no table {table_name!r} with workspace rows; one of {sorted(WORKSPACE_TABLES)}"
            )
        query = select(func.count()).select_from(table).where(mine(table, self.workspace))
        with transaction(self._engine) as connection:
            return int(connection.execute(query).scalar_one())

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
            mine(shadow_tests, self.workspace), shadow_tests.c.status == "running"
        )
        with transaction(self._engine, write=True) as connection:
            oldest = connection.execute(running).scalar_one()
            # feedback first: its golden test reads query_log as it was
            for name in ("feedback_events", "query_log", "shadow_runs"):
                table, old = plan[name]
                if oldest is not None:
                    old = [*old, table.c.created_at < oldest]
                where = and_(mine(table, self.workspace), *old)
                if dry_run:
                    counted = select(func.count()).select_from(table).where(where)
                    removed[name] = int(connection.execute(counted).scalar_one())
                else:
                    removed[name] = connection.execute(delete(table).where(where)).rowcount
            if not dry_run and any(removed.values()):
                forget_checkpoints(connection, self.workspace)
        return {name: removed[name] for name in plan}
