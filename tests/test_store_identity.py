"""Only recallbench stores are opened as stores (issue 28 item 22), on real SQLite files and
a real PostgreSQL server: an application's database named by ``--store`` is refused with
nothing written to it, unless ``recallbench store init`` asks; an empty database becomes a
store; stores made before the marker existed are recognised and marked."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import store_schema as schema
from recallbench.cli import main
from recallbench.store import NotAStoreError, _migrations, init_store, open_store
from test_store import is_sqlite, sql, synthetic_report


def foreign(url: str, *statements: str) -> None:
    """Run ``statements`` on the database as its own application would: SQLite through the
    sqlite3 module (no WAL switch), PostgreSQL through psycopg."""
    if is_sqlite(url):
        db = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            for statement in statements:
                db.execute(statement)
            db.commit()
        finally:
            db.close()
        return
    import psycopg

    with psycopg.connect(url) as connection:
        for statement in statements:
            connection.execute(statement)


def snapshot(url: str) -> object:
    """Everything that would show a write: on SQLite the file's bytes and its companions;
    on PostgreSQL every table of the public schema with its rows."""
    if is_sqlite(url):
        path = Path(url.removeprefix("sqlite:///"))
        return (
            hashlib.sha256(path.read_bytes()).hexdigest(),
            sorted(p.name for p in path.parent.iterdir()),
        )
    import psycopg

    with psycopg.connect(url) as connection:
        tables = [
            row[0]
            for row in connection.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = 'public' ORDER BY table_name"
            )
        ]
        return {t: connection.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in tables}


APP = (
    "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)",
    "INSERT INTO users VALUES (1, 'ada')",
)
OWN_EVAL_RUNS = (
    "CREATE TABLE eval_runs (id INTEGER PRIMARY KEY, score REAL)",
    "INSERT INTO eval_runs VALUES (1, 0.5)",
)


def test_an_applications_database_is_refused_and_left_untouched(db_url: str) -> None:
    foreign(db_url, *APP)
    before = snapshot(db_url)
    with pytest.raises(NotAStoreError) as caught:
        open_store(db_url)
    message = str(caught.value)
    assert "is not a recallbench store" in message
    assert "1 table (users)" in message
    assert "recallbench store init --store" in message
    assert snapshot(db_url) == before


@pytest.mark.parametrize("tables", [APP, OWN_EVAL_RUNS], ids=["users", "own-eval_runs"])
def test_history_on_a_foreign_database_exits_2_naming_it(db_url: str, tables: tuple[str]) -> None:
    foreign(db_url, *tables)
    before = snapshot(db_url)
    result = CliRunner().invoke(main, ["history", "--store", db_url])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    shown = db_url if is_sqlite(db_url) else db_url.split("@")[-1]
    assert shown in result.output
    assert "is not a recallbench store" in result.output
    assert "recallbench store init" in result.output
    assert snapshot(db_url) == before


def test_serve_refuses_a_foreign_database_before_serving(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'app.db'}"
    foreign(url, *OWN_EVAL_RUNS)
    before = snapshot(url)
    done = subprocess.run(
        [sys.executable, "-m", "recallbench", "serve", "--store", url, "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "is not a recallbench store" in done.stderr
    assert "Traceback" not in done.stderr
    assert snapshot(url) == before


def test_an_empty_database_becomes_a_store(db_url: str) -> None:
    with open_store(db_url) as store:
        store.record(synthetic_report())
    [(one, version, marked)] = sql(db_url, "SELECT * FROM recallbench_store")
    assert one == 1 and version and marked is not None
    assert len(sql(db_url, "SELECT id FROM schema_migrations")) == len(schema.MIGRATIONS)


def test_an_empty_sqlite_file_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    open_store(f"sqlite:///{path}").close()
    assert sql(f"sqlite:///{path}", "SELECT id FROM recallbench_store") == [(1,)]


def test_a_store_of_an_earlier_version_is_recognised_and_marked(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store made by a recallbench of m008 (no marker) keeps opening, data and all."""
    with monkeypatch.context() as patched:
        patched.setattr(_migrations, "MIGRATIONS", _migrations.MIGRATIONS[:8])
        with open_store(db_url) as store:
            kept = store.record(synthetic_report())
    assert "recallbench_store" not in str(snapshot(db_url))
    with open_store(db_url) as store:
        assert store.get(kept.id) == kept
    assert sql(db_url, "SELECT id FROM recallbench_store") == [(1,)]
    assert sql(db_url, "SELECT id, name FROM schema_migrations ORDER BY id") == schema.MIGRATIONS


def test_a_store_whose_first_migration_was_interrupted_is_recognised(db_url: str) -> None:
    """Only the ledger, empty: a first open stopped between creating it and m001."""
    from recallbench.store._engine import create_store_engine
    from recallbench.store._migrate import schema_migrations

    engine = create_store_engine(db_url)
    try:
        with engine.begin() as connection:
            schema_migrations.create(connection)
    finally:
        engine.dispose()
    open_store(db_url).close()
    assert sql(db_url, "SELECT id, name FROM schema_migrations ORDER BY id") == schema.MIGRATIONS


def test_another_tools_schema_migrations_is_not_taken_for_ours(db_url: str) -> None:
    """Rails, for one, keeps a schema_migrations table of its own."""
    foreign(
        db_url,
        "CREATE TABLE schema_migrations (version VARCHAR(20) PRIMARY KEY)",
        "INSERT INTO schema_migrations VALUES ('20240101000000')",
    )
    before = snapshot(db_url)
    with pytest.raises(NotAStoreError, match="schema_migrations"):
        open_store(db_url)
    assert snapshot(db_url) == before


def test_store_init_adds_the_store_beside_the_applications_tables(db_url: str) -> None:
    foreign(db_url, *APP)
    result = CliRunner().invoke(main, ["store", "init", "--store", db_url])
    assert result.exit_code == 0, result.output
    assert "added recallbench's tables beside the database's 1 of its own" in result.output
    assert sql(db_url, "SELECT * FROM users") == [(1, "ada")]
    with open_store(db_url) as store:  # a store from now on
        store.record(synthetic_report())
    result = CliRunner().invoke(main, ["store", "init", "--store", db_url])
    assert result.exit_code == 0 and "already a recallbench store, up to date" in result.output


def test_store_init_refuses_a_table_name_taken_and_writes_nothing(db_url: str) -> None:
    foreign(db_url, *APP, *OWN_EVAL_RUNS)
    before = snapshot(db_url)
    with pytest.raises(NotAStoreError, match=r"already has 1 table \(eval_runs\) of its own"):
        init_store(db_url)
    result = CliRunner().invoke(main, ["store", "init", "--store", db_url])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert snapshot(db_url) == before


def test_store_init_creates_and_upgrades(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patched:
        patched.setattr(_migrations, "MIGRATIONS", _migrations.MIGRATIONS[:8])
        open_store(db_url).close()
    done = init_store(db_url)
    later = [migration.__name__ for migration in _migrations.MIGRATIONS[8:]]
    assert (done.found.kind, done.applied) == ("earlier", later)
    assert later[0] == "m009_store_marker"
    result = CliRunner().invoke(main, ["store", "init", "--store", db_url])
    assert "already a recallbench store, up to date" in result.output


def test_a_long_list_of_foreign_tables_is_shortened(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'big.db'}"
    foreign(url, *(f"CREATE TABLE t{i} (x INTEGER)" for i in range(8)))
    with pytest.raises(NotAStoreError, match=r"8 tables \(t0, t1, t2, t3, t4, and 3 more\)"):
        open_store(url)
