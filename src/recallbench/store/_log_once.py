"""Logging telemetry that may have been logged before (an import of trace files run
twice): each query once, and the feedback about a query only when the query is new.

:meth:`~recallbench.store.Store.log` already skips a query whose id is logged, but appends
every feedback event it is given (events have no key). An import keys its queries (trace
id and span id) and derives every event from the file, so the events of a query already
imported were imported with it: they are left out here, in the same transaction that
checks which queries are new.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlalchemy import select

from recallbench.store._engine import transaction
from recallbench.store._query_log_store import _execute_many
from recallbench.store._rows import chunks
from recallbench.store._statements import dialect_insert, mine
from recallbench.store._tables import feedback_events, query_log
from recallbench.store._telemetry import FeedbackEvent, QueryLogEntry
from recallbench.store._telemetry_rows import feedback_row, query_row

if TYPE_CHECKING:
    from recallbench.store._store import Store


def log_once(
    store: Store, queries: Sequence[QueryLogEntry], feedback: Sequence[FeedbackEvent]
) -> tuple[int, int]:
    """Log the ``queries`` not yet in the store's workspace and the ``feedback`` about
    them, in one transaction (all or nothing). Returns (queries logged, events logged);
    queries already logged, and events about them, are skipped."""
    ids = list(dict.fromkeys(entry.query_id for entry in queries))
    with transaction(store._engine, write=True) as connection:
        known: set[str] = set()
        for part in chunks(ids):
            found = select(query_log.c.query_id).where(
                mine(query_log, store.workspace), query_log.c.query_id.in_(part)
            )
            known.update(connection.execute(found).scalars())
        fresh = [entry for entry in queries if entry.query_id not in known]
        seen: set[str] = set()
        rows = []
        for entry in fresh:
            if entry.query_id not in seen:
                seen.add(entry.query_id)
                rows.append(query_row(entry, store.workspace))
        events = [
            feedback_row(event, store.workspace) for event in feedback if event.query_id in seen
        ]
        if rows:
            insert = dialect_insert(connection, query_log).on_conflict_do_nothing(
                index_elements=["workspace_id", "query_id"]
            )
            _execute_many(connection, insert, rows)
        if events:
            _execute_many(connection, feedback_events.insert(), events)
    return len(rows), len(events)
