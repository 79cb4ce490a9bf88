"""The query log, its feedback events and judgments in the store: what the SDK logger and
the MCP proxy write and ``recallbench harvest`` reads, and the golden mark that keeps a
logged query from retention.

A mixin of :class:`~recallbench.store.Store` (through ``TelemetryStore``): every read and
write is confined to the store's workspace.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from itertools import chain, groupby, islice
from operator import eq, itemgetter
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    Table,
    Text,
    delete,
    func,
    select,
    type_coerce,
    update,
)

from recallbench.store._engine import transaction
from recallbench.store._rows import chunks
from recallbench.store._shadow_checkpoints_store import forget_checkpoints
from recallbench.store._statements import dialect_insert, mine
from recallbench.store._tables import as_utc, feedback_events, judgments, query_log, shadow_runs
from recallbench.store._telemetry import FeedbackEvent, Judgment, JudgmentSource, QueryLogEntry
from recallbench.store._telemetry_rows import (
    feedback_event,
    feedback_row,
    judgment,
    judgment_rows,
    query_entry,
    query_row,
    unique,
)

BATCH = 5_000
"""Rows per executemany call: bounds the memory of one statement's parameters."""
STREAM_BATCH = 1_000
"""Rows fetched at a time by the streaming reads: few enough that a batch is still in the
processor's cache when its rows are ordered and then pooled (a batch of 20,000 rows took
a third longer to read and pool, on SQLite and PostgreSQL alike)."""


