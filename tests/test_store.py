"""The history store on real SQLite files and a real PostgreSQL server (``db_url`` runs a
test on each): exact schema, migrations, round trips, several processes, concurrency,
workspaces and errors."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import store_schema as schema
from recallbench.core import ConfigError, DatasetRef, RunSpec
from recallbench.report import Report
from recallbench.report._model import Counts, Distribution, MeasureInfo, QueryReport
from recallbench.store import StoredRun, _migrations, default_store_url, open_store

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def sample_report() -> Report:
    """The bundled dataset through the builtin system, for real."""
    from recallbench.datasets import load_dataset
    from recallbench.measures import DEFAULT_MEASURES, parse_measures
    from recallbench.report import build_report
    from recallbench.runner import run_dataset
    from recallbench.systems import create_system

    dataset = load_dataset("agent-memory-sample")
    run = asyncio.run(run_dataset(dataset, create_system("builtin-lexical"), k=20))
    return build_report(dataset, run, parse_measures(DEFAULT_MEASURES))


def synthetic_report(
    queries: int = 3,
    measures: tuple[str, ...] = ("ndcg@10", "recall@10"),
    system: str = "sys-a",
    dataset: str = "golden",
    sha256: str = "ab" * 32,
    created_at: datetime = T0,
) -> Report:
    """A report built by hand: query i has value i/queries, every 5th query failed."""
    rows = []
    for i in range(queries):
        failed = i % 5 == 4
        rows.append(
            QueryReport(
                id=f"q{i:05d}",
                text=f"question {i}",
                category="facts" if i % 2 else None,
                intent=None,
                status="failed" if failed else "ok",
                included=True,
                error="boom" if failed else None,
                values=dict.fromkeys(measures, 0.0 if failed else i / queries),
                latency_ms=None if failed else float(i),
                returned=[],
                relevant={"d1": 1},
            )
        )
    failed = sum(row.status == "failed" for row in rows)
    return Report(
        created_at=created_at,
        recallbench_version="0.0.test",
        git_revision=None,
        dataset=DatasetRef(name=dataset, version="1", sha256=sha256),
        relevance_threshold=1,
        system=RunSpec(system=system, settings={"alpha": 0.5}, k=10),
        rules={"missing": "scored 0"},
        measures=[
            MeasureInfo(name=m, definition=m, higher_is_better=not m.startswith("false"))
            for m in measures
        ],
        counts=Counts(
            queries=queries,
            evaluated=queries,
            no_relevant=0,
            failed=failed,
            missing=0,
            duplicates=0,
        ),
        means={
            m: sum(r.values[m] or 0.0 for r in rows) / queries if queries else None
            for m in measures
        },
        latency_ms=Distribution(n=queries, mean=1.0, p50=1.0, p95=2.0, p99=3.0, max=4.0)
        if queries
        else None,
        output_bytes=None,
        worst_queries=[],
        queries=rows,
    )


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def sql(url: str, statement: str, **params: object) -> list[tuple[object, ...]]:
    """Rows of one SQL statement run on the store at ``url`` (either engine), committed."""
    from sqlalchemy import text

    from recallbench.store._engine import create_store_engine

    engine = create_store_engine(url)
    try:
        with engine.begin() as connection:
            result = connection.execute(text(statement), params)
            return [tuple(row) for row in result] if result.returns_rows else []
    finally:
        engine.dispose()


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


NEXT = len(schema.MIGRATIONS) + 1
"""The number a migration appended by a test gets (``mNNN_what`` names are numbered)."""


def appended(migration: Any, what: str) -> Any:
    """``migration`` named as the next migration, ``mNNN_what``."""
    migration.__name__ = f"m{NEXT:03d}_{what}"
    return migration


# ---------------------------------------------------------------- exact schema


def test_the_migrations_create_exactly_this_schema(db_url: str, tmp_path: Path) -> None:
    """Every table, column, type, default, key, index, CHECK and foreign key, literally, on
    SQLite and on PostgreSQL (tests/store_schema.py)."""
    if is_sqlite(db_url):  # a folder that does not exist yet is created
        db_url = sqlite_url(tmp_path / "deep" / "folder" / "store.db")
    open_store(db_url).close()
    if is_sqlite(db_url):
        db = sqlite3.connect(tmp_path / "deep" / "folder" / "store.db")
        found = schema.sqlite_schema(db)
        assert found["tables"] == sorted([*schema.SQLITE_COLUMNS, "sqlite_sequence"])
        for table, columns in schema.SQLITE_COLUMNS.items():
            assert found["columns"][table] == columns, table
            assert found["indexes"][table] == schema.SQLITE_INDEXES[table], table
            assert found["foreign_keys"][table] == schema.SQLITE_FOREIGN_KEYS[table], table
        assert found["checks"] == schema.SQLITE_CHECKS
        assert found["storage"] == schema.SQLITE_STORAGE
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    else:
        import psycopg

        with psycopg.connect(db_url) as connection:
            found = schema.postgres_schema(connection)
        assert found["tables"] == sorted(schema.POSTGRES_COLUMNS)
        for table, columns in schema.POSTGRES_COLUMNS.items():
            assert found["columns"][table] == columns, table
            assert found["indexes"][table] == schema.POSTGRES_INDEXES[table], table
            assert found["constraints"][table] == schema.POSTGRES_CONSTRAINTS[table], table
        assert found["sequences"] == schema.POSTGRES_SEQUENCES
    assert sql(db_url, "SELECT id, name FROM schema_migrations ORDER BY id") == schema.MIGRATIONS


# ---------------------------------------------------------------- migrations


def test_reopening_applies_nothing_again(db_url: str) -> None:
    open_store(db_url).close()
    first = sql(db_url, "SELECT * FROM schema_migrations ORDER BY id")
    with open_store(db_url) as store:
        store.record(synthetic_report())
    assert sql(db_url, "SELECT * FROM schema_migrations ORDER BY id") == first
    assert len(first) == len(schema.MIGRATIONS)


def test_an_appended_migration_upgrades_a_database_once(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_store(db_url) as store:
        kept = store.record(synthetic_report())
    calls = []

    def m003_notes(connection: object) -> None:
        from sqlalchemy import Connection

        assert isinstance(connection, Connection)
        calls.append(1)
        connection.exec_driver_sql("CREATE TABLE eval_notes (run_id INTEGER, note TEXT)")

    migration = appended(m003_notes, "notes")
    monkeypatch.setattr(_migrations, "MIGRATIONS", [*_migrations.MIGRATIONS, migration])
    open_store(db_url).close()
    with open_store(db_url) as store:
        assert store.get(kept.id) == kept  # data survives the upgrade
    assert calls == [1]
    assert sql(db_url, "SELECT id, name FROM schema_migrations ORDER BY id") == [
        *schema.MIGRATIONS,
        (NEXT, f"m{NEXT:03d}_notes"),
    ]
    assert sql(db_url, "SELECT count(*) FROM eval_notes") == [(0,)]


def test_a_failing_migration_leaves_nothing_behind(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_store(db_url).close()

    def m003_broken(connection: object) -> None:
        from sqlalchemy import Connection

        assert isinstance(connection, Connection)
        connection.exec_driver_sql("CREATE TABLE half_done (x INTEGER)")
        raise RuntimeError("migration bug")

    migration = appended(m003_broken, "broken")
    monkeypatch.setattr(_migrations, "MIGRATIONS", [*_migrations.MIGRATIONS, migration])
    with pytest.raises(RuntimeError, match="migration bug"):
        open_store(db_url)
    assert sql(db_url, "SELECT count(*) FROM schema_migrations") == [(len(schema.MIGRATIONS),)]
    from sqlalchemy import inspect

    from recallbench.store._engine import create_store_engine

    engine = create_store_engine(db_url)
    assert not inspect(engine).has_table("half_done")  # DDL rolled back on both engines
    engine.dispose()


def test_a_database_from_a_newer_recallbench_is_refused(db_url: str) -> None:
    open_store(db_url).close()
    sql(
        db_url,
        "INSERT INTO schema_migrations VALUES (:id, :name, :at)",
        id=NEXT,
        name=f"m{NEXT:03d}_future",
        at=datetime(2030, 1, 1, tzinfo=UTC),
    )
    with pytest.raises(ConfigError, match=rf"m{NEXT:03d}_future.*newer version"):
        open_store(db_url)


# ---------------------------------------------------------------- round trip


def test_record_get_runs_values_accept_round_trip(db_url: str, sample_report: Report) -> None:
    with open_store(db_url) as store:
        stored = store.record(sample_report, source="out/report.json")
        assert isinstance(stored, StoredRun)
        assert stored.id == 1 and stored.workspace == "default"
        assert stored.system == "builtin-lexical"
        assert stored.dataset_name == "agent-memory-sample"
        assert stored.dataset_sha256 == sample_report.dataset.sha256
        assert stored.dataset_version == sample_report.dataset.version
        assert stored.created_at == sample_report.created_at
        assert stored.created_at.tzinfo is not None and stored.created_at.utcoffset() == timedelta(
            0
        )
        assert stored.recorded_at.tzinfo is not None
        assert not stored.accepted and stored.accepted_at is None
        assert stored.k == 20 and stored.source == "out/report.json"
        assert stored.recallbench_version == sample_report.recallbench_version
        assert stored.git_revision == sample_report.git_revision
        counts = sample_report.counts
        assert (stored.queries, stored.evaluated, stored.failed, stored.missing) == (
            counts.queries,
            counts.evaluated,
            counts.failed,
            counts.missing,
        )
        assert stored.no_relevant == counts.no_relevant > 0
        assert stored.error_rate == 0.0
        assert sample_report.latency_ms is not None
        assert stored.latency_p95 == sample_report.latency_ms.p95
        assert stored.means == sample_report.means
        assert list(stored.means) == [m.name for m in sample_report.measures]  # report order
        assert stored.higher_is_better == {m.name: True for m in sample_report.measures}

        assert store.get(stored.id) == stored
        assert store.runs() == [stored]
        values = store.query_values(stored.id)
        assert list(values) == [q.id for q in sample_report.queries]  # dataset order
        assert values == {q.id: q.values for q in sample_report.queries}
        assert any(v is None for q in values.values() for v in q.values())  # no_relevant

        accepted = store.accept(stored.id)
        assert accepted.accepted and accepted.accepted_at is not None
        assert accepted.accepted_at >= stored.recorded_at
        assert store.accept(stored.id) == accepted  # the first acceptance time is kept
        assert store.runs(accepted=True) == [accepted]
        assert store.runs(accepted=False) == []


def test_edge_cases_none_means_failures_and_non_finite_values(db_url: str) -> None:
    report = synthetic_report(queries=10)
    report = report.model_copy(
        update={"means": {"ndcg@10": None, "recall@10": float("nan")}, "latency_ms": None}
    )
    with open_store(db_url) as store:
        stored = store.record(report, accepted=True)
        assert stored.means == {"ndcg@10": None, "recall@10": None}
        assert stored.failed == 2 and stored.error_rate == pytest.approx(0.2)
        assert stored.latency_p50 is None and stored.latency_p99 is None
        assert stored.accepted and stored.accepted_at == stored.recorded_at
        values = store.query_values(stored.id)
        assert values["q00004"] == {"ndcg@10": 0.0, "recall@10": 0.0}
        empty = store.record(synthetic_report(queries=0, system="empty"))
        assert empty.error_rate == 0.0 and empty.means == {"ndcg@10": None, "recall@10": None}
        assert store.query_values(empty.id) == {}


def test_a_query_without_a_value_for_a_measure_reads_back_none(db_url: str) -> None:
    report = synthetic_report(queries=2)
    first = report.queries[0].model_copy(update={"values": {"ndcg@10": 0.5}})
    report = report.model_copy(update={"queries": [first, report.queries[1]]})
    with open_store(db_url) as store:
        values = store.query_values(store.record(report).id)
    assert values["q00000"] == {"ndcg@10": 0.5, "recall@10": None}


def test_naive_report_times_are_taken_as_utc(db_url: str) -> None:
    report = synthetic_report(created_at=datetime(2025, 1, 2, 3, 4, 5))
    with open_store(db_url) as store:
        stored = store.record(report)
    assert stored.created_at == datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_runs_are_newest_first_and_filtered(db_url: str) -> None:
    with open_store(db_url) as store:
        older = store.record(synthetic_report(created_at=T0 + timedelta(hours=2)))
        newest = store.record(synthetic_report(created_at=T0 + timedelta(hours=3)))
        oldest = store.record(synthetic_report(created_at=T0))
        same_time = store.record(synthetic_report(created_at=T0 + timedelta(hours=3)))
        other = store.record(
            synthetic_report(system="sys-b", dataset="other", sha256="cd" * 32, created_at=T0)
        )
        ids = [run.id for run in store.runs()]  # same report time: the later id first
        assert ids == [same_time.id, newest.id, older.id, other.id, oldest.id]
        assert [r.id for r in store.runs(system="sys-b")] == [other.id]
        assert [r.id for r in store.runs(dataset="other")] == [other.id]
        assert [r.id for r in store.runs(dataset="CDCDCD")] == [other.id]  # sha prefix
        assert [r.id for r in store.runs(dataset="cd" * 32)] == [other.id]  # full sha
        assert store.runs(dataset="cdcdc") == []  # under 6 hex digits: a name only
        assert store.runs(dataset="ab%") == []  # LIKE wildcards are not wildcards
        assert [r.id for r in store.runs(system="sys-a", limit=2)] == [same_time.id, newest.id]
        store.accept(older.id)
        assert [r.id for r in store.runs(system="sys-a", accepted=True)] == [older.id]
        assert len(store.runs(system="sys-a", accepted=False)) == 3


def test_workspaces_are_isolated(db_url: str) -> None:
    url = db_url
    with open_store(url, workspace="team-a") as a, open_store(url, workspace="team-b") as b:
        run_a = a.record(synthetic_report())
        run_b = b.record(synthetic_report(system="sys-b"))
        assert run_a.workspace == "team-a" and run_b.workspace == "team-b"
        assert [r.id for r in a.runs()] == [run_a.id]
        assert [r.id for r in b.runs()] == [run_b.id]
        with pytest.raises(ConfigError, match=r"no run 1 in workspace 'team-b'"):
            b.get(run_a.id)
        with pytest.raises(ConfigError):
            b.accept(run_a.id)
        with pytest.raises(ConfigError):
            b.query_values(run_a.id)
        assert not a.get(run_a.id).accepted
    for table in ("eval_runs", "eval_measures", "eval_queries", "eval_query_values"):
        spaces = {row[0] for row in sql(url, f"SELECT DISTINCT workspace_id FROM {table}")}
        assert spaces == {"team-a", "team-b"}, table
    with open_store(url) as default:
        assert default.runs() == []


def test_deleting_a_run_cascades_to_its_rows(db_url: str) -> None:
    with open_store(db_url) as store:
        run = store.record(synthetic_report())
        store.record(synthetic_report())
        from sqlalchemy import delete

        from recallbench.store._engine import transaction
        from recallbench.store._tables import eval_runs

        with transaction(store._engine, write=True) as connection:  # SQLite: foreign_keys = ON
            connection.execute(delete(eval_runs).where(eval_runs.c.id == run.id))
    for table in ("eval_measures", "eval_queries", "eval_query_values"):
        assert sql(db_url, f"SELECT DISTINCT run_id FROM {table}") == [(2,)], table


def test_history_command_reads_either_engine(db_url: str) -> None:
    from click.testing import CliRunner

    from recallbench.cli import main

    with open_store(db_url) as store:
        store.record(synthetic_report(queries=5, created_at=T0))
        store.accept(store.record(synthetic_report(created_at=T0 + timedelta(hours=1))).id)
    result = CliRunner().invoke(main, ["history", "--store", db_url], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "sys-a on golden 1 (abababab)" in result.output
    assert "runs #1 (2025-03-01 12:00 UTC) to #2 (2025-03-01 13:00 UTC)" in result.output
    ndcg = next(line for line in result.output.splitlines() if "│ ndcg@10 " in line)
    cells = [cell.strip() for cell in ndcg.strip("│").split("│")]
    assert cells[:4] == ["ndcg@10", "2", "0.2400", "0.3333"]
    assert "+0.0933" in cells  # the change from run #1 to run #2


# ---------------------------------------------------------------- errors and defaults


def test_unknown_run_id_is_a_config_error(db_url: str) -> None:
    with open_store(db_url) as store:
        for call in (store.get, store.accept, store.query_values):
            with pytest.raises(ConfigError, match="no run 42"):
                call(42)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("nosuchdb://x", "unknown database kind 'nosuchdb'"),
        ("not a url at all", "is not a database URL"),
    ],
)
def test_bad_urls_are_config_errors(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as error:
        open_store(url)
    assert url in str(error.value)


def test_an_unreachable_server_is_a_config_error_without_the_password() -> None:
    with pytest.raises(ConfigError, match="cannot open the history store") as error:
        open_store("postgresql://ci:s3cret@127.0.0.1:1/recallbench")  # nothing listens on 1
    assert "s3cret" not in str(error.value)
    assert "postgresql://ci:***@127.0.0.1:1/recallbench" in str(error.value)


def test_postgres_urls_use_psycopg_3(postgres_url: str) -> None:
    from recallbench.store._engine import create_store_engine

    for scheme in ("postgresql", "postgres"):
        url = postgres_url.replace("postgresql://", f"{scheme}://")
        engine = create_store_engine(url)
        assert engine.dialect.driver == "psycopg"
        engine.dispose()
        with open_store(url) as store:
            assert store.url == url
            assert store.runs() == []


def test_a_missing_postgres_driver_is_a_config_error_saying_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg -> ImportError
    with pytest.raises(ConfigError, match=r"driver is not installed") as error:
        open_store("postgresql://ci:s3cret@db.example:5432/recallbench")
    assert "pip install 'recallbench[postgres]'" in str(error.value)
    assert "postgresql://ci:***@db.example:5432/recallbench" in str(error.value)
    assert "s3cret" not in str(error.value)


def test_a_file_that_is_not_a_database_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("these are notes, not a database\n" * 100)
    with pytest.raises(ConfigError, match=r"cannot open the history store .*notes\.db"):
        open_store(sqlite_url(path))


def test_a_folder_that_cannot_be_created_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="cannot create its folder"):
        open_store(sqlite_url(tmp_path / "file" / "sub" / "h.db"))


def test_default_url_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RECALLBENCH_STORE", raising=False)
    monkeypatch.setenv("RECALLBENCH_HOME", str(tmp_path / "home"))
    assert default_store_url() == f"sqlite:///{tmp_path / 'home' / 'recallbench.db'}"
    with open_store() as store:
        store.record(synthetic_report())
        assert store.url == default_store_url()
    assert (tmp_path / "home" / "recallbench.db").is_file()
    monkeypatch.setenv("RECALLBENCH_STORE", sqlite_url(tmp_path / "elsewhere.db"))
    assert default_store_url() == sqlite_url(tmp_path / "elsewhere.db")


# ---------------------------------------------------------------- processes


def python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120
    )


RECORD = """
import sys
from recallbench.report import Report
from recallbench.store import open_store
report = Report.model_validate_json(open(sys.argv[2]).read())
with open_store(sys.argv[1]) as store:
    for _ in range(int(sys.argv[3])):
        print(store.record(report, source=sys.argv[4]).id)
