"""What `TelemetryLogger.log_search` costs the caller: its latency on the caller's thread,
with the writer thread running and writing to a real store, next to a bare no-op call.

Each of CALLS calls logs one search with RESULTS results (ids, (id, score) pairs or dicts
with text, by --shape), timed alone with perf_counter_ns; the calls follow each other
back to back (the worst case: the writer competes for the GIL all the time) unless
--pause-us spaces them out. Prints p50 / p90 / p99 / max in microseconds, what was written
and dropped, how long closing (writing the rest) took, and checks the targets: p50 under
0.5 ms and p99 under 2 ms. Exit status 1 when a target is missed or a record is lost.

    python benchmarks/telemetry_overhead.py                   # SQLite in a temporary folder
    python benchmarks/telemetry_overhead.py --shape dicts --pause-us 200
    python benchmarks/telemetry_overhead.py --store postgresql+psycopg://rb@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from recallbench.telemetry import TelemetryLogger

P50_TARGET_US = 500.0
P99_TARGET_US = 2_000.0


def make_results(shape: str, calls: int, size: int) -> list[list[Any]]:
    """One result list per call, built before timing."""
    lists: list[list[Any]] = []
    for call in range(calls):
        ids = [f"mem-{(call * 7 + rank) % 5_000:05d}" for rank in range(size)]
        if shape == "ids":
            lists.append(ids)
        elif shape == "pairs":
            lists.append([(doc, 1.0 / (rank + 1)) for rank, doc in enumerate(ids)])
        else:
            lists.append(
                [
                    {"id": doc, "text": f"memory {doc}: a short note", "channels": ["bm25"]}
                    for doc in ids
                ]
            )
    return lists


def time_calls(
    call: Callable[..., Any], queries: Sequence[str], results: Sequence[Any], pause_s: float
) -> list[float]:
    """Microseconds per call."""
    timings = [0.0] * len(queries)
    clock = time.perf_counter_ns
    for i, (query, found) in enumerate(zip(queries, results, strict=True)):
        start = clock()
        call(query, found, session_id="bench-session", tool="search")
        timings[i] = (clock() - start) / 1_000
        if pause_s:
            time.sleep(pause_s)
    return timings


def percentiles(timings: list[float]) -> dict[str, float]:
    ordered = sorted(timings)
    last = len(ordered) - 1

    def at(fraction: float) -> float:
        return ordered[min(last, round(fraction * last))]

    return {"p50": at(0.50), "p90": at(0.90), "p99": at(0.99), "max": ordered[last]}


def row(name: str, values: dict[str, float]) -> str:
    cells = "  ".join(f"{key} {value:9.2f}" for key, value in values.items())
    return f"{name:<12} {cells}"


class GcPauses:
    """Counts the garbage collections from now on, and the longest one."""

    def __init__(self) -> None:
        self.count = 0
        self.longest = 0.0
        self._start = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.count += 1
            self.longest = max(self.longest, time.perf_counter() - self._start)

    def stop(self) -> tuple[int, float]:
        gc.callbacks.remove(self._callback)
        return self.count, self.longest * 1000


def noop(query: str, results: Sequence[Any], **meta: Any) -> None:
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=50_000)
    parser.add_argument("--results", type=int, default=10, help="results per search")
    parser.add_argument("--shape", choices=("ids", "pairs", "dicts"), default="ids")
    parser.add_argument("--store", metavar="URL", help="store URL (default: a temporary SQLite)")
    parser.add_argument("--pause-us", type=float, default=0.0, help="pause between calls")
    parser.add_argument("--queue-size", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=500)
    args = parser.parse_args(argv)

    queries = [f"what did I say about topic {i % 997}?" for i in range(args.calls)]
    results = make_results(args.shape, args.calls, args.results)
    pause_s = args.pause_us / 1e6
    with tempfile.TemporaryDirectory(prefix="recallbench-telemetry-") as folder:
        url = args.store or f"sqlite:///{Path(folder) / 'telemetry.db'}"
        workspace = f"bench-{time.time_ns()}"  # a fresh workspace: rows counted are ours
        logger = TelemetryLogger(
            url, workspace=workspace, queue_size=args.queue_size, batch_size=args.batch_size
        )
        logger.log_search("warm-up", ["m"])  # the writer opens the store (not timed)
        logger.flush(30)
        gc.collect()
        gc.freeze()  # the inputs built above are ours, not the logger's: keep them out of GC
        pauses = GcPauses()
        bare = percentiles(time_calls(noop, queries, results, pause_s))
        started = time.perf_counter()
        timed = percentiles(time_calls(logger.log_search, queries, results, pause_s))
        calling_s = time.perf_counter() - started
        collections, longest_ms = pauses.stop()
        closing = time.perf_counter()
        logger.close(timeout=120)
        closing_s = time.perf_counter() - closing
        stats = logger.stats
        from recallbench.store import open_store
        from recallbench.store._engine import display_url

        with open_store(url, workspace) as store:
            stored = store.count("query_log") - 1  # without the warm-up

    shown = display_url(url) if args.store else "sqlite (temporary file)"
    print(f"store {shown}; {args.calls:,} calls, {args.results} results each as {args.shape}, ")
    print(f"pause {args.pause_us:g} us between calls")
    print(f"Python {sys.version.split()[0]}; microseconds per call on the caller's thread:")
    print(row("no-op", bare))
    print(row("log_search", timed))
    print(
        f"garbage collections while logging: {collections}, the longest {longest_ms:.1f} ms "
        "(a pause lands on whichever call allocates at the time)"
    )
    print(
        f"calls took {calling_s:.2f} s ({args.calls / calling_s:,.0f}/s); close wrote the "
        f"rest in {closing_s:.2f} s"
    )
    print(
        f"queued {stats.queued - 1:,}  written {stats.written - 1:,}  dropped {stats.dropped:,}  "
        f"errors {stats.errors}  batches {stats.batches}  rows in the store {stored:,}"
    )
    checks = {
        f"p50 < {P50_TARGET_US:g} us": timed["p50"] < P50_TARGET_US,
        f"p99 < {P99_TARGET_US:g} us": timed["p99"] < P99_TARGET_US,
        "every record written or counted as dropped": stored + stats.dropped == args.calls,
    }
    for name, passed in checks.items():
        print(f"{'PASS' if passed else 'FAIL'}  {name}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