class QueryLogStore:
    """Query log, feedback and judgments of one workspace (mixed into ``Store``)."""

    _engine: Engine
    workspace: str

    def log(
        self,
        queries: Sequence[QueryLogEntry] = (),
        feedback: Sequence[FeedbackEvent] = (),
        judgments: Sequence[Judgment] = (),
    ) -> None:
        """Write telemetry in one transaction: all of it or, on an error, none of it.

        A query whose ``query_id`` is already logged in this workspace is skipped, and so
        is an event whose ``event_id`` is (the SDK may deliver a batch twice: a failure
        after its commit is retried); a judgment replaces the stored one with the same
        query, document and source when it is at least as recent (``created_at``), so the
        latest grade is kept whatever the order of delivery. A feedback kind, judgment
        source or grade outside the allowed values is refused by the database
        (``sqlalchemy.exc.IntegrityError``)."""
        if not (queries or feedback or judgments):
            return
        query_rows = [query_row(entry, self.workspace) for entry in queries]
        feedback_rows = [feedback_row(event, self.workspace) for event in feedback]
        judged = judgment_rows(judgments, self.workspace)
        with transaction(self._engine, write=True) as connection:
            if query_rows:
                ignore = dialect_insert(connection, query_log).on_conflict_do_nothing(
                    index_elements=["workspace_id", "query_id"]
                )
                _execute_many(connection, ignore, query_rows)
            if feedback_rows:
                _execute_many(connection, _feedback_insert(connection), feedback_rows)
            if judged:
                _execute_many(connection, _judgment_upsert(connection), judged)

    def log_new(
        self, queries: Sequence[QueryLogEntry], feedback: Sequence[FeedbackEvent]
    ) -> tuple[int, int]:
        """Log the ``queries`` not yet in this workspace and the ``feedback`` about them, in
        one transaction (all or nothing); returns (queries logged, events logged).

        For an import that may run twice (trace files): :meth:`log` skips a query already
        logged but appends every event it is given (an import's events get new ids each
        time it reads its files). An import keys
        its queries (trace and span id) and derives every event from its files, so the
        events of a query already imported came with it: they are left out here."""
        ids = list(dict.fromkeys(entry.query_id for entry in queries))
        with transaction(self._engine, write=True) as connection:
            known: set[str] = set()
            for part in chunks(ids):
                found = select(query_log.c.query_id).where(
                    mine(query_log, self.workspace), query_log.c.query_id.in_(part)
                )
                known.update(connection.execute(found).scalars())
            fresh = {e.query_id: e for e in reversed(queries) if e.query_id not in known}
            rows = [
                query_row(fresh[query_id], self.workspace) for query_id in ids if query_id in fresh
            ]
            events = [feedback_row(e, self.workspace) for e in feedback if e.query_id in fresh]
            if rows:
                ignore = dialect_insert(connection, query_log).on_conflict_do_nothing(
                    index_elements=["workspace_id", "query_id"]
                )
                _execute_many(connection, ignore, rows)
            if events:
                _execute_many(connection, _feedback_insert(connection), events)
        return len(rows), len(events)

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

    def query_log_stream(
        self, since: datetime | None = None, until: datetime | None = None
    ) -> Iterator[tuple[str, str, str | None, str | None, datetime, str, str]]:
        """(query_id, text, intent, category, created_at, results JSON, texts JSON) of the
        queries :meth:`query_log` returns, oldest first, then by query id (code point
        order): streamed in batches (a server-side cursor on PostgreSQL) and left as the
        store keeps them, for a log too large to hold as entries (``recallbench
        harvest``)."""
        c = query_log.c
        columns = (c.query_id, c.text, c.intent, c.category, c.created_at, c.results, c.texts)
        for qid, text, intent, category, at, results, texts in self._log_rows(
            columns, since, until
        ):
            yield qid, text, intent, category, logged_moment(at), results, texts

    def query_log_scan(
        self, since: datetime | None = None, until: datetime | None = None
    ) -> Iterator[tuple[str, str, str | None, str | datetime, str]]:
        """(query_id, text, intent, created_at, results JSON) of :meth:`query_log_stream`'s
        rows in its order: the columns a harvest pools and decides on, without the memory
        texts (most of a row's bytes, and of the time to move and parse them).
        ``created_at`` is left as the database returns it (SQLite: text; PostgreSQL:
        text with psycopg, else a datetime): :func:`logged_moment` converts it, and a
        harvest converts only the few it keeps (one per de-duplicated query), not
        millions."""
        c = query_log.c
        columns = (c.query_id, c.text, c.intent, c.created_at, c.results)
        return self._log_rows(columns, since, until)

    def _log_rows(
        self, columns: Sequence[Any], since: datetime | None, until: datetime | None
    ) -> Iterator[Any]:
        """:meth:`_log_batches` row by row (unpacked in C: no Python step per row)."""
        return chain.from_iterable(self._log_batches(columns, since, until))

    def _log_batches(
        self, columns: Sequence[Any], since: datetime | None, until: datetime | None
    ) -> Iterator[list[Any]]:
        """Rows of ``columns`` (``query_id`` and ``created_at`` among them) of the log,
        oldest first, then by query id (code point order), in batches (a
        server-side cursor on PostgreSQL); ``created_at`` left as the database returns it.

        The database orders by ``created_at`` alone, which its index gives; the rows of
        one instant are put in query id order here (:func:`_ties_by_id`): SQLite would
        otherwise sort every instant's rows in a temporary B-tree, most of the read's time
        on a log of millions of searches."""
        c = query_log.c
        raw = [type_coerce(col, Text) if col is c.created_at else col for col in columns]
        query = select(*raw).where(mine(query_log, self.workspace))
        if since is not None:
            query = query.where(c.created_at >= since)
        if until is not None:
            query = query.where(c.created_at < until)
        query = query.order_by(c.created_at)
        at = next(i for i, col in enumerate(columns) if col is c.created_at)
        qid = next(i for i, col in enumerate(columns) if col is c.query_id)
        with transaction(self._engine) as connection, _instants_as_text(connection):
            batches = self._batches(connection, query)
            if connection.dialect.name == "postgresql":  # SQLite reads in this thread
                yield from _ties_by_id(_read_ahead(batches), at, qid)
            else:
                yield from _ties_by_id(batches, at, qid)

    def _batches(self, connection: Connection, query: Any) -> Generator[list[Any]]:
        """The rows of ``query`` in batches of :data:`STREAM_BATCH`, as the driver returns
        them (tuples): a server-side cursor on PostgreSQL. Past the first batch they are
        read from the driver's cursor itself: SQLAlchemy's result rows cost more than
        the read of millions of them from the database."""
        options = connection.execution_options(stream_results=True)
        with options.execute(query) as result:
            # the result holds the row it read ahead: the first batch is read through it
            rows = [tuple(row) for row in result.fetchmany(STREAM_BATCH)]
            while rows:
                yield rows
                cursor = result.cursor
                if len(rows) < STREAM_BATCH or cursor is None:  # the last batch
                    break
                rows = list(cursor.fetchmany(STREAM_BATCH))

    def query_log_details(self, query_ids: Sequence[str]) -> dict[str, tuple[str | None, str]]:
        """Query id -> (category, texts JSON) of these logged queries (ids never logged are
        left out): the columns :meth:`query_log_scan` leaves out, for a few rows."""
        c = query_log.c
        found: dict[str, tuple[str | None, str]] = {}
        with transaction(self._engine) as connection:
            for part in chunks(unique(query_ids)):
                query = select(c.query_id, c.category, c.texts).where(
                    mine(query_log, self.workspace), c.query_id.in_(part)
                )
                for qid, category, texts in connection.execute(query):
                    found[qid] = (category, texts)
        return found

    def feedback_stream(
        self, since: datetime | None = None, until: datetime | None = None
    ) -> Iterator[tuple[str, str, str | None]]:
        """(query_id, kind, doc_id) of the feedback events about the queries logged with
        ``since <= created_at < until`` (all of them when neither is given), in no
        particular order, streamed in batches."""
        f, q = feedback_events.c, query_log.c
        query = select(f.query_id, f.kind, f.doc_id).where(mine(feedback_events, self.workspace))
        if since is not None or until is not None:
            logged = select(q.query_id).where(
                q.workspace_id == f.workspace_id, q.query_id == f.query_id
            )
            if since is not None:
                logged = logged.where(q.created_at >= since)
            if until is not None:
                logged = logged.where(q.created_at < until)
            query = query.where(logged.exists())
        return chain.from_iterable(self._streamed(query))

    def _streamed(self, query: Any) -> Iterator[list[Any]]:
        """The rows of ``query`` in batches, in a transaction of their own (:meth:`_batches`)."""
        with transaction(self._engine) as connection:
            yield from self._batches(connection, query)

    def query_log_page(self, offset: int, limit: int) -> list[QueryLogEntry]:
        """A page of :meth:`query_log` newest first (the reverse of its order): ``limit``
        entries after the first ``offset``."""
        c = query_log.c
        query = (
            select(query_log)
            .where(mine(query_log, self.workspace))
            .order_by(c.created_at.desc(), c.id.desc())
            .offset(offset)
            .limit(limit)
        )
        with transaction(self._engine) as connection:
            return [query_entry(row) for row in connection.execute(query).mappings()]

    def query_log_entry(self, query_id: str) -> QueryLogEntry | None:
        """The logged query with this id, None when there is none."""
        query = select(query_log).where(
            mine(query_log, self.workspace), query_log.c.query_id == query_id
        )
        with transaction(self._engine) as connection:
            row = connection.execute(query).mappings().first()
        return None if row is None else query_entry(row)

    def query_log_count(self) -> int:
        """How many queries this workspace logged."""
        query = select(func.count()).select_from(query_log).where(mine(query_log, self.workspace))
        with transaction(self._engine) as connection:
            return int(connection.execute(query).scalar_one())

    def query_log_count_upto(self, cap: int) -> int:
        """How many queries this workspace logged, counted up to ``cap + 1``: more than
        ``cap`` when it returns ``cap + 1`` (a count of millions of rows reads them all)."""
        first = select(query_log.c.id).where(mine(query_log, self.workspace)).limit(cap + 1)
        query = select(func.count()).select_from(first.subquery())
        with transaction(self._engine) as connection:
            return int(connection.execute(query).scalar_one())

    def query_log_newest(self, limit: int | None = None) -> Iterator[tuple[str, str]]:
        """(query_id, text) of every logged query (the newest ``limit`` when given), newest
        first (:meth:`query_log_page`'s order), streamed in batches: for a search no index
        answers."""
        c = query_log.c
        query = (
            select(c.query_id, c.text)
            .where(mine(query_log, self.workspace))
            .order_by(c.created_at.desc(), c.id.desc())
            .limit(limit)
        )
        with transaction(self._engine) as connection:
            options = connection.execution_options(stream_results=True, yield_per=STREAM_BATCH)
            for part in options.execute(query).partitions():
                yield from part

    def query_log_entries(self, query_ids: Sequence[str]) -> dict[str, QueryLogEntry]:
        """The logged queries with these ids, by id (ids never logged are left out)."""
        found: dict[str, QueryLogEntry] = {}
        with transaction(self._engine) as connection:
            for part in chunks(unique(query_ids)):
                query = select(query_log).where(
                    mine(query_log, self.workspace), query_log.c.query_id.in_(part)
                )
                for row in connection.execute(query).mappings():
                    found[row["query_id"]] = query_entry(row)
        return found

    def shadowed_query_texts(self, since: datetime, until: datetime | None) -> dict[str, str]:
        """Query id -> text of the queries logged with ``since <= created_at <= until``
        that have a shadow pair logged in the same window (for a shadow test's units)."""
        q, s = query_log.c, shadow_runs.c
        query = (
            select(q.query_id, q.text)
            .select_from(shadow_runs.join(query_log, q.query_id == s.query_id))
            .where(
                mine(shadow_runs, self.workspace),
                mine(query_log, self.workspace),
                s.created_at >= since,
                q.created_at >= since,
            )
        )
        if until is not None:
            query = query.where(s.created_at <= until, q.created_at <= until)
        with transaction(self._engine) as connection:
            return {str(qid): str(text) for qid, text in connection.execute(query)}

    def feedback_page(self, offset: int, limit: int, kind: str = "") -> list[FeedbackEvent]:
        """A page of :meth:`feedback` newest first (of one kind when given)."""
        c = feedback_events.c
        query = select(feedback_events).where(mine(feedback_events, self.workspace))
        if kind:
            query = query.where(c.kind == kind)
        query = query.order_by(c.created_at.desc(), c.id.desc()).offset(offset).limit(limit)
        with transaction(self._engine) as connection:
            return [feedback_event(row) for row in connection.execute(query).mappings()]

    def feedback_counts(self) -> dict[str, int]:
        """Feedback events by kind, the kinds in the order of their first event (oldest,
        then first logged): what counting :meth:`feedback` in its order gives."""
        c = feedback_events.c
        query = (
            select(c.kind, func.count(), func.min(c.created_at))
            .where(mine(feedback_events, self.workspace))
            .group_by(c.kind)
        )
        with transaction(self._engine) as connection:
            rows = [(kind, int(n), as_utc(first)) for kind, n, first in connection.execute(query)]
            firsts = [first for _, _, first in rows]
            order: dict[str, tuple[datetime, int]] = {}
            for kind, _, first in rows:
                tie = 0
                if firsts.count(first) > 1:  # two kinds' first events at one instant
                    tie = connection.execute(
                        select(func.min(c.id)).where(
                            mine(feedback_events, self.workspace),
                            c.kind == kind,
                            c.created_at == first,
                        )
                    ).scalar_one()
                order[kind] = (first, tie)
        return {kind: n for kind, n, _ in sorted(rows, key=lambda row: order[row[0]])}

    def feedback_count(self, kind: str = "") -> int:
        """How many feedback events this workspace holds (of one kind when given)."""
        c = feedback_events.c
        query = select(func.count()).select_from(feedback_events)
        query = query.where(mine(feedback_events, self.workspace))
        if kind:
            query = query.where(c.kind == kind)
        with transaction(self._engine) as connection:
            return int(connection.execute(query).scalar_one())

    def feedback(
        self, query_ids: Sequence[str] | None = None, since: datetime | None = None
    ) -> list[FeedbackEvent]:
        """Feedback events (of these queries when given; from ``since`` on when given),
        oldest first, then in logging order."""
        table = feedback_events
        where = [table.c.workspace_id == self.workspace]
        if since is not None:
            where.append(table.c.created_at >= since)
        order = (table.c.created_at, table.c.id)
        rows = self._select_for(table, where, query_ids, order, sort_here=True)
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
            mine(table, self.workspace),
            table.c.query_id == query_id,
            table.c.doc_id == doc_id,
            table.c.source == source,
        ]
        if annotator is not None:
            where.append(table.c.annotator == annotator)
        with transaction(self._engine, write=True) as connection:
            deleted = connection.execute(delete(table).where(*where)).rowcount > 0
            if deleted:
                forget_checkpoints(connection, self.workspace)
            return deleted

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
                    .where(mine(query_log, self.workspace), query_log.c.query_id.in_(part))
                    .values(**values)
                )
                matched += result.rowcount
        return matched

    def _select_for(
        self,
        table: Table,
        where: list[ColumnElement[bool]],
        query_ids: Sequence[str] | None,
        order: tuple[ColumnElement[Any], ...],
        sort_here: bool = False,
    ) -> list[Any]:
        """Rows matching ``where`` and, when given, one of ``query_ids`` (queried in
        chunks: bound parameters per statement are limited), sorted by ``order``.

        ``sort_here``: the chunks of ids are sorted here, not by the database (an order
        with no text, which sorts the same anywhere): SQLite would otherwise walk an index
        that gives the order (every event of the workspace) instead of looking the ids up."""
        base = select(table).where(*where)
        with transaction(self._engine) as connection:
            if query_ids is None:
                return list(connection.execute(base.order_by(*order)).mappings())
            parts = list(chunks(unique(query_ids)))
            if not sort_here:
                base = base.order_by(*order)
            rows: list[Any] = []
            for part in parts:
                rows.extend(connection.execute(base.where(table.c.query_id.in_(part))).mappings())
        if len(parts) > 1 or sort_here:  # each chunk came sorted, or none did
            names = [column.key for column in order]
            rows.sort(key=lambda row: tuple(row[name] for name in names))
        return rows


