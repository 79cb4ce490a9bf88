"""The history store on real SQLite files: exact schema, migrations, round trips, several
processes, concurrency, workspaces and errors."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

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


# ---------------------------------------------------------------- exact schema (m001)

EXPECTED_COLUMNS = {
    # (name, type, notnull, default, pk) as PRAGMA table_info reports them
    "schema_migrations": [
        ("id", "INTEGER", 1, None, 1),
        ("name", "TEXT", 1, None, 0),
        ("applied_at", "DATETIME", 1, None, 0),
    ],
    "eval_runs": [
        ("id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("system", "TEXT", 1, None, 0),
        ("system_settings", "TEXT", 1, None, 0),
        ("dataset_name", "TEXT", 1, None, 0),
        ("dataset_version", "TEXT", 1, None, 0),
        ("dataset_sha256", "TEXT", 1, None, 0),
        ("dataset_loader", "TEXT", 0, None, 0),
        ("relevance_threshold", "INTEGER", 1, None, 0),
        ("k", "INTEGER", 0, None, 0),
        ("recallbench_version", "TEXT", 1, None, 0),
        ("git_revision", "TEXT", 0, None, 0),
        ("created_at", "DATETIME", 1, None, 0),
        ("recorded_at", "DATETIME", 1, None, 0),
        ("accepted", "BOOLEAN", 1, "0", 0),
        ("accepted_at", "DATETIME", 0, None, 0),
        ("queries", "INTEGER", 1, None, 0),
        ("evaluated", "INTEGER", 1, None, 0),
        ("failed", "INTEGER", 1, None, 0),
        ("missing", "INTEGER", 1, None, 0),
        ("no_relevant", "INTEGER", 1, None, 0),
        ("latency_p50", "FLOAT", 0, None, 0),
        ("latency_p95", "FLOAT", 0, None, 0),
        ("latency_p99", "FLOAT", 0, None, 0),
        ("source", "TEXT", 0, None, 0),
        ("rules", "TEXT", 1, None, 0),
    ],
    "eval_measures": [
        ("run_id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("measure", "TEXT", 1, None, 2),
        ("mean", "FLOAT", 0, None, 0),
        ("higher_is_better", "BOOLEAN", 1, None, 0),
        ("position", "INTEGER", 1, None, 0),
    ],
    "eval_queries": [
        ("run_id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("query_id", "TEXT", 1, None, 2),
        ("position", "INTEGER", 1, None, 0),
        ("category", "TEXT", 0, None, 0),
        ("intent", "TEXT", 0, None, 0),
        ("status", "TEXT", 1, None, 0),
        ("latency_ms", "FLOAT", 0, None, 0),
    ],
    "eval_query_values": [
        ("run_id", "INTEGER", 1, None, 1),
        ("workspace_id", "TEXT", 1, "'default'", 0),
        ("query_id", "TEXT", 1, None, 2),
        ("measure", "TEXT", 1, None, 3),
        ("value", "FLOAT", 0, None, 0),
    ],
}

EXPECTED_INDEXES = {
    # name -> (unique, origin, columns); origin "pk" is a primary key's own index
    "schema_migrations": {},
    "eval_runs": {
        "ix_eval_runs_series": (
            0,
            "c",
            ["workspace_id", "system", "dataset_sha256", "created_at"],
        ),
    },
    "eval_measures": {"sqlite_autoindex_eval_measures_1": (1, "pk", ["run_id", "measure"])},
    "eval_queries": {"sqlite_autoindex_eval_queries_1": (1, "pk", ["run_id", "query_id"])},
    "eval_query_values": {
        "sqlite_autoindex_eval_query_values_1": (1, "pk", ["run_id", "query_id", "measure"])
    },
}

RUN_FK = [("eval_runs", "run_id", "id", "NO ACTION", "CASCADE")]
EXPECTED_FOREIGN_KEYS = {
    # (table, from, to, on_update, on_delete)
    "schema_migrations": [],
    "eval_runs": [],
    "eval_measures": RUN_FK,
    "eval_queries": RUN_FK,
    "eval_query_values": RUN_FK,
}


EXPECTED_STORAGE = {
    # how SQLite keeps each table: AUTOINCREMENT never reuses the id of a deleted run;
    # WITHOUT ROWID keeps the per-query rows in their key's b-tree (a third less disk)
    "schema_migrations": "rowid",
    "eval_runs": "rowid autoincrement",
    "eval_measures": "rowid",
    "eval_queries": "without rowid",
    "eval_query_values": "without rowid",
}


def _storage(sql: str) -> str:
    if sql.rstrip().endswith("WITHOUT ROWID"):
        return "without rowid"
    return "rowid autoincrement" if "PRIMARY KEY AUTOINCREMENT" in sql else "rowid"


def test_m001_creates_exactly_this_schema(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "folder" / "store.db"
    open_store(sqlite_url(path)).close()
    db = sqlite3.connect(path)
    tables = [
        row[0]
        for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    ]
    assert tables == sorted([*EXPECTED_COLUMNS, "sqlite_sequence"])
    for table, columns in EXPECTED_COLUMNS.items():
        info = [tuple(row[1:]) for row in db.execute(f"PRAGMA table_info({table})")]
        assert info == columns, table
        indexes = {}
        for _, name, unique, origin, _partial in db.execute(f"PRAGMA index_list({table})"):
            cols = [row[2] for row in db.execute(f"PRAGMA index_info({name})")]
            indexes[name] = (unique, origin, cols)
        assert indexes == EXPECTED_INDEXES[table], table
        keys = [
            (row[2], row[3], row[4], row[5], row[6])
            for row in db.execute(f"PRAGMA foreign_key_list({table})")
        ]
        assert keys == EXPECTED_FOREIGN_KEYS[table], table
    storage = {
        name: _storage(sql)
        for name, sql in db.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name != 'sqlite_sequence'"
        )
    }
    assert storage == EXPECTED_STORAGE
    assert [row[:2] for row in db.execute("SELECT id, name FROM schema_migrations")] == [
        (1, "m001_history")
    ]
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


# ---------------------------------------------------------------- migrations


def test_reopening_applies_nothing_again(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "h.db")
    open_store(url).close()
    first = sqlite3.connect(tmp_path / "h.db").execute("SELECT * FROM schema_migrations").fetchall()
    with open_store(url) as store:
        store.record(synthetic_report())
    again = sqlite3.connect(tmp_path / "h.db").execute("SELECT * FROM schema_migrations").fetchall()
    assert again == first
    assert len(first) == 1


def test_an_appended_migration_upgrades_an_m001_database_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = sqlite_url(tmp_path / "h.db")
    with open_store(url) as store:
        kept = store.record(synthetic_report())
    calls = []

    def m002_notes(connection: object) -> None:
        from sqlalchemy import Connection

        assert isinstance(connection, Connection)
        calls.append(1)
        connection.exec_driver_sql("CREATE TABLE eval_notes (run_id INTEGER, note TEXT)")

    monkeypatch.setattr(_migrations, "MIGRATIONS", [*_migrations.MIGRATIONS, m002_notes])
    open_store(url).close()
    with open_store(url) as store:
        assert store.get(kept.id) == kept  # data survives the upgrade
    assert calls == [1]
    db = sqlite3.connect(tmp_path / "h.db")
    assert [r[:2] for r in db.execute("SELECT id, name FROM schema_migrations ORDER BY id")] == [
        (1, "m001_history"),
        (2, "m002_notes"),
    ]
    assert db.execute("SELECT count(*) FROM eval_notes").fetchone() == (0,)


def test_a_failing_migration_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = sqlite_url(tmp_path / "h.db")
    open_store(url).close()

    def m002_broken(connection: object) -> None:
        from sqlalchemy import Connection

        assert isinstance(connection, Connection)
        connection.exec_driver_sql("CREATE TABLE half_done (x INTEGER)")
        raise RuntimeError("migration bug")

    monkeypatch.setattr(_migrations, "MIGRATIONS", [*_migrations.MIGRATIONS, m002_broken])
    with pytest.raises(RuntimeError, match="migration bug"):
        open_store(url)
    db = sqlite3.connect(tmp_path / "h.db")
    assert db.execute("SELECT count(*) FROM schema_migrations").fetchone() == (1,)
    assert db.execute("SELECT name FROM sqlite_master WHERE name = 'half_done'").fetchall() == []


def test_a_database_from_a_newer_recallbench_is_refused(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "h.db")
    open_store(url).close()
    db = sqlite3.connect(tmp_path / "h.db")
    db.execute("INSERT INTO schema_migrations VALUES (2, 'm002_future', '2030-01-01')")
    db.commit()
    with pytest.raises(ConfigError, match=r"m002_future.*newer version"):
        open_store(url)


# ---------------------------------------------------------------- round trip


def test_record_get_runs_values_accept_round_trip(tmp_path: Path, sample_report: Report) -> None:
    with open_store(sqlite_url(tmp_path / "h.db")) as store:
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


def test_edge_cases_none_means_failures_and_non_finite_values(tmp_path: Path) -> None:
    report = synthetic_report(queries=10)
    report = report.model_copy(
        update={"means": {"ndcg@10": None, "recall@10": float("nan")}, "latency_ms": None}
    )
    with open_store(sqlite_url(tmp_path / "h.db")) as store:
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


def test_a_query_without_a_value_for_a_measure_reads_back_none(tmp_path: Path) -> None:
    report = synthetic_report(queries=2)
    first = report.queries[0].model_copy(update={"values": {"ndcg@10": 0.5}})
    report = report.model_copy(update={"queries": [first, report.queries[1]]})
    with open_store(sqlite_url(tmp_path / "h.db")) as store:
        values = store.query_values(store.record(report).id)
    assert values["q00000"] == {"ndcg@10": 0.5, "recall@10": None}


def test_naive_report_times_are_taken_as_utc(tmp_path: Path) -> None:
    report = synthetic_report(created_at=datetime(2025, 1, 2, 3, 4, 5))
    with open_store(sqlite_url(tmp_path / "h.db")) as store:
        stored = store.record(report)
    assert stored.created_at == datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_runs_are_newest_first_and_filtered(tmp_path: Path) -> None:
    with open_store(sqlite_url(tmp_path / "h.db")) as store:
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


def test_workspaces_are_isolated(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "h.db")
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
    db = sqlite3.connect(tmp_path / "h.db")
    for table in ("eval_runs", "eval_measures", "eval_queries", "eval_query_values"):
        spaces = {row[0] for row in db.execute(f"SELECT DISTINCT workspace_id FROM {table}")}
        assert spaces == {"team-a", "team-b"}, table
    with open_store(url) as default:
        assert default.runs() == []


def test_deleting_a_run_cascades_to_its_rows(tmp_path: Path) -> None:
    with open_store(sqlite_url(tmp_path / "h.db")) as store:
        run = store.record(synthetic_report())
        store.record(synthetic_report())
        from sqlalchemy import delete

        from recallbench.store._engine import transaction
        from recallbench.store._tables import eval_runs

        with transaction(store._engine, write=True) as connection:  # foreign_keys = ON
            connection.execute(delete(eval_runs).where(eval_runs.c.id == run.id))
    db = sqlite3.connect(tmp_path / "h.db")
    for table in ("eval_measures", "eval_queries", "eval_query_values"):
        assert db.execute(f"SELECT DISTINCT run_id FROM {table}").fetchall() == [(2,)], table


# ---------------------------------------------------------------- errors and defaults


def test_unknown_run_id_is_a_config_error(tmp_path: Path) -> None:
    with open_store(sqlite_url(tmp_path / "h.db")) as store:
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


def test_a_password_never_shows_in_errors() -> None:
    # no driver installed, or nothing listening on port 1: a ConfigError either way
    with pytest.raises(ConfigError) as error:
        open_store("postgresql://ci:s3cret@127.0.0.1:1/recallbench")
    assert "s3cret" not in str(error.value)
    assert "ci:***@127.0.0.1:1/recallbench" in str(error.value)


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


def test_history_survives_across_processes(tmp_path: Path, sample_report: Report) -> None:
    url = sqlite_url(tmp_path / "h.db")
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


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    """Four processes open a new store at once (the migration race) and record together."""
    url = sqlite_url(tmp_path / "shared.db")
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
    db = sqlite3.connect(tmp_path / "shared.db")
    assert db.execute("SELECT count(*) FROM schema_migrations").fetchone() == (1,)
    assert db.execute("SELECT count(*) FROM eval_queries").fetchone() == (writers * each * 500,)
    assert db.execute("SELECT count(*) FROM eval_query_values").fetchone() == (
        writers * each * 500 * 2,
    )


# ---------------------------------------------------------------- speed


def test_a_run_of_10000_queries_and_8_measures_records_fast(tmp_path: Path) -> None:
    measures = tuple(f"ndcg@{k}" for k in (1, 2, 3, 5, 10, 20, 50, 100))
    report = synthetic_report(queries=10_000, measures=measures)
    with open_store(sqlite_url(tmp_path / "h.db")) as store:
        start = time.perf_counter()
        stored = store.record(report)
        recorded = time.perf_counter() - start
        start = time.perf_counter()
        values = store.query_values(stored.id)
        read = time.perf_counter() - start
    print(f"recorded 10,000 x 8 in {recorded:.2f} s, read back in {read:.2f} s")
    assert len(values) == 10_000 and values["q09998"]["ndcg@100"] == pytest.approx(0.9998)
    assert recorded < 5.0
