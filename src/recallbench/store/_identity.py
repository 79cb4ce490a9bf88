"""Whether a database is a recallbench store, before anything is written to it.

A ``--store`` URL may name any database: a mistyped path, an application's own SQLite file,
a shared PostgreSQL database. Migrating such a database in place would add recallbench's
tables to it (or fail half-way on a table of the same name). So a database is first looked
at, read only:

* ``empty``: no tables and no views; it becomes a store;
* ``store``: it has the marker table ``recallbench_store`` (migration ``m009``);
* ``earlier``: a store made before the marker existed, recognised by its migration ledger:
  ``schema_migrations`` with recallbench's columns and row ``1, m001_history`` (or still
  empty, with no other table: a first migration interrupted); the marker is added;
* ``foreign``: anything else. It is refused unless ``recallbench store init`` asks for
  recallbench's tables beside the others, and even then not when a name collides.

On SQLite the look is taken through a connection that changes nothing: the store's own
connections switch the file to WAL mode, a change to the file itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Connection, text
from sqlalchemy import inspect as inspect_db

from recallbench.core._errors import ConfigError
from recallbench.store._migrations import MARKER_TABLE
from recallbench.store._tables import metadata as current_tables

Kind = Literal["empty", "store", "earlier", "foreign"]
LEDGER = "schema_migrations"
_LEDGER_COLUMNS = ["id", "name", "applied_at"]
_FIRST = (1, "m001_history")
_SHOWN_TABLES = 5


@dataclass(frozen=True)
class Found:
    """What a database holds, as far as recallbench is concerned."""

    kind: Kind
    tables: tuple[str, ...]
    """Every table and view in it (the default schema on PostgreSQL), sorted."""

    @property
    def others(self) -> tuple[str, ...]:
        """The tables and views that are not recallbench's."""
        ours = our_tables()
        return tuple(name for name in self.tables if name not in ours)


class NotAStoreError(ConfigError):
    """The database named as the store holds tables of its own and no recallbench marker."""


def our_tables() -> frozenset[str]:
    """Every table recallbench makes in a store."""
    return frozenset({*current_tables.tables, LEDGER, MARKER_TABLE})


def identify(connection: Connection) -> Found:
    """Look at the database behind ``connection`` without writing to it."""
    inspector = inspect_db(connection)
    tables = tuple(sorted({*inspector.get_table_names(), *inspector.get_view_names()}))
    if not tables:
        return Found("empty", tables)
    if MARKER_TABLE in tables:
        return Found("store", tables)
    if LEDGER in tables and _our_ledger(connection, tables):
        return Found("earlier", tables)
    return Found("foreign", tables)


def refuse_foreign(found: Found, shown: str, init: bool) -> None:
    """NotAStoreError for a foreign database, unless ``init`` asks for recallbench's
    tables beside its own and none of their names is taken; nothing for a store."""
    if found.kind != "foreign":
        return
    if not init:
        raise NotAStoreError(
            f"history store {shown} is not a recallbench store: it holds "
            f"{_listing(found.tables)} and no recallbench marker, so it was left untouched. "
            "Name a new file or an empty database with --store (or RECALLBENCH_STORE); "
            f"to add recallbench's tables to this database anyway, run "
            f"`recallbench store init --store {shown}`"
        )
    taken = sorted(our_tables() & set(found.tables))
    if taken:
        raise NotAStoreError(
            f"history store {shown}: cannot add recallbench's tables, the database already "
            f"has {_listing(tuple(taken))} of its own; it was left untouched. "
            "Use another database (or a PostgreSQL schema of its own)"
        )


def _our_ledger(connection: Connection, tables: tuple[str, ...]) -> bool:
    columns = [column["name"] for column in inspect_db(connection).get_columns(LEDGER)]
    if columns != _LEDGER_COLUMNS:
        return False
    rows = connection.execute(text(f"SELECT id, name FROM {LEDGER}")).all()
    if not rows:
        return tables == (LEDGER,)
    return _FIRST in {(row[0], row[1]) for row in rows}


def _listing(tables: tuple[str, ...]) -> str:
    shown = ", ".join(tables[:_SHOWN_TABLES])
    more = len(tables) - _SHOWN_TABLES
    noun = "table" if len(tables) == 1 else "tables"
    return f"{len(tables)} {noun} ({shown}{f', and {more} more' if more > 0 else ''})"