def _feedback_insert(connection: Connection) -> Any:
    """An event already stored under its ``event_id`` (a retried batch) is skipped."""
    return dialect_insert(connection, feedback_events).on_conflict_do_nothing(
        index_elements=["workspace_id", "event_id"]
    )


def _judgment_upsert(connection: Connection) -> Any:
    statement = dialect_insert(connection, judgments)
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


def _execute_many(connection: Connection, statement: Any, rows: list[dict[str, Any]]) -> None:
    for start in range(0, len(rows), BATCH):
        connection.execute(statement, rows[start : start + BATCH])


def logged_moment(value: str | datetime) -> datetime:
    """A created_at as the driver returns it (SQLite: text in UTC, the format SQLAlchemy
    writes; PostgreSQL: an aware datetime, or its ISO text with an offset as the log's
    reads give it) as an aware datetime in UTC."""
    if isinstance(value, str):
        return as_utc(datetime.fromisoformat(value))
    return value if value.tzinfo is UTC else as_utc(value)


@contextmanager
def _instants_as_text(connection: Connection) -> Iterator[None]:
    """PostgreSQL's timestamps read as the text the server sends (with psycopg), not as
    datetimes, while this connection streams the log: millions of rows would spend
    seconds being given datetimes that a harvest only compares for equality (one
    instant, one text) and converts a few of (:func:`logged_moment`). Other drivers
    give datetimes, as before."""
    adapters = getattr(connection.connection.driver_connection, "adapters", None)
    if connection.dialect.driver != "psycopg" or adapters is None:
        yield
        return
    from psycopg.pq import Format
    from psycopg.types.string import TextLoader

    oid = adapters.types["timestamptz"].oid
    before = adapters.get_loader(oid, Format.TEXT)
    adapters.register_loader(oid, TextLoader)
    try:
        yield
    finally:
        if before is not None:
            adapters.register_loader(oid, before)


