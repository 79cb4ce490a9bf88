"""A large store stays fast: the reading commands on 10M logged queries and 1M shadow pairs.

Generates one store of a realistic shape (sessions of searches, the same query texts asked
again and again in other wordings, feedback on a share of them, manual judgments, several
shadow tests with their pairs and decisions, a history of evaluation runs with per-query
values, annotations), into SQLite and into PostgreSQL, then times each reading command as
its own process (cold: a new interpreter, a new connection), and every page of
`recallbench serve` (started once per store, each page requested a few times, the slowest
kept), and prints a Markdown table: operation, SQLite, PostgreSQL, target, met. The table
is written to ``benchmarks/results/store_scale.md``.

Generation is bulk: SQLite by executemany in large transactions with ``synchronous=OFF``
and ``journal_mode=OFF`` (for the load only; the store is reopened normally), PostgreSQL by
COPY through psycopg into a private server (fsync off) whose data folder is kept in
``--data`` with the SQLite file, so a second run reuses both (delete the folder to start
over). The schema comes from the store's own migrations.

    python benchmarks/store_scale.py                              # 10M rows, 1M pairs
    python benchmarks/store_scale.py --data /var/tmp/rb-scale     # cache the stores there
    python benchmarks/store_scale.py --rows 100000 --pairs 10000 --runs 100   # a quick look
    python benchmarks/store_scale.py --engines sqlite
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from recallbench.core._net import free_port
from recallbench.core._query_key import query_key
from recallbench.online._shadow_rule import GraduationRule
from recallbench.store import open_store
from recallbench.store._pg_server import PostgresServer, _run, find_bin_dir

RESULTS = Path(__file__).parent / "results" / "store_scale.md"
WORKSPACE = "default"
START = datetime(2026, 5, 1, tzinfo=UTC)
DAYS = 180
TOKEN = "store-scale-token"
PAGE_REPEATS = 2
NEW_PAIRS = 1_000
TARGETS = {"harvest": 60.0, "shadow status": 1.0, "history": 1.0, "serve": 1.0}
"""Seconds; a first read that keeps what later reads use (",") has no target: it is once."""
INTENTS = ("preference", "fact", "event", "task", "person", "project", None)
FEEDBACK = ("read_after_search", "read_after_search", "read_after_search", "validated_useful")
FEEDBACK_MORE = ("validated_not_useful", "re_search", "scroll_past")
_VOCABULARY = (
    "the project deadline meeting notes budget review design api latency memory user "
    "prefers dark mode coffee morning standup release plan customer ticket database "
    "migration index query cache vector search agent tool summary weekly report travel "
    "flight hotel birthday gift doctor appointment password reset onboarding invoice "
    "contract renewal roadmap quarter goals hiring interview feedback team lunch friday"
)
WORDS = tuple(_VOCABULARY.split())


@dataclass(frozen=True)
class Shape:
    """How much of everything: scaled from the number of logged queries and pairs."""

    rows: int
    pairs: int
    runs: int
    seed: int = 7

    @property
    def texts(self) -> int:  # distinct query texts: each asked ~40 times on average
        return max(10, self.rows // 40)

    @property
    def memories(self) -> int:
        return max(50, self.rows // 100)

    @property
    def tag(self) -> str:
        return f"r{self.rows}-p{self.pairs}-e{self.runs}-s{self.seed}"


# -- the data ---------------------------------------------------------------------------


def _sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


class Data:
    """The rows of every table, generated from the shape's seed (the same for each engine)."""

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        rng = random.Random(shape.seed)
        self.memory_texts = [
            _sentence(rng, 12, 40).capitalize() + "." for _ in range(shape.memories)
        ]
        self.query_texts = [_sentence(rng, 4, 12) + "?" for _ in range(shape.texts)]
        # each text has two answers (the memory store changes): JSON strings made once
        self.answers: list[tuple[tuple[str, str, list[str]], ...]] = []
        for _ in range(shape.texts):
            options = []
            for _ in range(2):
                docs = [f"m{rng.randrange(shape.memories)}" for _ in range(5)]
                docs = list(dict.fromkeys(docs))
                texts = {doc: self.memory_texts[int(doc[1:])] for doc in docs}
                options.append((_json(docs), _json(texts), docs))
            self.answers.append(tuple(options))
        self.query_ids: list[str] = []
        self.sessions: list[str] = []
        # the query unit of each paired search, as the proxy writes it (shadow_runs.query_key)
        self.paired = {int(n * shape.rows / shape.pairs) for n in range(shape.pairs)}
        self.unit_keys: dict[int, str] = {}

    def moment(self, n: int, total: int) -> datetime:
        return START + timedelta(seconds=DAYS * 86400 * n / max(1, total))

    def query_log(self) -> Iterator[tuple[Any, ...]]:
        """(query_id, text, intent, session_id, results, texts, latency, created_at,
        golden, category): sessions of about 8 searches, popular texts asked far more."""
        rng = random.Random(self.shape.seed + 1)
        total = self.shape.rows
        session = ""
        for n in range(total):
            if n % 8 == 0 or rng.random() < 0.05:
                session = f"s{rng.getrandbits(48):012x}"
                self.sessions.append(session)
            which = min(int(rng.paretovariate(0.9)) - 1, self.shape.texts - 1)
            which = (which * 7919 + rng.randrange(3)) % self.shape.texts
            text = self.query_texts[which]
            if rng.random() < 0.2:  # another wording of the same words
                text = text.capitalize().replace("?", " ?!")
            results, texts, _ = self.answers[which][rng.random() < 0.1]
            query_id = f"{rng.getrandbits(128):032x}"
            self.query_ids.append(query_id)
            if n in self.paired:
                self.unit_keys[n] = query_key(text)
            yield (
                query_id,
                text,
                INTENTS[which % len(INTENTS)],
                session,
                results,
                texts,
                round(rng.uniform(5, 400), 2),
                self.moment(n, total),
                n % 5000 == 0,
                "golden" if n % 5000 == 0 else None,
            )

    def feedback(self) -> Iterator[tuple[Any, ...]]:
        """(event_id, query_id, kind, doc_id, rank, session_id, created_at) on about 15% of
        searches."""
        rng = random.Random(self.shape.seed + 2)
        total = self.shape.rows
        step = 7
        for n in range(0, total, step):
            query_id = self.query_ids[n]
            docs = self.answers[n % self.shape.texts][0][2]
            at = self.moment(n, total) + timedelta(seconds=30)
            kinds = [rng.choice(FEEDBACK)]
            if rng.random() < 0.2:
                kinds.append(rng.choice(FEEDBACK_MORE))
            for kind in kinds:
                rank = rng.randrange(len(docs))
                doc = None if kind == "re_search" else docs[rank]
                event = f"{rng.getrandbits(128):032x}"
                yield (event, query_id, kind, doc, rank + 1, None, at)

    def judgments(self) -> Iterator[tuple[Any, ...]]:
        rng = random.Random(self.shape.seed + 3)
        seen = set()
        for n in range(0, self.shape.rows, max(1, self.shape.rows // 5000)):
            docs = self.answers[n % self.shape.texts][0][2]
            key = (self.query_ids[n], docs[0])
            if key in seen:
                continue
            seen.add(key)
            yield (*key, rng.randint(0, 3), "manual", "ann", None, self.moment(n, self.shape.rows))

    def shadow_tests(self) -> list[tuple[Any, ...]]:
        """Five tests over consecutive windows of the log; the last one still running."""
        tests = []
        for t in range(5):
            start = START + timedelta(days=t * DAYS / 5)
            stop = None if t == 4 else start + timedelta(days=DAYS / 5)
            rule = GraduationRule(measure="rr", unit="query").to_dict()
            del rule["guardrails"]
            tests.append((
                f"test-{t}", "control", f"candidate-{t}", "rr", "{}", _json(rule), 0.05,
                start, stop, "running" if stop is None else "stopped",
            ))  # fmt: skip
        return tests

    def shadow_runs(self) -> Iterator[tuple[Any, ...]]:
        """(query_id, control, treatment, latencies, tau, jaccard, top1, created_at,
        session_id, control, treatment profiles, query unit): spread over the five tests'
        windows."""
        rng = random.Random(self.shape.seed + 4)
        total = self.shape.pairs
        for n in range(total):
            row = int(n * self.shape.rows / total)
            at = self.moment(row, self.shape.rows)
            test = min(4, int((at - START) / timedelta(days=DAYS / 5)))
            docs = self.answers[row % self.shape.texts][0][2]
            treatment = docs[:]
            rng.shuffle(treatment)
            yield (
                self.query_ids[row], _json(docs), _json(treatment),
                round(rng.uniform(5, 200), 2), round(rng.uniform(5, 200), 2),
                round(rng.uniform(-1, 1), 3), round(rng.random(), 3), docs[0] != treatment[0],
                at, None, "control", f"candidate-{test}", self.unit_keys.get(row),
            )  # fmt: skip

    def eval_runs(self) -> Iterator[tuple[Any, ...]]:
        """Runs of 4 systems x 5 datasets; (run id, system, dataset, sha, created_at)."""
        for n in range(self.shape.runs):
            system, dataset = f"system-{n % 4}", f"dataset-{(n // 4) % 5}"
            sha = f"{(n // 4) % 5:064x}"
            yield (n + 1, system, dataset, sha, START + timedelta(hours=n))


QUERY_COLUMNS = (
    "workspace_id, query_id, text, intent, mode, session_id, tool, results, channels, texts, "
    "latency_ms, trace_id, created_at, golden, category"
)
MEASURES = ("ndcg@10", "recall@10", "mrr", "p@5", "map", "success@1")
EVAL_QUERIES = 200


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def table_rows(data: Data) -> Iterator[tuple[str, str, Iterator[tuple[Any, ...]]]]:
    """(table, columns, rows) in loading order, every row with its workspace first."""
    w = WORKSPACE
    yield (
        "query_log",
        QUERY_COLUMNS,
        (
            (w, q, text, intent, "search", s, "search_memory", res, "{}", texts, lat, None, at,
             golden, cat)
            for q, text, intent, s, res, texts, lat, at, golden, cat in data.query_log()
        ),
    )  # fmt: skip
    yield (
        "feedback_events",
        "workspace_id, event_id, query_id, kind, doc_id, rank, session_id, created_at",
        ((w, *row) for row in data.feedback()),
    )
    yield (
        "judgments",
        "workspace_id, query_id, doc_id, grade, source, annotator, confidence, created_at",
        ((w, *row) for row in data.judgments()),
    )
    yield (
        "shadow_tests",
        "workspace_id, name, control, treatment, measure, guardrails, rule, alpha, started_at, "
        "stopped_at, status",
        ((w, *row) for row in data.shadow_tests()),
    )
    yield (
        "shadow_decisions",
        "workspace_id, test_id, at, decision, evidence, actor",
        (
            (w, t + 1, START + timedelta(days=t * DAYS / 5), "start", "{}", "bench")
            for t in range(5)
        ),
    )
    yield (
        "shadow_runs",
        "workspace_id, query_id, control_results, treatment_results, control_latency_ms, "
        "treatment_latency_ms, kendall_tau, jaccard, top1_changed, created_at, session_id, "
        "control, treatment, query_key",
        ((w, *row) for row in data.shadow_runs()),
    )
    runs = list(data.eval_runs())
    yield (
        "eval_runs",
        "id, workspace_id, system, system_settings, dataset_name, dataset_version, "
        "dataset_sha256, relevance_threshold, k, recallbench_version, created_at, "
        "recorded_at, accepted, queries, evaluated, failed, missing, no_relevant, "
        "latency_p50, latency_p95, latency_p99, source, rules",
        (
            (n, w, system, "{}", dataset, "1", sha, 1, 10, "0.1", at, at, n % 10 == 0,
             EVAL_QUERIES, EVAL_QUERIES, 0, 0, 0, 12.0, 40.0, 80.0, None, "{}")
            for n, system, dataset, sha, at in runs
        ),
    )  # fmt: skip
    yield (
        "eval_measures",
        "run_id, workspace_id, measure, mean, higher_is_better, position",
        (
            (n, w, m, 0.5 + (n % 7) / 100 + p / 50, True, p)
            for n, *_ in runs
            for p, m in enumerate(MEASURES)
        ),
    )
    yield (
        "eval_queries",
        "run_id, workspace_id, query_id, position, category, intent, status, latency_ms",
        (
            (n, w, f"q{i:04d}", i, None, None, "ok", 10.0 + i % 13)
            for n, *_ in runs
            for i in range(EVAL_QUERIES)
        ),
    )
    yield (
        "eval_query_values",
        "run_id, workspace_id, query_id, measure, value",
        (
            (n, w, f"q{i:04d}", m, ((n * 31 + i * 17 + p) % 100) / 100)
            for n, *_ in runs
            for i in range(EVAL_QUERIES)
            for p, m in enumerate(MEASURES)
        ),
    )
    yield (
        "annotations",
        "workspace_id, query_id, doc_id, annotator, grade, version, updated_at",
        (
            (w, data.query_ids[n], f"m{n % data.shape.memories}", f"ann{a}", (n + a) % 4, 1,
             data.moment(n, data.shape.rows))
            for n in range(0, data.shape.rows, max(1, data.shape.rows // 2000))
            for a in range(2)
        ),
    )  # fmt: skip


# -- loading ----------------------------------------------------------------------------


def _batches(rows: Iterator[tuple[Any, ...]], size: int) -> Iterator[list[tuple[Any, ...]]]:
    batch: list[tuple[Any, ...]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _sqlite_value(value: Any) -> Any:
    if isinstance(value, datetime):  # as SQLAlchemy writes it
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    return value


def load_sqlite(path: Path, shape: Shape) -> None:
    open_store(f"sqlite:///{path}").close()  # the schema, by the migrations
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode=OFF")  # the load only: nothing to recover
    connection.execute("PRAGMA synchronous=OFF")
    connection.execute("PRAGMA cache_size=-2000000")
    data = Data(shape)
    for table, columns, rows in table_rows(data):
        began = time.perf_counter()
        marks = ", ".join("?" * len(columns.split(",")))
        statement = f"INSERT INTO {table} ({columns}) VALUES ({marks})"
        count = 0
        connection.execute("BEGIN")
        for batch in _batches(rows, 50_000):
            connection.executemany(statement, [tuple(map(_sqlite_value, r)) for r in batch])
            count += len(batch)
        connection.execute("COMMIT")
        _say(f"sqlite {table}: {count} rows in {time.perf_counter() - began:.0f} s")
    connection.execute("ANALYZE")
    connection.execute("PRAGMA journal_mode=WAL")  # as the store opens it
    connection.close()


def load_postgres(url: str, shape: Shape) -> None:
    import psycopg

    open_store(url).close()
    data = Data(shape)
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as connection:
        for table, columns, rows in table_rows(data):
            began = time.perf_counter()
            count = 0
            statement = f"COPY {table} ({columns}) FROM STDIN"
            with connection.cursor() as cursor, cursor.copy(statement) as copy:
                for row in rows:
                    copy.write_row(row)
                    count += 1
            connection.commit()
            _say(f"postgresql {table}: {count} rows in {time.perf_counter() - began:.0f} s")
        connection.execute("SELECT setval('eval_runs_id_seq', (SELECT max(id) FROM eval_runs))")
        connection.commit()
        connection.autocommit = True
        connection.execute("VACUUM ANALYZE")


@contextmanager
def kept_postgres(folder: Path) -> Iterator[PostgresServer]:
    """A private server whose data stays in ``folder`` (created the first time)."""
    bin_dir = find_bin_dir()
    as_postgres = os.geteuid() == 0
    folder.mkdir(parents=True, exist_ok=True)
    if as_postgres:
        shutil.chown(folder, user="postgres")
    server = PostgresServer(folder, free_port(), bin_dir, as_postgres)
    data = str(folder / "data")
    if not (folder / "data").is_dir():
        _run(server, "initdb", "-D", data, "-A", "trust", "-U", "rb", "-E", "UTF8",
             "--locale=C", "--no-sync")  # fmt: skip
    options = (
        f"-p {server.port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off "
        "-c full_page_writes=off -c synchronous_commit=off -c shared_buffers=2GB "
        "-c max_wal_size=2GB -c maintenance_work_mem=1GB -c work_mem=64MB"
    )
    _run(server, "pg_ctl", "-D", data, "-o", options, "-l", str(folder / "log"), "-w", "start")
    try:
        yield server
    finally:
        _run(server, "pg_ctl", "-D", data, "-m", "fast", "-w", "stop")


# -- timing -----------------------------------------------------------------------------


def _cli(*args: str) -> float:
    """Seconds of one command in its own process (the interpreter's start included)."""
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "recallbench", *args], capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"recallbench {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return seconds


def _pages(url: str) -> list[tuple[str, str]]:
    """(label, path) of every page, from the store: the first and a far page of each list."""
    with open_store(url, WORKSPACE) as store:
        runs = store.runs(limit=2)
        logged = store.query_log(limit=1)
    first, second = runs[0].id, runs[1].id
    query = logged[0].query_id
    return [
        ("/ (history)", "/"),
        ("/runs/{id}", f"/runs/{first}"),
        ("/runs/{id}/query", f"/runs/{first}/query?q=q0001"),
        ("/compare", "/compare"),
        ("/compare?a&b", f"/compare?a={second}&b={first}"),
        ("/compare/query", f"/compare/query?a={second}&b={first}&q=q0001"),
        ("/compare/full", f"/compare/full?a={second}&b={first}"),
        ("/shadow", "/shadow"),
        ("/telemetry", "/telemetry"),
        ("/telemetry?page=1000", "/telemetry?page=1000"),
        ("/telemetry?q=", "/telemetry?q=budget%20review"),
        ("/telemetry/{query}", f"/telemetry/{query}"),
        ("/feedback", "/feedback"),
        ("/feedback?page=1000", "/feedback?page=1000"),
        ("/feedback?kind=", "/feedback?kind=validated_useful&page=10"),
        ("/annotate", "/annotate"),
        ("/pairwise", "/pairwise"),
        ("/agreement", "/agreement"),
        ("/adjudicate", "/adjudicate"),
        ("/pool", "/pool"),
        ("/static/{name}", "/static/dashboard.css"),
    ]


def time_serve(url: str) -> dict[str, float]:
    """Each page's slowest of PAGE_REPEATS requests to one `recallbench serve` process."""
    port = free_port()
    env = {**os.environ, "RECALLBENCH_SERVE_TOKEN": TOKEN}
    process = subprocess.Popen(
        [sys.executable, "-m", "recallbench", "serve", "--store", url, "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                _get(base + "/static/dashboard.css")
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"serve did not start: {process.stderr}") from None
                time.sleep(0.2)
        times = {}
        for label, path in _pages(url):
            seconds = []
            for _ in range(1 if "?q=" in path else PAGE_REPEATS):  # a search reads the log
                began = time.perf_counter()
                _get(base + path)
                seconds.append(time.perf_counter() - began)
            times[label] = max(seconds)
        return times
    finally:
        process.terminate()
        process.wait(30)


def _get(url: str) -> None:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            response.read()
    except urllib.error.HTTPError as error:  # a "missing" page (404) is a page too
        if error.code >= 500:
            raise
        error.read()


def time_store(url: str, out: Path) -> dict[str, float]:
    open_store(url).close()  # a migration the store lacks runs now, not in the first timing
    _forget_kept(url)
    times = {"harvest": _cli("harvest", "--store", url, "--out", str(out / "harvest.json"))}
    times["shadow status, first (keeps checkpoints)"] = _cli("shadow", "status", "--store", url)
    times["shadow status"] = _cli("shadow", "status", "--store", url)
    _new_pairs(url, NEW_PAIRS)
    times[f"shadow status, {NEW_PAIRS:,} pairs since"] = _cli("shadow", "status", "--store", url)
    times["history, first (keeps statistics)"] = _cli("history", "--store", url)
    times["history"] = _cli("history", "--store", url)
    times.update({f"serve {label}": s for label, s in time_serve(url).items()})
    return times


def _forget_kept(url: str) -> None:
    """Drop what reads keep in the store (shadow checkpoints, runs' statistics), so that the
    first reads timed build them again."""
    with open_store(url, WORKSPACE) as store, store._engine.begin() as connection:
        for table in ("shadow_checkpoints", "eval_run_statistics"):
            connection.exec_driver_sql(f"DELETE FROM {table}")


def _new_pairs(url: str, count: int) -> None:
    """``count`` interleaved pairs with clicks for the running test, stamped just after its
    checkpoint (as a proxy would have written them in the seconds between two reads), and
    a second's wait, so that the next read finds them settled. They stay in the kept store
    (new query ids each run)."""
    from recallbench.stats._interleaving import team_draft
    from recallbench.store import FeedbackEvent

    with open_store(url, WORKSPACE) as store:
        test = next(t for t in store.shadow_tests() if t.status == "running")
        checkpoint = store.shadow_checkpoint(test.id)
        assert checkpoint is not None, "the first read keeps a checkpoint"
        rng = random.Random(count)
        rows, events = [], []
        for n in range(count):
            at = checkpoint.covered_until + timedelta(milliseconds=n + 1)
            query_id = f"new-{uuid.uuid4().hex}"  # new ones each run: the store is kept
            control = [f"m{rng.randrange(1000)}" for _ in range(5)]
            treatment = control[:]
            rng.shuffle(treatment)
            drafted = team_draft(control, treatment, query_id)
            shown = list(zip(drafted.items, drafted.teams, strict=True))
            rows.append({
                "query_id": query_id, "control_results": control, "treatment_results": treatment,
                "control_latency_ms": round(rng.uniform(5, 200), 2),
                "treatment_latency_ms": round(rng.uniform(5, 200), 2), "created_at": at,
                "interleaved": shown, "interleaved_credited": len(shown),
                "control": test.control, "treatment": test.treatment,
                "query_key": query_key(_sentence(rng, 2, 4)),
            })  # fmt: skip
            events.append(FeedbackEvent(query_id, "read_after_search", at, rng.choice(control)))
        store.log_shadow_runs(rows)
        store.log(feedback=events)
    time.sleep(1.0)


# -- the table --------------------------------------------------------------------------


def table(shape: Shape, times: dict[str, dict[str, float]], engines: Sequence[str]) -> str:
    names = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}
    operations = list(dict.fromkeys(op for engine in engines for op in times[engine]))
    lines = [
        f"Store of {shape.rows:,} logged queries, {shape.pairs:,} shadow pairs and "
        f"{shape.runs:,} evaluation runs ({EVAL_QUERIES} queries x {len(MEASURES)} measures "
        f"each); {_machine()}.",
        "",
        "| operation | " + " | ".join(names[e] for e in engines) + " | target | met |",
        "|---|" + "---:|" * len(engines) + "---:|---|",
    ]
    for op in operations:
        cells = [times[e].get(op) for e in engines]
        shown = " | ".join("–" if c is None else f"{c:.2f} s" for c in cells)
        if ", first" in op:  # once, after an upgrade or a deletion: no target
            lines.append(f"| {op} | {shown} | – | – |")
            continue
        target = TARGETS["serve" if op.startswith("serve") else op.split(",")[0]]
        met = all(c is not None and c <= target for c in cells)
        lines.append(f"| {op} | {shown} | ≤ {target:g} s | {'yes' if met else 'NO'} |")
    return "\n".join(lines) + "\n"


def _machine() -> str:
    return f"{os.cpu_count()} cores, Python {sys.version.split()[0]}"


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="Where the stores are kept (default: temp).")
    parser.add_argument("--rows", type=int, default=10_000_000, help="Logged queries.")
    parser.add_argument("--pairs", type=int, default=1_000_000, help="Shadow pairs.")
    parser.add_argument("--runs", type=int, default=3_000, help="Evaluation runs.")
    parser.add_argument("--engines", default="sqlite,postgresql")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--generate-only", action="store_true", help="Only make the stores.")
    options = parser.parse_args(argv)
    shape = Shape(options.rows, options.pairs, options.runs)
    engines = [e for e in options.engines.split(",") if e]
    temporary = options.data is None
    folder = Path(tempfile.mkdtemp(prefix="rb-scale-")) if temporary else options.data
    folder.mkdir(parents=True, exist_ok=True)
    times: dict[str, dict[str, float]] = {}
    command = "python benchmarks/store_scale.py" + (
        "" if options.rows == 10_000_000 and options.pairs == 1_000_000 and options.runs == 3000
        else f" --rows {options.rows} --pairs {options.pairs} --runs {options.runs}"
    )  # fmt: skip
    try:
        for engine in engines:
            times[engine] = _engine(engine, folder, shape, options.generate_only)
            if not options.generate_only:  # written after each engine: a long run shows
                done = [e for e in engines if e in times]
                text = table(shape, times, done)
                options.out.parent.mkdir(parents=True, exist_ok=True)
                options.out.write_text(f"# Store scale\n\n`{command}`\n\n{text}")
    finally:
        if temporary:
            shutil.rmtree(folder, ignore_errors=True)
    if not options.generate_only:
        print(table(shape, times, engines))


def _engine(engine: str, folder: Path, shape: Shape, generate_only: bool) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix="rb-scale-out-"))
    try:
        if engine == "sqlite":
            path = folder / f"sqlite-{shape.tag}.db"
            _once(folder / f"sqlite-{shape.tag}.done", lambda: load_sqlite(path, shape), path)
            return {} if generate_only else time_store(f"sqlite:///{path}", work)
        pg = folder / f"postgresql-{shape.tag}"
        done = folder / f"postgresql-{shape.tag}.done"
        if not done.exists() and pg.exists():
            shutil.rmtree(pg)
        with kept_postgres(pg) as server:
            url = server.url("recallbench")
            if not done.exists():
                _admin(server.url(), "CREATE DATABASE recallbench")
            _once(done, lambda: load_postgres(url, shape), None)
            return {} if generate_only else time_store(url, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _once(done: Path, load: Callable[[], None], path: Path | None) -> None:
    if done.exists():
        return
    if path is not None and path.exists():
        path.unlink()
    began = time.perf_counter()
    load()
    done.write_text(f"{time.perf_counter() - began:.0f} s\n")
    _say(f"generated in {time.perf_counter() - began:.0f} s")


def _admin(url: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(statement)


if __name__ == "__main__":
    main()
