"""A throwaway PostgreSQL server, for the tests and the store's load benchmark.

Not part of the store itself: it starts a private server from the PostgreSQL binaries of
the machine (``initdb`` + ``pg_ctl``) in a temporary folder, trusting local connections,
and removes everything when stopped. Kept in the package (not in ``tests/``) so that the
test fixture and ``benchmarks/store_load.py`` share one implementation without path hacks.

``initdb`` refuses to run as root (CI runs as root): then the folder is given to the
``postgres`` system user and the binaries run through ``runuser -u postgres``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from recallbench.core._net import free_port

USER = "rb"
"""The superuser of a throwaway server (no password: local trust)."""
SEARCHED = (
    "/usr/lib/postgresql/*/bin",
    "/usr/local/pgsql/bin",
    "/opt/homebrew/opt/postgresql*/bin",
)
ENV_BIN = "RECALLBENCH_PG_BIN"
PORT_ATTEMPTS = 3


class PostgresUnavailable(RuntimeError):
    """The server binaries are missing or the server did not start."""


@dataclass(frozen=True, slots=True)
class PostgresServer:
    """A running throwaway server; :func:`throwaway_postgres` stops it."""

    directory: Path
    port: int
    bin_dir: Path
    as_postgres: bool
    """Whether the binaries run as the ``postgres`` user (we are root)."""

    def url(self, database: str = "postgres") -> str:
        """The URL of ``database`` on this server (user ``rb``, no password)."""
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new, empty database; its URL."""
        return create_database(self.url())

    def stop(self) -> None:
        """Stop the server now (no checkpoint: its data is thrown away) and remove it."""
        try:
            _run(self, "pg_ctl", "-D", str(self.directory / "data"), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


def create_database(admin_url: str) -> str:
    """A new, empty database on the server of ``admin_url`` (a superuser's); its URL."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    _admin(admin_url, f'CREATE DATABASE "{name}"')
    return f"{admin_url.rsplit('/', 1)[0]}/{name}"


def drop_database(admin_url: str, url: str) -> None:
    """Drop a database made by :func:`create_database`, closing its connections."""
    name = url.rsplit("/", 1)[1]
    _admin(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _admin(admin_url: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(statement.encode())


def find_bin_dir() -> Path:
    """``$RECALLBENCH_PG_BIN``, else the folder of ``initdb`` on PATH, else the newest
    ``/usr/lib/postgresql/N/bin``; PostgresUnavailable when there is none."""
    if os.environ.get(ENV_BIN):
        candidates = [Path(os.environ[ENV_BIN])]
    else:
        on_path = shutil.which("initdb")
        candidates = [Path(on_path).resolve().parent] if on_path else []
        for pattern in SEARCHED:
            found = sorted(Path("/").glob(pattern.lstrip("/")), key=_version, reverse=True)
            candidates.extend(found)
    for candidate in candidates:
        if (candidate / "initdb").is_file() and (candidate / "pg_ctl").is_file():
            return candidate
    raise PostgresUnavailable(
        "PostgreSQL server binaries (initdb, pg_ctl) not found in "
        f"{', '.join(SEARCHED)} or on PATH: install the server (Debian: "
        f"apt-get install postgresql) or set {ENV_BIN} to their folder"
    )


def start_postgres(fast: bool = True, timeout: float = 60.0) -> PostgresServer:
    """Start a server on a free port of 127.0.0.1 and wait until it accepts connections.

    ``fast`` turns fsync off (fine for data that is thrown away; the load benchmark keeps
    it on so that its commit times are honest)."""
    bin_dir = find_bin_dir()
    as_postgres = os.geteuid() == 0
    if as_postgres and shutil.which("runuser") is None:
        raise PostgresUnavailable("running as root needs runuser (util-linux) to start PostgreSQL")
    directory = Path(tempfile.mkdtemp(prefix="recallbench-pg-"))
    try:
        if as_postgres:
            try:
                shutil.chown(directory, user="postgres")
            except LookupError:
                raise PostgresUnavailable(
                    "running as root needs the postgres system user to start PostgreSQL "
                    "(initdb refuses root)"
                ) from None
        setup = PostgresServer(directory, 0, bin_dir, as_postgres)
        _run(setup, "initdb", "-D", str(directory / "data"), "-A", "trust", "-U", USER,
             "-E", "UTF8", "--locale=C", "--no-sync")  # fmt: skip
        for attempt in range(1, PORT_ATTEMPTS + 1):
            server = PostgresServer(directory, free_port(), bin_dir, as_postgres)
            options = f"-p {server.port} -k {directory} -c listen_addresses=127.0.0.1"
            if fast:
                options += " -c fsync=off -c full_page_writes=off -c synchronous_commit=off"
            try:
                data, log = str(directory / "data"), str(directory / "log")
                wait = ["-w", "-t", str(int(timeout))]
                _run(server, "pg_ctl", "-D", data, "-o", options, "-l", log, *wait, "start")
                break
            except PostgresUnavailable:
                if attempt == PORT_ATTEMPTS:  # else the free port was taken meanwhile
                    raise
        _wait(server, timeout)
    except BaseException:
        _stop_quietly(directory, bin_dir, as_postgres)
        raise
    return server


@contextmanager
def throwaway_postgres(fast: bool = True) -> Iterator[PostgresServer]:
    """A server for the ``with`` block, stopped and removed afterwards."""
    server = start_postgres(fast=fast)
    try:
        yield server
    finally:
        server.stop()


def _run(server: PostgresServer, program: str, *args: str) -> None:
    command = [str(server.bin_dir / program), *args]
    if server.as_postgres:
        command = ["runuser", "-u", "postgres", "--", *command]
    done = subprocess.run(
        command, cwd=server.directory, capture_output=True, text=True, timeout=120, check=False
    )
    if done.returncode != 0:
        log = server.directory / "log"
        tail = log.read_text(errors="replace")[-2000:] if log.is_file() else ""
        raise PostgresUnavailable(
            f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}{tail}"
        )


def _wait(server: PostgresServer, timeout: float) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg.connect(server.url(), connect_timeout=5).close()
            return
        except psycopg.OperationalError as error:
            if time.monotonic() > deadline:
                raise PostgresUnavailable(
                    f"PostgreSQL at {server.url()} did not accept connections: {error}"
                ) from None
            time.sleep(0.1)


def _stop_quietly(directory: Path, bin_dir: Path, as_postgres: bool) -> None:
    if (directory / "data" / "postmaster.pid").exists():
        server = PostgresServer(directory, 0, bin_dir, as_postgres)
        try:
            server.stop()
            return
        except PostgresUnavailable:
            pass
    shutil.rmtree(directory, ignore_errors=True)


def _version(path: Path) -> tuple[int, ...]:
    digits = "".join(c if c.isdigit() else " " for c in str(path))
    return tuple(int(part) for part in digits.split())
