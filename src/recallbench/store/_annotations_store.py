"""A team's labels in the store (m011): each annotator's own label of a (query, memory)
pair, the adjudication of a conflict, the append-only history of both, and the one label
per pair that everything downstream reads.

Every write names the ``version`` of the row it replaces (None: no row yet) and is refused
with :class:`StaleWrite`, nothing written, when the row has another one (another tab of the
same annotator, or another adjudicator). Each write appends an event to
``annotation_events`` and recomputes the pair's resolved label (:func:`resolved_label`) in
the same transaction, into ``judgments`` as source ``manual``:

* the adjudicated grade when the pair is adjudicated, annotator ``NAME (adjudicated)``;
* else the grade when every annotator of the pair gave the same, annotator their names
  joined by ``+`` in alphabetical order (``alice+bob``; one name when one labelled it);
* else none: the annotators disagree, the pair is a *conflict* and has no manual judgment
  until someone adjudicates it or the annotators come to agree.

A ``manual`` judgment written by other means (before m011, or by a script) is taken as its
annotator's label (``unknown`` when it names none) the first time the pair is labelled
here, so that it is neither lost nor silently outvoted.

On PostgreSQL a write first takes a transaction-scoped advisory lock on the pair, so that
two processes writing the same pair resolve it one after the other; on SQLite the write
transaction holds the database lock. A mixin of :class:`~recallbench.store.Store`.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import Connection, Engine, Table, delete, select, update
from sqlalchemy.exc import IntegrityError

from recallbench.core._errors import RecallbenchError
from recallbench.store._engine import transaction
from recallbench.store._shadow_checkpoints_store import forget_checkpoints
from recallbench.store._statements import mine
from recallbench.store._tables import (
    adjudications,
    annotation_events,
    annotation_labels,
    judgments,
)
from recallbench.store._telemetry import Judgment

Action = Literal["label", "relabel", "withdraw", "adjudicate"]
ADJUDICATED = " (adjudicated)"
"""Appended to the adjudicator's name in the resolved judgment's ``annotator``."""
UNKNOWN = "unknown"
"""The annotator of a manual judgment that named none."""


@dataclass(frozen=True, slots=True)
class Label:
    """An annotator's label of a pair (``grade`` None: withdrawn), or an adjudication
    (``annotator`` is then the adjudicator)."""

    query_id: str
    doc_id: str
    annotator: str
    grade: int | None
    version: int
    updated_at: datetime

    @property
    def key(self) -> tuple[str, str]:
        return (self.query_id, self.doc_id)


@dataclass(frozen=True, slots=True)
class AnnotationEvent:
    """One write, as the history keeps it."""

    query_id: str
    doc_id: str
    annotator: str
    action: Action
    adjudication: bool
    """True for an adjudication or its withdrawal; False for an annotator's own label."""
    old_grade: int | None
    new_grade: int | None
    created_at: datetime


class StaleWrite(RecallbenchError):
    """Nothing written: the row's version is not the one the write named."""


def resolved_label(
    labels: Sequence[Label], adjudication: Label | None, at: datetime
) -> Judgment | None:
    """The pair's one manual judgment (see the module's docstring), from its annotators'
    current labels and its adjudication; None for an unlabelled pair or a conflict."""
    if adjudication is not None and adjudication.grade is not None:
        name = adjudication.annotator + ADJUDICATED
        return Judgment(adjudication.query_id, adjudication.doc_id, adjudication.grade,
                        "manual", at, annotator=name)  # fmt: skip
    given = {label.annotator: label.grade for label in labels if label.grade is not None}
    grades = set(given.values())
    if len(grades) != 1:
        return None
    first = labels[0]
    names = "+".join(sorted(given))
    return Judgment(first.query_id, first.doc_id, grades.pop(), "manual", at, annotator=names)


