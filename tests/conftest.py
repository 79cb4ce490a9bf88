"""Shared fixtures. Real data lives in ../shared/data beside the repository; tests that need
it skip with a one-line reason when it is missing, unless RECALLBENCH_REQUIRE_DATA=1 (set by
.ci/run), where they fail: CI cannot pass without it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


SHARED = ROOT.parent / "shared"


def shared_path(*parts: str) -> Path:
    """A file under ../shared; skips the test when it is missing, fails under
    RECALLBENCH_REQUIRE_DATA=1."""
    import os

    path = SHARED.joinpath(*parts)
    if not path.exists():
        reason = f"needs {path} (clone ../shared beside the repository)"
        if os.environ.get("RECALLBENCH_REQUIRE_DATA") == "1":
            pytest.fail(f"RECALLBENCH_REQUIRE_DATA=1 but it is missing: {reason}")
        pytest.skip(reason)
    return path


def shared_data(*parts: str) -> Path:
    """A file or folder of ../shared/data (see shared_path)."""
    return shared_path("data", *parts)


@pytest.fixture(scope="session", autouse=True)
def history_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Runs made by the tests go to a throwaway history store, never the user's."""
    import os

    url = f"sqlite:///{tmp_path_factory.mktemp('store') / 'history.db'}"
    os.environ["RECALLBENCH_STORE"] = url
    return url


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A throwaway PostgreSQL server for the session (PEERS.md recipe, fsync off): the URL
    of its ``postgres`` database, superuser ``rb``, no password. Fails, never skips, when
    the server binaries are missing: CI must prove that the PostgreSQL store works."""
    from recallbench.store._pg_server import PostgresUnavailable, start_postgres

    try:
        server = start_postgres()
    except PostgresUnavailable as error:
        pytest.fail(f"a PostgreSQL server is required for the store tests: {error}")
    try:
        yield server.url()
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database for one test, on each engine: a new SQLite file, or a new
    database on the session's PostgreSQL server (dropped afterwards)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    from recallbench.store._pg_server import create_database, drop_database

    admin: str = request.getfixturevalue("postgres_url")
    url = create_database(admin)
    try:
        yield url
    finally:
        drop_database(admin, url)


@pytest.fixture
def trec_tests() -> Path:
    """trec_eval's own reference test files (usnistgov/trec_eval test/)."""
    return shared_data("trec_eval_tests")


@pytest.fixture(scope="session")
def installed_servers() -> Path:
    """RECALLBENCH_HOME with the npm memory servers installed (real, from the registry).

    Kept in the repository's .cache so that later runs reuse it (``make clean`` removes
    it); fails without npm. Parallel test workers take turns through a lock file, so one
    installs and the others find the servers in place."""
    import fcntl
    import os
    import shutil

    from recallbench.systems._install import install
    from recallbench.systems._profile import load_profile, shipped_profiles

    if shutil.which("npm") is None:
        pytest.fail("npm is required: the MCP tests start the real @modelcontextprotocol server")
    home = ROOT / ".cache" / "recallbench-home"
    home.mkdir(parents=True, exist_ok=True)
    os.environ["RECALLBENCH_HOME"] = str(home)
    with (home.parent / "install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for name in SERVERS:
            install(load_profile(shipped_profiles()[name]))
    return home


SERVERS = ("server-memory", "mcp-memory-libsql", "agentrecall", "basic-memory")
"""The shipped profiles whose servers come from npm or PyPI (installed by the fixture)."""


def markdown_shown(path: Path) -> str:
    """The text a reader sees of a Markdown file (rendered by a CommonMark renderer that
    allows HTML, tags removed, entities read): outputs escape dataset and system text, so
    checks of what they say read it as shown, not as source."""
    import html
    import re

    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(path.read_text())
    return html.unescape(re.sub(r"<[^>]+>", "", rendered))