_END = object()


def _read_ahead(batches: Generator[list[Any]]) -> Iterator[list[Any]]:
    """``batches`` read by a thread of their own, one batch ahead: the server reads the
    next batch while this one is pooled (the driver waits for it without holding the
    interpreter), instead of idling until it is asked. The thread alone runs ``batches``
    (closed there when the reader stops early); it has ended when this returns."""
    ahead: queue.Queue[Any] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def read() -> None:
        try:
            for batch in batches:
                ahead.put(batch)
                if stop.is_set():
                    break
        except BaseException as error:  # raised where the batches are read
            ahead.put(error)
        finally:
            batches.close()
        ahead.put(_END)

    reader = threading.Thread(target=read, name="recallbench-read-ahead", daemon=True)
    reader.start()
    try:
        while (batch := ahead.get()) is not _END:
            if isinstance(batch, BaseException):
                raise batch
            yield batch
    finally:
        stop.set()
        while reader.is_alive():  # let it put what it holds, see the stop and end
            with contextlib.suppress(queue.Empty):
                ahead.get(timeout=0.05)
        reader.join()


def _ties_by_id(batches: Iterator[list[Any]], at: int, qid: int) -> Iterator[list[Any]]:
    """The batches of rows of ``batches`` (in ``created_at`` order, its value at position ``at``)
    with the rows of one instant in query id order (at ``qid``; code point order, as
    SQLite's and PostgreSQL's "C" collation compare). The rows of a batch's last instant
    wait for the next batch, which may hold more of them. Values are only compared for
    equality, never ordered here (the database's order stands): one instant is one value
    (SQLite keeps a created_at as text in one format; PostgreSQL sends one text per
    instant in a session, or gives datetimes)."""
    instant, by_id = itemgetter(at), itemgetter(qid)
    held: list[Any] = []
    for batch in batches:
        rows = held + batch if held else batch
        last = instant(rows[-1])
        cut = len(rows) - 1
        while cut and instant(rows[cut - 1]) == last:
            cut -= 1
        held = rows[cut:]
        rows = rows[:cut]
        instants = list(map(instant, rows))
        if any(map(eq, instants, islice(instants, 1, None))):  # two rows at one instant
            rows = [
                row for _, tied in groupby(rows, key=instant) for row in sorted(tied, key=by_id)
            ]
        yield rows
    held.sort(key=by_id)
    yield held