class AnnotationStore:
    """Labels, adjudications and their history in one workspace (mixed into ``Store``)."""

    _engine: Engine
    workspace: str

    def labels(self, withdrawn: bool = False, pair: tuple[str, str] | None = None) -> list[Label]:
        """Every annotator's current label in this workspace (of one pair when given;
        withdrawn ones too when ``withdrawn``), by pair, then annotator."""
        return self._rows(annotation_labels, "annotator", withdrawn, pair)

    def adjudications(
        self, withdrawn: bool = False, pair: tuple[str, str] | None = None
    ) -> list[Label]:
        """Every pair's adjudication (as :meth:`labels`); ``annotator`` is the adjudicator."""
        return self._rows(adjudications, "adjudicator", withdrawn, pair)

    def annotation_history(
        self, query_id: str | None = None, doc_id: str | None = None
    ) -> list[AnnotationEvent]:
        """The events of this workspace (of one query, or pair), oldest first."""
        table = annotation_events
        query = select(table).where(mine(table, self.workspace))
        if query_id is not None:
            query = query.where(table.c.query_id == query_id)
        if doc_id is not None:
            query = query.where(table.c.doc_id == doc_id)
        with transaction(self._engine) as connection:
            rows = connection.execute(query.order_by(table.c.created_at, table.c.id)).mappings()
            return [
                AnnotationEvent(
                    row["query_id"],
                    row["doc_id"],
                    row["annotator"],
                    row["action"],
                    bool(row["adjudication"]),
                    row["old_grade"],
                    row["new_grade"],
                    row["created_at"],
                )
                for row in rows
            ]

    def write_label(
        self,
        query_id: str,
        doc_id: str,
        annotator: str,
        grade: int | None,
        replaces: int | None,
        withdraw: bool = False,
    ) -> Label:
        """Set ``annotator``'s label of the pair to ``grade`` (None: no label) over the row
        of version ``replaces`` (None: over no row). ``withdraw``: the write is an undo.
        StaleWrite, nothing written, when the row has another version."""
        with transaction(self._engine, write=True) as connection:
            self._lock(connection, query_id, doc_id)
            _adopt(connection, self.workspace, query_id, doc_id)
            written = self._put(
                connection,
                annotation_labels,
                "annotator",
                query_id,
                doc_id,
                annotator,
                grade,
                replaces,
            )
            old = written[1]
            action: Action = "withdraw" if withdraw else "label" if old is None else "relabel"
            self._event(connection, written[0], annotator, action, False, old)
            self._resolve(connection, query_id, doc_id, written[0].updated_at)
            return written[0]

    def write_adjudication(
        self,
        query_id: str,
        doc_id: str,
        by: str,
        grade: int | None,
        replaces: int | None,
        withdraw: bool = False,
        adjudicator: str | None = None,
    ) -> Label:
        """Set the pair's adjudication to ``grade`` (None: none) by ``by`` over the row of
        version ``replaces`` (None: over no row); an undo (``withdraw``) may put back an
        earlier ``adjudicator``'s grade. StaleWrite as :meth:`write_label`."""
        with transaction(self._engine, write=True) as connection:
            self._lock(connection, query_id, doc_id)
            _adopt(connection, self.workspace, query_id, doc_id)
            name = adjudicator or by
            written, old = self._put(
                connection, adjudications, "adjudicator", query_id, doc_id, name, grade, replaces
            )
            action: Action = "withdraw" if withdraw else "adjudicate"
            self._event(connection, written, by, action, True, old)
            self._resolve(connection, query_id, doc_id, written.updated_at)
            return written

    # -- in one transaction -----------------------------------------------------------

    def _lock(self, connection: Connection, query_id: str, doc_id: str) -> None:
        if connection.dialect.name == "postgresql":
            key = zlib.crc32(f"{self.workspace}\x1f{query_id}\x1f{doc_id}".encode())
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({key})")

    def _put(
        self,
        connection: Connection,
        table: Table,
        who: str,
        query_id: str,
        doc_id: str,
        name: str,
        grade: int | None,
        replaces: int | None,
    ) -> tuple[Label, int | None]:
        """The row written and the grade it replaced; StaleWrite when ``replaces`` is not
        the row's version (for a label, the row is the annotator's; else the pair's)."""
        where = [mine(table, self.workspace), table.c.query_id == query_id]
        where.append(table.c.doc_id == doc_id)
        if table is annotation_labels:
            where.append(table.c.annotator == name)
        row = connection.execute(select(table).where(*where)).mappings().first()
        if (row["version"] if row is not None else None) != replaces:
            raise StaleWrite(f"({query_id}, {doc_id}) changed since version {replaces}")
        now = datetime.now(UTC)
        values: dict[str, Any] = {who: name, "grade": grade, "updated_at": now}
        if row is None:
            try:
                with connection.begin_nested():
                    connection.execute(
                        table.insert().values(
                            workspace_id=self.workspace,
                            query_id=query_id,
                            doc_id=doc_id,
                            version=1,
                            **values,
                        )
                    )
            except IntegrityError:  # written by another process meanwhile
                raise StaleWrite(f"({query_id}, {doc_id}) was written meanwhile") from None
            version, old = 1, None
        else:
            done = connection.execute(
                update(table)
                .where(*where, table.c.version == replaces)
                .values(version=table.c.version + 1, **values)
            )
            if done.rowcount != 1:
                raise StaleWrite(f"({query_id}, {doc_id}) changed since version {replaces}")
            version, old = row["version"] + 1, row["grade"]
        return Label(query_id, doc_id, name, grade, version, now), old

    def _event(
        self,
        connection: Connection,
        written: Label,
        by: str,
        action: Action,
        adjudication: bool,
        old: int | None,
    ) -> None:
        connection.execute(
            annotation_events.insert().values(
                workspace_id=self.workspace,
                query_id=written.query_id,
                doc_id=written.doc_id,
                annotator=by,
                action=action,
                adjudication=adjudication,
                old_grade=old,
                new_grade=written.grade,
                created_at=written.updated_at,
            )
        )

    def _resolve(self, connection: Connection, query_id: str, doc_id: str, at: datetime) -> None:
        """Write the pair's resolved label to ``judgments`` (or remove it: a conflict)."""
        pair = [query_id, doc_id]
        labels = [
            _label(row, "annotator")
            for row in connection.execute(
                select(annotation_labels).where(*_pair(annotation_labels, self.workspace, *pair))
            ).mappings()
        ]
        found = (
            connection.execute(
                select(adjudications).where(*_pair(adjudications, self.workspace, *pair))
            )
            .mappings()
            .first()
        )
        adjudication = _label(found, "adjudicator") if found is not None else None
        resolved = resolved_label(labels, adjudication, at)
        withdrawn = connection.execute(
            delete(judgments).where(
                *_pair(judgments, self.workspace, *pair), judgments.c.source == "manual"
            )
        ).rowcount
        if resolved is None and withdrawn:
            forget_checkpoints(connection, self.workspace)
        if resolved is not None:
            connection.execute(
                judgments.insert().values(
                    workspace_id=self.workspace,
                    query_id=query_id,
                    doc_id=doc_id,
                    grade=resolved.grade,
                    source="manual",
                    annotator=resolved.annotator,
                    created_at=resolved.created_at,
                )
            )

    def _rows(
        self, table: Table, who: str, withdrawn: bool, pair: tuple[str, str] | None
    ) -> list[Label]:
        query = select(table).where(mine(table, self.workspace))
        if pair is not None:
            query = query.where(*_pair(table, self.workspace, *pair))
        if not withdrawn:
            query = query.where(table.c.grade.is_not(None))
        query = query.order_by(table.c.query_id, table.c.doc_id, table.c[who])
        with transaction(self._engine) as connection:
            return [_label(row, who) for row in connection.execute(query).mappings()]


