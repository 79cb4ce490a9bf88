"""Throughput of `run --concurrency N` against an HTTP search endpoint that takes 20 ms.

A small endpoint (Python's ThreadingHTTPServer in a process of its own, so that it does not
share the runner's interpreter) sleeps --latency-ms per search and answers by word match.
The same dataset (--queries queries over 100 documents) is run at each concurrency with
``run_dataset``, timed from the first query to the last (ingestion excluded), median of
--rounds; the results are checked to be the same as the sequential run's. Prints queries
per second and the ratio to N = 1; exit status 1 when N = 8 is under 6x (the target).

    python benchmarks/run_concurrency.py
    python benchmarks/run_concurrency.py --queries 400 --concurrency 1 4 8 16
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TARGET = 6.0
"""Throughput at N = 8 over N = 1 (issue 22)."""


def serve(port_file: Path, latency_s: float) -> None:
    """The endpoint: POST /ingest stores a document, POST /search sleeps, then matches."""
    store: dict[str, str] = {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real service
        disable_nagle_algorithm = True  # else headers and body wait 40 ms for a delayed ACK

        def log_message(self, *args: Any) -> None:
            return None

        def do_POST(self) -> None:
            payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/ingest":
                store[payload["key"]] = payload["body"]
                body: Any = {"ok": True}
            else:
                time.sleep(latency_s)
                words = set(payload["q"].split())
                found = [key for key, text in store.items() if words & set(text.split())]
                body = {"hits": [{"key": key} for key in found[: payload["k"]]]}
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    ThreadingHTTPServer.request_queue_size = 128
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    port_file.write_text(str(server.server_address[1]))
    server.serve_forever()


def profile(folder: Path, port: int) -> Path:
    path = folder / "slow-search.toml"
    path.write_text(f"""
name = "slow-search"
kind = "http"
[http]
base_url = "http://127.0.0.1:{port}"
[ingest]
path = "/ingest"
item = {{ key = "{{id}}", body = "{{text}}" }}
[search]
path = "/search"
body = {{ q = "{{query}}", k = "{{k}}" }}
[results]
hits = "hits"
id = "key"
""")
    return path


def dataset(queries: int) -> Any:
    from recallbench.core import Dataset, Document, Query

    words = [f"w{i}" for i in range(50)]
    return Dataset(
        name="concurrency-bench",
        documents=tuple(
            Document(id=f"d{i}", text=" ".join(words[(i * j) % 50] for j in range(1, 8)))
            for i in range(100)
        ),
        queries=tuple(
            Query(id=f"q{i}", text=f"{words[i % 50]} {words[(i * 7) % 50]}") for i in range(queries)
        ),
        qrels={f"q{i}": {f"d{i % 100}": 1} for i in range(queries)},
    )


async def timed_run(data: Any, path: Path, concurrency: int) -> tuple[float, list[Any]]:
    """Seconds from the first query to the last, and the results without their timing."""
    from recallbench.runner import run_dataset
    from recallbench.systems import create_system

    first: list[float] = []

    def ingesting(_: int) -> None:
        first.clear()

    def progress(done: int, _: int) -> None:
        if not first:
            first.append(time.perf_counter())

    start = time.perf_counter()
    run = await run_dataset(
        data,
        create_system(str(path)),
        k=10,
        concurrency=concurrency,
        progress=progress,
        ingesting=ingesting,
    )
    elapsed = time.perf_counter() - start - run.spec.ingest_seconds
    results = [r.model_dump(mode="json", exclude={"latency_ms"}) for r in run.results]
    return elapsed, results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:
        serve(args.serve, args.latency_ms / 1000)
        return 0
    levels = sorted({1, 8, *args.concurrency})
    with tempfile.TemporaryDirectory(prefix="recallbench-concurrency-") as folder:
        port_file = Path(folder) / "port"
        server = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--serve",
                str(port_file),
                "--latency-ms",
                str(args.latency_ms),
            ]
        )
        try:
            while not port_file.exists() or not port_file.read_text():
                time.sleep(0.05)
            path = profile(Path(folder), int(port_file.read_text()))
            data = dataset(args.queries)
            seconds: dict[int, float] = {}
            reference: list[Any] | None = None
            for level in levels:
                times = []
                for _ in range(args.rounds):
                    elapsed, results = asyncio.run(timed_run(data, path, level))
                    reference = reference or results
                    if results != reference:
                        print(f"FAIL  results at concurrency {level} differ from sequential")
                        return 1
                    times.append(elapsed)
                seconds[level] = statistics.median(times)
        finally:
            server.terminate()
            server.wait()
    print(
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}; {args.queries} queries, endpoint latency "
        f"{args.latency_ms:g} ms, median of {args.rounds}"
    )
    print(f"{'concurrency':>11}  {'seconds':>8}  {'queries/s':>9}  {'vs N=1':>6}")
    for level in levels:
        ratio = seconds[1] / seconds[level]
        rate = args.queries / seconds[level]
        print(f"{level:>11}  {seconds[level]:8.3f}  {rate:9.1f}  {ratio:5.2f}x")
    ratio = seconds[1] / seconds[8]
    passed = ratio >= TARGET
    print(
        f"{'PASS' if passed else 'FAIL'}  N=8 throughput {ratio:.2f}x N=1 (target >= {TARGET:g}x)"
    )
    print("PASS  results identical at every concurrency")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
