"""The migration runner: applies the pending migrations of ``_migrations``, in order.

Opening an up-to-date store only reads ``schema_migrations``. When something is pending,
each migration runs in its own write transaction that re-reads what is applied first, so
two processes opening a new store at once apply it once: on SQLite the write transaction
holds the database lock; on PostgreSQL it first takes a transaction-scoped advisory lock
(``pg_advisory_xact_lock``, one key per database), which also covers the creation of
``schema_migrations`` itself (``CREATE TABLE`` is not safe against a concurrent one).
PostgreSQL runs DDL inside transactions, so a failing migration leaves nothing behind there
either.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from sqlalchemy import (
    Column,
    Connection,
    DateTime,
    Engine,
    Integer,
    MetaData,
    Table,
    Text,
    text,
)
from sqlalchemy import inspect as inspect_db

from recallbench.core._errors import ConfigError
from recallbench.store import _migrations
from recallbench.store._engine import transaction
from recallbench.store._migrations import Migration

schema_migrations = Table(
    "schema_migrations",
    MetaData(),
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("name", Text, nullable=False),
    Column("applied_at", DateTime(timezone=True), nullable=False),
)
"""One row per applied migration: its number and function name."""

_NAME = re.compile(r"m(\d{3,})_\w+")
LOCK_KEY = 0x7265_6361_6C6C
"""PostgreSQL advisory lock key held while migrating ("recall" in ASCII)."""


def migration_number(migration: Migration) -> int:
    """``m001_history`` -> 1; migrations must be named ``mNNN_what``."""
    match = _NAME.fullmatch(migration.__name__)
    if match is None:
        raise ValueError(f"migration {migration.__name__!r} is not named mNNN_what")
    return int(match.group(1))


def migrate(engine: Engine) -> list[str]:
    """Apply the pending migrations; the names of those applied by this call."""
    migrations = list(_migrations.MIGRATIONS)  # read now: tests append to it
    numbers = [migration_number(m) for m in migrations]
    if numbers != list(range(1, len(numbers) + 1)):
        raise ValueError(f"migrations must be numbered 1, 2, 3, ... in order; got {numbers}")
    with transaction(engine) as connection:
        applied = _applied(connection)
    _check_known(applied, migrations)
    if applied is not None and len(applied) == len(migrations):
        return []
    with transaction(engine, write=True) as connection:
        _lock(connection)
        schema_migrations.create(connection, checkfirst=True)
    done = []
    for number, migration in zip(numbers, migrations, strict=True):
        with transaction(engine, write=True) as connection:
            _lock(connection)
            if number in (_applied(connection) or {}):
                continue  # another process applied it meanwhile
            migration(connection)
            connection.execute(
                schema_migrations.insert().values(
                    id=number, name=migration.__name__, applied_at=datetime.now(UTC)
                )
            )
            done.append(migration.__name__)
    return done


def _lock(connection: Connection) -> None:
    """Serialise migrating processes on PostgreSQL until this transaction ends (SQLite's
    write transaction is already exclusive)."""
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": LOCK_KEY})


def _applied(connection: Connection) -> dict[int, str] | None:
    if not inspect_db(connection).has_table(schema_migrations.name):
        return None
    rows = connection.execute(schema_migrations.select().order_by(schema_migrations.c.id))
    return {row.id: row.name for row in rows}


def _check_known(applied: dict[int, str] | None, migrations: list[Migration]) -> None:
    known = {migration_number(m): m.__name__ for m in migrations}
    for number, name in (applied or {}).items():
        if known.get(number) != name:
            raise ConfigError(
                f"the history store has migration {number} {name!r}, which this recallbench "
                "does not know: it was written by a newer version; upgrade recallbench"
            )