def _pair(table: Table, workspace: str, query_id: str, doc_id: str) -> list[Any]:
    return [mine(table, workspace), table.c.query_id == query_id, table.c.doc_id == doc_id]


def _label(row: Any, who: str) -> Label:
    return Label(
        row["query_id"], row["doc_id"], row[who], row["grade"], row["version"], row["updated_at"]
    )


def _adopt(connection: Connection, workspace: str, query_id: str, doc_id: str) -> None:
    """A manual judgment of a pair no one labelled here becomes its annotator's label."""
    labelled = connection.execute(
        select(annotation_labels.c.id)
        .where(*_pair(annotation_labels, workspace, query_id, doc_id))
        .limit(1)
    ).first()
    if labelled is not None:
        return
    found = (
        connection.execute(
            select(judgments).where(
                *_pair(judgments, workspace, query_id, doc_id), judgments.c.source == "manual"
            )
        )
        .mappings()
        .first()
    )
    if found is None:
        return
    name = found["annotator"] or UNKNOWN
    connection.execute(
        annotation_labels.insert().values(
            workspace_id=workspace,
            query_id=query_id,
            doc_id=doc_id,
            annotator=name,
            grade=found["grade"],
            version=1,
            updated_at=found["created_at"],
        )
    )
    connection.execute(
        annotation_events.insert().values(
            workspace_id=workspace,
            query_id=query_id,
            doc_id=doc_id,
            annotator=name,
            action="label",
            adjudication=False,
            old_grade=None,
            new_grade=found["grade"],
            created_at=found["created_at"],
        )
    )
