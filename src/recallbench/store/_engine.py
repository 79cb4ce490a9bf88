"""Where the history store lives and how we connect to it.

A store is selected by a SQLAlchemy URL so that SQLite (the embedded default) and
PostgreSQL (the shared, team-scale store) sit behind the same code. SQLite connections get
WAL mode (readers never wait for a writer), a busy timeout (concurrent writers queue
instead of failing) and enforced foreign keys. Writes begin with ``BEGIN IMMEDIATE``: a
deferred transaction that later needs the write lock can fail at once with "database is
locked", whatever the timeout.

``postgresql://`` and ``postgres://`` URLs (libpq's spelling) use psycopg 3
(``pip install 'recallbench[postgres]'``); a URL naming another driver
(``postgresql+psycopg2://``) is taken as written.

URLs are parsed by SQLAlchemy's parser and shown only with the password masked. A password
holding an unencoded ``@`` is refused: the parser would take its tail for the host name,
show it and look it up in the DNS. A new SQLite file is created readable by its owner only
(it holds agents' queries and memories); SQLite gives its -wal and -shm files the same mode.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, ExceptionContext, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.pool import NullPool

from recallbench.core._errors import ConfigError
from recallbench.core._home import data_home

ENV_VAR = "RECALLBENCH_STORE"
BUSY_TIMEOUT_MS = 30_000
"""How long a SQLite writer waits for another one before giving up."""
CONNECT_TIMEOUT_S = 10
"""How long a PostgreSQL connection attempt may take (unless the URL sets connect_timeout)."""
POSTGRES_DRIVER = "postgresql+psycopg"
_POSTGRES_NAMES = frozenset({"postgresql", "postgres"})
_LIBPQ_DRIVERS = frozenset({POSTGRES_DRIVER, "postgresql+psycopg2"})
"""Drivers that take libpq's ``connect_timeout``."""
SQLITE_FILE_MODE = 0o600
"""Mode of a new SQLite store: owner only."""
STORE_ATTRIBUTE = "recallbench_store"
"""Attribute naming the store (password masked) on a SQLAlchemy error raised by its engine,
so that the command line can say which store failed."""
_MAX_PORT = 65_535
_WRITE = "recallbench_write"
"""Execution option that makes a SQLite transaction begin IMMEDIATE (see module doc)."""


# A connection that Ctrl-C interrupts mid-statement fails its reset when the pool takes it
# back during the exit; SQLAlchemy logs that with a traceback, which Python's last-resort
# handler prints on standard error after the user asked to stop (and the run said
# "interrupted"). A NullHandler keeps the pool's records from that handler only: an
# application that configures logging still receives them.
logging.getLogger("sqlalchemy.pool").addHandler(logging.NullHandler())


def default_store_url() -> str:
    """``$RECALLBENCH_STORE``, else ``recallbench.db`` in the data directory
    (``$RECALLBENCH_HOME``, else ``$XDG_DATA_HOME/recallbench``)."""
    if os.environ.get(ENV_VAR):
        return os.environ[ENV_VAR]

    return f"sqlite:///{data_home() / 'recallbench.db'}"


