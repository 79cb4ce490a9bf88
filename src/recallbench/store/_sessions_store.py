"""Session outcomes in the store (m008): the task outcome of an agent's session, as the
SDK or the proxy recorded it.

A mixin of :class:`~recallbench.store.Store` (through ``TelemetryStore``): every read and
write is confined to the store's workspace.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import Engine, select

from recallbench.store._engine import transaction
from recallbench.store._rows import chunks
from recallbench.store._statements import mine
from recallbench.store._tables import as_utc, session_outcomes
from recallbench.store._telemetry_rows import (
    SessionOutcome,
    check_session_outcome,
    session_outcome,
    unique,
)


class SessionStore:
    """Session outcomes of one workspace (mixed into ``Store``)."""

    _engine: Engine
    workspace: str

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
        query = select(table).where(mine(table, self.workspace))
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
