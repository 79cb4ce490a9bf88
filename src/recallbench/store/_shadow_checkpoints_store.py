"""Shadow checkpoints in the store: per shadow test, its progress over the pairs settled up
to a moment, and what the store held then, so that ``shadow status`` adds only the pairs
since and sees when older ones changed (:mod:`recallbench.online._shadow_checkpoint`).

A mixin of :class:`~recallbench.store.Store` (through ``TelemetryStore``): every read and
write is confined to the store's workspace.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Engine, delete, func, or_, select

from recallbench.store._engine import transaction
from recallbench.store._rows import chunks
from recallbench.store._statements import mine
from recallbench.store._tables import feedback_events, judgments, shadow_checkpoints, shadow_runs


@dataclass(frozen=True, slots=True)
class ShadowCheckpoint:
    """A test's checkpoint: its progress covers the pairs up to ``covered_until``;
    ``marks``: the store's then (JSON-ready)."""

    test_id: int
    covered_until: datetime
    marks: dict[str, Any]
    written_at: datetime


@dataclass(frozen=True, slots=True)
class LateEvidence:
    """Shadow runs, and feedback events and judgments about them, newer than given marks,
    each led by the ``created_at`` of its pair."""

    pairs: list[tuple[datetime, int]]
    """(created_at, id) of the shadow runs themselves"""
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
        """The checkpoint of the test ``test_id`` without its progress (megabytes, read by
        :meth:`shadow_checkpoint_progress` when needed), None when it has none."""
        c = shadow_checkpoints.c
        query = select(c.covered_until, c.marks, c.written_at).where(
            mine(shadow_checkpoints, self.workspace), c.test_id == test_id
        )
        with transaction(self._engine) as connection:
            row = connection.execute(query).first()
        if row is None:
            return None
        covered, marks, written = row
        return ShadowCheckpoint(test_id, covered, json.loads(marks), written)

    def shadow_checkpoint_progress(self, checkpoint: ShadowCheckpoint) -> bytes | None:
        """The progress of ``checkpoint``; None when it was replaced since it was read."""
        c = shadow_checkpoints.c
        query = select(c.progress).where(
            mine(shadow_checkpoints, self.workspace),
            c.test_id == checkpoint.test_id,
            c.written_at == checkpoint.written_at,
        )
        with transaction(self._engine) as connection:
            found = connection.execute(query).scalar()
        return None if found is None else bytes(found)

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

    def evidence_marks(self) -> tuple[int, int, int, datetime | None]:
        """(largest shadow run id, largest feedback event id, largest judgment id, latest
        judgment ``created_at``) of the workspace (0 and None where there are none)."""
        s, f, j = shadow_runs.c, feedback_events.c, judgments.c
        with transaction(self._engine) as connection:
            pairs = connection.execute(
                select(func.max(s.id)).where(mine(shadow_runs, self.workspace))
            ).scalar()
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
        return int(pairs or 0), int(feedback or 0), int(labelled or 0), latest

    def id_counts(self, after: Sequence[int], upto: Sequence[int]) -> tuple[int, int, int]:
        """Rows with ``after < id <= upto`` of the shadow runs, feedback events and
        judgments (in that order; from each table's primary key)."""
        found = []
        with transaction(self._engine) as connection:
            for table, low, high in zip(
                (shadow_runs, feedback_events, judgments), after, upto, strict=True
            ):
                c = table.c
                query = select(func.count()).where(
                    mine(table, self.workspace), c.id > low, c.id <= high
                )
                found.append(int(connection.execute(query).scalar_one()))
        return found[0], found[1], found[2]

    def shadow_run_count(self, after: datetime, until: datetime) -> int:
        """Shadow runs with ``after < created_at <= until``."""
        c = shadow_runs.c
        query = select(func.count()).where(
            mine(shadow_runs, self.workspace), c.created_at > after, c.created_at <= until
        )
        with transaction(self._engine) as connection:
            return int(connection.execute(query).scalar_one())

    def late_evidence(
        self,
        pairs_after: int,
        feedback_after: int,
        judgments_after: int,
        labelled_from: datetime | None,
    ) -> LateEvidence:
        """The shadow runs with ``id > pairs_after``, and the feedback events with ``id >
        feedback_after`` and the judgments with ``id > judgments_after`` or ``created_at >=
        labelled_from`` (a label changed in place keeps its id) about shadow runs, of any
        window (one read serves every test)."""
        return self._late_rows((), (pairs_after, feedback_after, judgments_after), labelled_from)

    def late_evidence_between(
        self,
        after: datetime,
        until: datetime,
        bounds: Sequence[int],
        labelled_from: datetime | None,
    ) -> LateEvidence:
        """:meth:`late_evidence` (``bounds``: the three ``*_after`` ids) about the shadow
        runs with ``after < created_at <= until`` only: read from those runs, so that a
        few new pairs cost a few look-ups."""
        c = shadow_runs.c
        return self._late_rows((c.created_at > after, c.created_at <= until), bounds, labelled_from)

    def _late_rows(
        self,
        window: Sequence[ColumnElement[bool]],
        bounds: Sequence[int],
        labelled_from: datetime | None,
    ) -> LateEvidence:
        """:meth:`late_evidence` about the shadow runs that match ``window``."""
        s, f, j = shadow_runs.c, feedback_events.c, judgments.c
        pairs = select(s.created_at, s.id).where(
            mine(shadow_runs, self.workspace), *window, s.id > bounds[0]
        )
        events = (
            select(s.created_at, f.id)
            .select_from(feedback_events)
            .join(shadow_runs, (s.workspace_id == f.workspace_id) & (s.query_id == f.query_id))
            .where(mine(feedback_events, self.workspace), f.id > bounds[1], *window)
        )
        newer = j.id > bounds[2]
        changed = newer if labelled_from is None else or_(newer, j.created_at >= labelled_from)
        labels = (
            select(s.created_at, j.id, j.created_at, j.grade, j.source)
            .select_from(judgments)
            .join(shadow_runs, (s.workspace_id == j.workspace_id) & (s.query_id == j.query_id))
            .where(mine(judgments, self.workspace), changed, *window)
        )
        with transaction(self._engine) as connection:
            found_pairs = [(at, int(pair)) for at, pair in connection.execute(pairs)]
            if connection.dialect.name == "sqlite" and not window:
                # its planner walks every pair for the join: the few events first instead
                recent = select(f.query_id, f.id).where(
                    mine(feedback_events, self.workspace), f.id > bounds[1]
                )
                rows = connection.execute(recent).all()
                moments = self._pair_moments(connection, [str(row[0]) for row in rows])
                found_events = [(moments[q], int(e)) for q, e in rows if q in moments]
            else:
                found_events = [(at, int(event)) for at, event in connection.execute(events)]
            found_labels = [
                (at, int(label), stamped, int(grade), str(source))
                for at, label, stamped, grade, source in connection.execute(labels)
            ]
        return LateEvidence(found_pairs, found_events, found_labels)

    def _pair_moments(self, connection: Connection, query_ids: list[str]) -> dict[str, datetime]:
        """Query id -> ``created_at`` of its shadow run, for those that have one."""
        c = shadow_runs.c
        moments: dict[str, datetime] = {}
        for part in chunks(query_ids):
            query = select(c.query_id, c.created_at).where(
                mine(shadow_runs, self.workspace), c.query_id.in_(part)
            )
            moments.update({str(qid): at for qid, at in connection.execute(query)})
        return moments