def display_url(url: str) -> str:
    """The URL with any password masked, for messages and ``Store.url``."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        parsed = None
    if parsed is not None and "@" not in (parsed.host or ""):
        return parsed.render_as_string(hide_password=True)
    # unparsable, or an unencoded "@" in the password: mask up to the last "@"
    return re.sub(r"(://[^:/@]*:).*@", r"\1***@", url)


def parse_store_url(url: str) -> URL:
    """``url`` parsed; ConfigError (naming it, masked) when it is not a database URL, its
    port is not a number from 1 to 65535, or its password holds an unencoded ``@``.
    Nothing is connected to and no name is looked up."""
    shown = display_url(url)
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ConfigError(
            f"history store {shown!r} is not a database URL "
            "(expected e.g. sqlite:///path/to/recallbench.db)"
        ) from None
    except ValueError:
        raise ConfigError(
            f"history store {shown!r}: the port is not a number (expected 1-{_MAX_PORT})"
        ) from None
    if "@" in (parsed.host or ""):
        raise ConfigError(
            f"history store {shown!r}: the user name or password contains an unencoded '@'; "
            "percent-encode it as %40 (postgresql://user:p%40ss@host/db)"
        )
    if parsed.port is not None and not 1 <= parsed.port <= _MAX_PORT:
        raise ConfigError(
            f"history store {shown!r}: port {parsed.port} is out of range (1-{_MAX_PORT})"
        )
    return parsed


def create_store_engine(url: str, probe: bool = False) -> Engine:
    """An engine for ``url``; for a SQLite file, its folder is created first. A ``probe``
    engine keeps no pooled connection and, on SQLite, changes nothing on connecting (no WAL
    switch): it only looks at a database that may not be a store (``_identity``).

    Raises ConfigError for a malformed URL, an unknown database kind or a missing driver;
    an unreachable database shows up at the first connection (see ``open_store``)."""
    shown = display_url(url)
    parsed = parse_store_url(url)
    if parsed.drivername in _POSTGRES_NAMES:
        parsed = parsed.set(drivername=POSTGRES_DRIVER)
    options: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        _create_file(parsed, shown)
    elif parsed.drivername in _LIBPQ_DRIVERS and "connect_timeout" not in parsed.query:
        options["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT_S}
    if probe:
        options["poolclass"] = NullPool
        if parsed.get_backend_name() == "sqlite":  # waits for a writer as the store does
            options["connect_args"] = {"timeout": BUSY_TIMEOUT_MS / 1000}
    try:
        # errors never quote the statement's parameters: agents' queries and memories
        engine = create_engine(parsed, hide_parameters=True, **options)
    except NoSuchModuleError:
        raise ConfigError(
            f"history store {shown!r}: unknown database kind {parsed.drivername!r} "
            "(expected e.g. sqlite:///path/to/recallbench.db or postgresql://user@host/db)"
        ) from None
    except ImportError as error:
        hint = (
            "pip install 'recallbench[postgres]'"
            if parsed.get_backend_name() == "postgresql"
            else "install it with pip"
        )
        raise ConfigError(
            f"history store {shown!r}: the database driver is not installed ({error}); {hint}"
        ) from None
    if engine.dialect.name == "sqlite" and not probe:
        _configure_sqlite(engine)
    _name_store_in_errors(engine, shown)
    return engine


@contextmanager
def transaction(engine: Engine, write: bool = False) -> Iterator[Connection]:
    """One transaction, committed on success; ``write`` takes SQLite's write lock first."""
    with engine.connect() as connection:
        if write:
            connection = connection.execution_options(**{_WRITE: True})
        with connection.begin():
            yield connection


def _create_file(url: URL, shown: str) -> None:
    """Create a SQLite store's folder, and the file itself owner-only when it is new (an
    existing file keeps the mode its owner gave it). ConfigError when either cannot be."""
    database = url.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return
    path = Path(database).expanduser()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(f"history store {shown!r}: cannot create its folder: {error}") from None
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, SQLITE_FILE_MODE)
    except FileExistsError:
        return
    except OSError as error:
        raise ConfigError(f"history store {shown!r}: cannot create it: {error}") from None
    os.close(descriptor)  # an empty file is a valid SQLite database; SQLite fills it


def _name_store_in_errors(engine: Engine, shown: str) -> None:
    @event.listens_for(engine, "handle_error")
    def _on_error(context: ExceptionContext) -> None:
        if context.sqlalchemy_exception is not None:
            setattr(context.sqlalchemy_exception, STORE_ATTRIBUTE, shown)


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # take BEGIN out of the sqlite3 module's hands; the "begin" hook below emits it
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        write = connection.get_execution_options().get(_WRITE, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
