"""Statement pieces the store's telemetry mixins share, and the judge cache: the rows of
one workspace, and an INSERT in the dialect's spelling of ``ON CONFLICT``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import ColumnElement, Connection, Table

from recallbench.core._errors import ConfigError

if TYPE_CHECKING:
    from sqlalchemy.dialects.postgresql import Insert as PostgresInsert
    from sqlalchemy.dialects.sqlite import Insert as SqliteInsert


def mine(table: Table, workspace: str) -> ColumnElement[bool]:
    return table.c.workspace_id == workspace


def dialect_insert(connection: Connection, table: Table) -> PostgresInsert | SqliteInsert:
    """INSERT with the dialect's ON CONFLICT clauses (both spell them the same way)."""
    name = connection.dialect.name
    if name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as postgres_insert

        return postgres_insert(table)
    if name == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert(table)
    raise ConfigError(f"the history store supports SQLite and PostgreSQL, not {name}")