"""


def test_history_survives_across_processes(
    db_url: str, tmp_path: Path, sample_report: Report
) -> None:
    url = db_url
    report_file = tmp_path / "report.json"
    report_file.write_text(sample_report.model_dump_json())
    done = python(RECORD, url, str(report_file), "1", "child")
    assert done.returncode == 0, done.stderr
    with open_store(url) as store:
        (child,) = store.runs()
        assert child.source == "child" and child.means == sample_report.means
        assert store.query_values(child.id) == {q.id: q.values for q in sample_report.queries}
        mine = store.record(sample_report, source="parent")
        store.accept(mine.id)
    read = python(
        "import sys, json; from recallbench.store import open_store\n"
        "with open_store(sys.argv[1]) as s:\n"
        "    print(json.dumps([[r.id, r.source, r.accepted] for r in s.runs()]))",
        url,
    )
    assert read.returncode == 0, read.stderr
    assert json.loads(read.stdout) == [[mine.id, "parent", True], [child.id, "child", False]]


def test_concurrent_writers_lose_nothing(db_url: str, tmp_path: Path) -> None:
    """Four processes open a new store at once (the migration race: SQLite's write lock,
    PostgreSQL's advisory lock) and record together."""
    url = db_url
    report_file = tmp_path / "report.json"
    report_file.write_text(synthetic_report(queries=500).model_dump_json())
    writers, each = 4, 5
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", RECORD, url, str(report_file), str(each), f"w{n}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(writers)
    ]
    outputs = [process.communicate(timeout=120) for process in processes]
    for process, (_, stderr) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, stderr
    reported = sorted(int(line) for out, _ in outputs for line in out.split())
    assert reported == list(range(1, writers * each + 1))
    with open_store(url) as store:
        runs = store.runs()
        assert sorted(r.id for r in runs) == reported
        assert {r.source for r in runs} == {f"w{n}" for n in range(writers)}
    assert sql(url, "SELECT count(*) FROM schema_migrations") == [(len(schema.MIGRATIONS),)]
    assert sql(url, "SELECT count(*) FROM eval_queries") == [(writers * each * 500,)]
    assert sql(url, "SELECT count(*) FROM eval_query_values") == [(writers * each * 500 * 2,)]


