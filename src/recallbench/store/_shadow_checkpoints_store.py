"""Shadow checkpoints in the store: per shadow test, its progress over the pairs settled up
to a moment, and what the store held then, so that ``shadow status`` adds only the pairs
since and sees when older ones changed (:mod:`recallbench.online._shadow_checkpoint`).

A mixin of :class:`~recallbench.store.Store` (through ``TelemetryStore``): every read and
write is confined to the store's workspace.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, delete, func, or_, select

from recallbench.store._engine import transaction
from recallbench.store._statements import mine
from recallbench.store._tables import feedback_events, judgments, shadow_checkpoints, shadow_runs


@dataclass(frozen=True, slots=True)
class ShadowCheckpoint:
    """A test's progress over its pairs up to ``covered_until`` and the store's ``marks``
    then (JSON-ready)."""

    test_id: int
    covered_until: datetime
    marks: dict[str, Any]
    progress: bytes
    written_at: datetime


@dataclass(frozen=True, slots=True)
class LateEvidence:
    """Feedback events and judgments about pairs of a window, newer than given marks, each
    led by the ``created_at`` of the pair it is about."""

    feedback: list[tuple[datetime, int]]
    """(pair's created_at, event id)"""
    judgments: list[tuple[datetime, int, datetime, int, str]]
    """(pair's created_at, judgment id, its created_at, grade, source)"""


def forget_checkpoints(connection: Connection, workspace: str) -> None:
    """Drop the workspace's checkpoints, in the transaction that deletes pairs, feedback
    or labels (a deletion leaves no mark to see: each test is rebuilt once)."""
    connection.execute(delete(shadow_checkpoints).where(mine(shadow_checkpoints, workspace)))


class ShadowCheckpointStore:
    """Shadow checkpoints of one workspace (mixed into ``Store``)."""

    _engine: Engine
    workspace: str

    def shadow_checkpoint(self, test_id: int) -> ShadowCheckpoint | None:
        """The checkpoint of the test ``test_id``, None when it has none."""
        c = shadow_checkpoints.c
        query = select(c.covered_until, c.marks, c.progress, c.written_at).where(
            mine(shadow_checkpoints, self.workspace), c.test_id == test_id
        )
        with transaction(self._engine) as connection:
            row = connection.execute(query).first()
        if row is None:
            return None
        covered, marks, progress, written = row
        return ShadowCheckpoint(test_id, covered, json.loads(marks), bytes(progress), written)

    def put_shadow_checkpoint(
        self, test_id: int, covered_until: datetime, marks: dict[str, Any], progress: bytes
    ) -> None:
        """Keep ``progress`` as the checkpoint of ``test_id`` (replacing its last one)."""
        row = {
            "test_id": test_id,
            "workspace_id": self.workspace,
            "covered_until": covered_until,
            "marks": json.dumps(marks, separators=(",", ":")),
            "progress": progress,
            "written_at": datetime.now(UTC),
        }
        with transaction(self._engine, write=True) as connection:
            connection.execute(
                delete(shadow_checkpoints).where(
                    mine(shadow_checkpoints, self.workspace),
                    shadow_checkpoints.c.test_id == test_id,
                )
            )
            connection.execute(shadow_checkpoints.insert(), [row])

    def shadow_run_marks(self, since: datetime, until: datetime) -> tuple[int, int]:
        """(count, largest id) of the shadow runs with ``since <= created_at <= until``, of
        every profile: what a checkpoint covering them saw (0, 0 without one)."""
        c = shadow_runs.c
        query = select(func.count(), func.max(c.id)).where(
            mine(shadow_runs, self.workspace), c.created_at >= since, c.created_at <= until
        )
        with transaction(self._engine) as connection:
            count, largest = connection.execute(query).one()
        return int(count), int(largest or 0)

    def evidence_marks(self) -> tuple[int, int, datetime | None]:
        """(largest feedback event id, largest judgment id, latest judgment ``created_at``)
        of the workspace (0, 0, None when there are none)."""
        f, j = feedback_events.c, judgments.c
        with transaction(self._engine) as connection:
            feedback = connection.execute(
                select(func.max(f.id)).where(mine(feedback_events, self.workspace))
            ).scalar()
            labelled, latest = connection.execute(
                select(func.max(j.id), func.max(j.created_at)).where(
                    mine(judgments, self.workspace)
                )
            ).one()
        if isinstance(latest, str):  # SQLite returns an aggregate's text as it is stored
            latest = datetime.fromisoformat(latest)
        if latest is not None and latest.tzinfo is None:
            latest = latest.replace(tzinfo=UTC)
        return int(feedback or 0), int(labelled or 0), latest

    def late_evidence(
        self,
        since: datetime,
        until: datetime,
        feedback_after: int,
        judgments_after: int,
        labelled_from: datetime | None,
    ) -> LateEvidence:
        """The feedback events with ``id > feedback_after`` and the judgments with ``id >
        judgments_after`` or ``created_at >= labelled_from`` (a label changed in place keeps
        its id) about the shadow runs with ``since <= created_at <= until``."""
        f, j, s = feedback_events.c, judgments.c, shadow_runs.c
        window = (s.created_at >= since, s.created_at <= until)
        feedback = (
            select(s.created_at, f.id)
            .join_from(
                feedback_events,
                shadow_runs,
                (s.workspace_id == f.workspace_id) & (s.query_id == f.query_id),
            )
            .where(mine(feedback_events, self.workspace), f.id > feedback_after, *window)
        )
        newer = j.id > judgments_after
        changed = newer if labelled_from is None else or_(newer, j.created_at >= labelled_from)
        labels = (
            select(s.created_at, j.id, j.created_at, j.grade, j.source)
            .join_from(
                judgments,
                shadow_runs,
                (s.workspace_id == j.workspace_id) & (s.query_id == j.query_id),
            )
            .where(mine(judgments, self.workspace), changed, *window)
        )
        with transaction(self._engine) as connection:
            events = [(at, int(event)) for at, event in connection.execute(feedback)]
            judged = [
                (at, int(label), stamped, int(grade), str(source))
                for at, label, stamped, grade, source in connection.execute(labels)
            ]
        return LateEvidence(events, judged)
