"""Load test of the telemetry store: concurrent writer processes, nothing may be lost.

8 writer processes x 10,000 searches each; every search is one query log entry with 10
ranked results and one feedback event. Each process logs through its own
``recallbench.telemetry.TelemetryLogger`` (the SDK: a queue and a background writer thread
calling ``Store.log`` in batches), or with ``--writer store`` calls ``Store.log`` itself in
batches. Then the row counts must be exactly 80,000 and 80,000.

PostgreSQL (default) runs on a throwaway server started from the machine's binaries
(``recallbench.store._pg_server``, the same helper as the tests' fixture) with fsync on, so
that commit times are real; ``--engine sqlite`` writes one SQLite file (WAL) instead.

    python benchmarks/store_load.py [--engine postgresql|sqlite] [--writer sdk|store]
        [--processes 8] [--searches 10000] [--batch-size 500] [--queue-size 25000]
    python benchmarks/store_load.py --url postgresql://user@host/db   # an existing server
"""

from __future__ import annotations

import argparse
import multiprocessing
import queue
import tempfile
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from multiprocessing.synchronize import Event
from pathlib import Path

from recallbench.store import FeedbackEvent, QueryLogEntry, open_store

RESULTS = 10


@dataclass(frozen=True)
class WorkerResult:
    worker: int
    seconds: float
    queued: int
    written: int
    dropped: int
    errors: int
    batches: int


def work(
    worker: int, url: str, searches: int, writer: str, batch: int, queue_size: int, go: Event
) -> WorkerResult:
    """One writer process: wait for the start signal, log every search, close."""
    go.wait()
    start = time.perf_counter()
    if writer == "sdk":
        from recallbench.telemetry import TelemetryLogger

        with TelemetryLogger(url, batch_size=batch, queue_size=queue_size) as logger:
            for n in range(searches):
                ids = [f"w{worker}-m{(n * 7 + r) % 5000}" for r in range(RESULTS)]
                query_id = logger.log_search(
                    f"worker {worker} search {n}", ids, session_id=f"w{worker}-s{n // 20}"
                )
                logger.log_feedback(query_id, "read_after_search", doc_id=ids[n % RESULTS])
            logger.flush()
        stats = logger.stats
        counts = (stats.queued, stats.written, stats.dropped, stats.errors, stats.batches)
    else:
        with open_store(url) as store:
            batches = 0
            for first in range(0, searches, batch):
                queries, feedback = [], []
                for n in range(first, min(first + batch, searches)):
                    ids = tuple(f"w{worker}-m{(n * 7 + r) % 5000}" for r in range(RESULTS))
                    query_id = uuid.uuid4().hex
                    now = datetime.now(UTC)
                    queries.append(QueryLogEntry(query_id, f"worker {worker} search {n}", now, ids))
                    feedback.append(
                        FeedbackEvent(query_id, "read_after_search", now, ids[n % RESULTS])
                    )
                store.log(queries=queries, feedback=feedback)
                batches += 1
        counts = (2 * searches, 2 * searches, 0, 0, batches)
    return WorkerResult(worker, time.perf_counter() - start, *counts)


def _child(done: multiprocessing.Queue[WorkerResult], *args: object) -> None:
    done.put(work(*args))  # type: ignore[arg-type]


def run(args: argparse.Namespace, url: str) -> bool:
    with open_store(url) as store:  # migrate first: the timing is of the writes only
        shown = store.url
    context = multiprocessing.get_context("spawn")  # no fork of a process with threads
    go = context.Event()
    done: multiprocessing.Queue[WorkerResult] = context.Queue()
    processes = [
        context.Process(
            target=_child,
            args=(done, w, url, args.searches, args.writer, args.batch_size, args.queue_size, go),
        )
        for w in range(args.processes)
    ]
    for process in processes:
        process.start()
    time.sleep(3.0)  # let every worker import and reach the start line
    start = time.perf_counter()
    go.set()
    results: list[WorkerResult] = []
    while len(results) < len(processes):
        try:
            results.append(done.get(timeout=1.0))
        except queue.Empty:
            failed = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
            if failed:
                raise SystemExit(f"a writer process failed (exit codes {failed})") from None
    wall = time.perf_counter() - start
    for process in processes:
        process.join()
    with open_store(url) as store:
        logged, feedback = store.count("query_log"), store.count("feedback_events")
    expected = args.processes * args.searches
    dropped = sum(r.dropped for r in results)
    errors = sum(r.errors for r in results)
    rows = logged + feedback
    print(f"store      {shown}")
    print(
        f"load       {args.processes} processes x {args.searches:,} searches "
        f"({RESULTS} results + 1 feedback event each), writer={args.writer}, "
        f"batch {args.batch_size}"
        + (f", queue {args.queue_size:,}" if args.writer == "sdk" else "")
    )
    print(f"wall       {wall:.2f} s (slowest process {max(r.seconds for r in results):.2f} s)")
    print(f"throughput {rows / wall:,.0f} rows/s ({logged / wall:,.0f} searches/s)")
    print(f"query_log  {logged:,} rows (expected {expected:,})")
    print(f"feedback   {feedback:,} rows (expected {expected:,})")
    batches = sum(r.batches for r in results)
    print(f"writers    dropped {dropped:,}, errors {errors:,}, batches {batches:,}")
    lost = 2 * expected - rows
    ok = logged == feedback == expected and dropped == 0
    print(f"lost       {lost:,} rows -> {'OK: nothing lost' if ok else 'FAILED'}")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=("postgresql", "sqlite"), default="postgresql")
    parser.add_argument("--url", help="an existing store URL (empty database) instead")
    parser.add_argument("--writer", choices=("sdk", "store"), default="sdk")
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--searches", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument(
        "--queue-size",
        type=int,
        default=25_000,
        help="SDK queue per process; the default holds all of a process's records, so that "
        "the test measures the store (the SDK's own default, 10,000, drops when the store "
        "falls behind a tight loop, and counts it)",
    )
    args = parser.parse_args()
    with ExitStack() as stack:
        if args.url:
            url = args.url
        elif args.engine == "sqlite":
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            url = f"sqlite:///{folder / 'load.db'}"
        else:
            from recallbench.store._pg_server import throwaway_postgres

            server = stack.enter_context(throwaway_postgres(fast=False))
            url = server.create_database()
        ok = run(args, url)
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