# ---------------------------------------------------------------- size
# (speed is measured by benchmarks/store_load.py, not asserted here)


def test_a_run_of_10000_queries_and_8_measures_round_trips(db_url: str) -> None:
    measures = tuple(f"ndcg@{k}" for k in (1, 2, 3, 5, 10, 20, 50, 100))
    report = synthetic_report(queries=10_000, measures=measures)
    with open_store(db_url) as store:
        stored = store.record(report)
        values = store.query_values(stored.id)
    assert len(values) == 10_000 and values["q09998"]["ndcg@100"] == pytest.approx(0.9998)
    assert all(len(row) == len(measures) for row in values.values())


# ---------------------------------------------------------------- m006: pairwise preferences


def at_m005(url: str, monkeypatch: pytest.MonkeyPatch) -> StoredRun:
    """Migrate the store at ``url`` as a recallbench of m005 did; a run recorded in it."""
    with monkeypatch.context() as patched:
        patched.setattr(_migrations, "MIGRATIONS", _migrations.MIGRATIONS[:5])
        with open_store(url) as store:
            return store.record(synthetic_report())


def dashboard_table(url: str) -> None:
    """The table as ``recallbench serve`` made it before m006 (the definition it had, copied
    here: CREATE TABLE IF NOT EXISTS on the dashboard's first start), with one choice in it."""
    from sqlalchemy import Column, MetaData, Table, Text, UniqueConstraint

    from recallbench.store._engine import create_store_engine
    from recallbench.store._migrations import RUN_ID
    from recallbench.store._tables import UTCDateTime

    table = Table(
        "pairwise_preferences",
        MetaData(),
        Column("id", RUN_ID, primary_key=True, autoincrement=True),
        Column("workspace_id", Text, nullable=False),
        Column("item", Text, nullable=False),
        Column("query_text", Text, nullable=False),
        Column("first_label", Text, nullable=False),
        Column("first_results", Text, nullable=False),
        Column("second_label", Text, nullable=False),
        Column("second_results", Text, nullable=False),
        Column("preferred", Text, nullable=False),
        Column("shown", Text, nullable=False),
        Column("annotator", Text, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        UniqueConstraint("workspace_id", "item", "annotator", name="uq_pairwise_preference"),
    )
    engine = create_store_engine(url)
    try:
        with engine.begin() as connection:
            table.create(connection, checkfirst=True)
            connection.execute(
                table.insert().values(
                    workspace_id="default",
                    item="log:q1:q2",
                    query_text="where is the key",
                    first_label="hybrid (q1)",
                    first_results=json.dumps(["m1", "m2"]),
                    second_label="lexical (q2)",
                    second_results=json.dumps(["m2", "m1"]),
                    preferred="first",
                    shown="second",
                    annotator="ann",
                    created_at=T0,
                )
            )
    finally:
        engine.dispose()


def assert_pairwise_schema(url: str) -> None:
    """pairwise_preferences exactly as tests/store_schema.py has it, and every migration."""
    table = "pairwise_preferences"
    if is_sqlite(url):
        db = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            found = schema.sqlite_schema(db)
        finally:
            db.close()
        assert found["columns"][table] == schema.SQLITE_COLUMNS[table]
        assert found["indexes"][table] == schema.SQLITE_INDEXES[table]
        assert found["foreign_keys"][table] == schema.SQLITE_FOREIGN_KEYS[table]
        assert found["storage"][table] == schema.SQLITE_STORAGE[table]
    else:
        import psycopg

        with psycopg.connect(url) as connection:
            found = schema.postgres_schema(connection)
        assert found["columns"][table] == schema.POSTGRES_COLUMNS[table]
        assert found["indexes"][table] == schema.POSTGRES_INDEXES[table]
        assert found["constraints"][table] == schema.POSTGRES_CONSTRAINTS[table]
        assert found["sequences"] == schema.POSTGRES_SEQUENCES
    assert sql(url, "SELECT id, name FROM schema_migrations ORDER BY id") == schema.MIGRATIONS


def test_m006_creates_the_pairwise_table_in_a_store_at_m005(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = at_m005(db_url, monkeypatch)
    assert len(sql(db_url, "SELECT id FROM schema_migrations")) == 5
    with open_store(db_url) as store:
        assert store.get(kept.id) == kept
        assert store.count("pairwise_preferences") == 0
    assert_pairwise_schema(db_url)


def test_m006_adopts_the_table_an_older_dashboard_made(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recallbench.serve._preferences import preferences

    kept = at_m005(db_url, monkeypatch)
    dashboard_table(db_url)
    with open_store(db_url) as store:
        assert store.get(kept.id) == kept
        [choice] = preferences(store._engine, store.workspace)  # its rows are kept
    assert (choice.item, choice.preferred, choice.shown) == ("log:q1:q2", "first", "second")
    assert choice.first_results == ("m1", "m2") and choice.created_at == T0
    assert_pairwise_schema(db_url)  # the same table as a new store's


def test_m006_refuses_a_pairwise_table_it_did_not_make(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    at_m005(db_url, monkeypatch)
    sql(db_url, "CREATE TABLE pairwise_preferences (id INTEGER, choice TEXT)")
    with pytest.raises(ConfigError, match="pairwise_preferences that recallbench did not make"):
        open_store(db_url)
    assert len(sql(db_url, "SELECT id FROM schema_migrations")) == 5  # m006 not recorded


# ---------------------------------------------------------------- deleting a judgment


def test_delete_judgment_removes_one_label_of_its_source_and_annotator(db_url: str) -> None:
    from recallbench.store import Judgment

    labels = [
        Judgment("q1", "d1", 3, "manual", T0, annotator="ann"),
        Judgment("q1", "d1", 2, "llm", T0),
        Judgment("q1", "d2", 1, "manual", T0, annotator="bob"),
    ]
    with open_store(db_url) as store, open_store(db_url, workspace="other") as other:
        store.log(judgments=labels)
        other.log(judgments=labels[:1])
        assert not store.delete_judgment("q1", "d1", annotator="bob")  # ann's label stays
        assert not store.delete_judgment("q1", "d9")
        assert store.delete_judgment("q1", "d1", annotator="ann")
        assert not store.delete_judgment("q1", "d1", annotator="ann")  # gone already
        assert store.delete_judgment("q1", "d2")  # whoever gave it
        assert store.judgments() == [labels[1]]  # the judge's label of the same pair stays
        assert other.judgments() == labels[:1]  # another workspace is not touched
        assert store.delete_judgment("q1", "d1", source="llm")
        assert store.judgments() == []
