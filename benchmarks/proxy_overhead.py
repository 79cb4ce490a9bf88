"""What `recallbench proxy` adds to a call over stdio: server-memory searched directly and
through the proxy (logging to a temporary SQLite store), side by side.

One MCP client (the official SDK) starts the server, or the proxy in front of it, fills it
with --entities entities, then makes --calls search_nodes calls back to back, each timed
alone with perf_counter_ns. The two are measured in alternating rounds (--rounds), so that
load from other jobs falls on both alike. Prints each side's p50 / p90 / p99 in
milliseconds, the added median and the ratio, and checks the target: at most 0.5 ms added
at the median, paired by round (the median over rounds of the difference of the two sides'
medians in that round: robust to load from other jobs that drifts between rounds).
--baseline SRC also times the proxy of another checkout's sources (before / after in one
run). --profile FILE also runs the proxy under cProfile in the last round and writes its
statistics there (where the proxy's time goes; not timed). Writes
benchmarks/results/proxy_overhead.md with the machine and its load (--no-write: not).
Exit status 1 when the target is missed.

    python benchmarks/proxy_overhead.py
    python benchmarks/proxy_overhead.py --calls 2000 --profile /tmp/proxy.prof
    git archive HEAD~3 src | tar -x -C /tmp/before && \
        python benchmarks/proxy_overhead.py --baseline /tmp/before/src
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine, write_results

TARGET_MS = 0.5
RESULTS = Path(__file__).parent / "results" / "proxy_overhead.md"


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    last = len(ordered) - 1
    return {
        name: ordered[min(last, round(q * last))]
        for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))
    }


def server_memory_script() -> Path:
    """server-memory's entry point as `recallbench systems install` put it; a clear exit
    when it is not there (the proxy would start, and the first call fail)."""
    from recallbench.systems._install import install_folder
    from recallbench.systems._profile import load_profile, shipped_profiles

    folder = install_folder(load_profile(shipped_profiles()["server-memory"]))
    script = folder / "node_modules/@modelcontextprotocol/server-memory/dist/index.js"
    if not script.exists():
        raise SystemExit(
            f"server-memory is not installed in {folder}: run `recallbench systems install "
            "server-memory`, or after `make test` set RECALLBENCH_HOME=.cache/recallbench-home"
        )
    return script


def commands(folder: Path, profile_out: Path | None, baseline: Path | None) -> dict[str, list[str]]:
    """The server's own command line, and the proxy's in front of it."""
    direct = ["node", str(server_memory_script())]
    runner = [sys.executable]
    if profile_out is not None:
        runner += ["-m", "cProfile", "-o", str(profile_out)]
    proxied = [
        *runner,
        "-m",
        "recallbench",
        "proxy",
        "--profile",
        "server-memory",
        "--store-dir",
        str(folder / "proxied"),
        "--store",
        f"sqlite:///{folder / 'telemetry.db'}",
    ]
    sides = {"direct": direct, "proxy": proxied}
    if baseline is not None:  # the same command, run from another checkout's sources
        plain = proxied[len(runner) :]  # not profiled: the profile is this checkout's proxy
        sides["baseline"] = ["env", f"PYTHONPATH={baseline}", sys.executable, *plain]
        sides["baseline"][sides["baseline"].index("--store-dir") + 1] += "-baseline"
    return sides


def cpu_seconds() -> float:
    """CPU time (user + system) of this process's children and theirs, from /proc: the
    server, or the proxy and its server. Load from other jobs does not inflate it."""
    total, seen, todo = 0.0, set(), [os.getpid()]
    tick = os.sysconf("SC_CLK_TCK")
    while todo:
        pid = todo.pop()
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child in seen:
                    continue
                seen.add(child)
                todo.append(child)
                try:
                    fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                total += (int(fields[11]) + int(fields[12])) / tick
    return total


CPU: dict[str, list[float]] = {}
"""Side -> CPU milliseconds per call of the processes behind the client, per round."""


async def session_calls(
    command: list[str],
    env: dict[str, str],
    entities: int,
    calls: int,
    side: str,
    pause: float = 0.0,
) -> list[float]:
    """Milliseconds per search call through a fresh client session, with ``pause`` seconds
    between calls, untimed (an agent thinks between its tool calls, and background work,
    such as shadowing, may use that time)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    parameters = StdioServerParameters(command=command[0], args=command[1:], env=env)
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(parameters, errlog=quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            batch = [
                {"name": f"m{i}", "entityType": "memory", "observations": [f"note {i}: {i % 40}"]}
                for i in range(entities)
            ]
            await session.call_tool("create_entities", {"entities": batch})
            for i in range(20):  # warm-up: JIT, caches, the proxy's first log record
                await session.call_tool("search_nodes", {"query": f": {i % 40}"})
            timings = []
            clock = time.perf_counter_ns
            cpu = cpu_seconds()
            for i in range(calls):
                start = clock()
                await session.call_tool("search_nodes", {"query": f": {i % 40}"})
                timings.append((clock() - start) / 1e6)
                if pause:
                    await asyncio.sleep(pause)
            CPU.setdefault(side, []).append((cpu_seconds() - cpu) * 1000 / calls)
            return timings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=500, help="timed calls per round and side")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--entities", type=int, default=200)
    parser.add_argument("--profile", type=Path, help="write the proxy's cProfile stats here")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="SRC",
        help="also time the proxy of another checkout's src folder (e.g. from `git archive`)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    host = machine()
    samples: dict[str, list[float]] = {"direct": [], "proxy": [], "baseline": []}
    rounds: dict[str, list[float]] = {}
    """Side -> its median in each round (the sides take turns within a round)."""
    with tempfile.TemporaryDirectory(prefix="recallbench-proxy-bench-") as name:
        folder = Path(name)
        for round_ in range(args.rounds):
            profile_out = args.profile if args.profile and round_ == args.rounds - 1 else None
            for side, command in commands(folder, profile_out, args.baseline).items():
                env = {**os.environ, "MEMORY_FILE_PATH": str(folder / f"{side}.jsonl")}
                calls = session_calls(command, env, args.entities, args.calls, side)
                timings = asyncio.run(calls)
                samples[side] += timings
                rounds.setdefault(side, []).append(statistics.median(timings))
                (folder / f"{side}.jsonl").unlink(missing_ok=True)
    shown = {side: percentiles(values) for side, values in samples.items() if values}
    header = (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}; server-memory over stdio, {args.entities} entities, "
        f"{args.rounds} x {args.calls} search_nodes calls per side"
    )
    cpu = {side: statistics.median(values) for side, values in CPU.items()}
    lines = ["| side | p50 ms | p90 ms | p99 ms | CPU ms per call behind the client |",
             "|---|---|---|---|---|"]  # fmt: skip
    for side, values in shown.items():
        lines.append(
            f"| {side} | {values['p50']:.3f} | {values['p90']:.3f} | {values['p99']:.3f} | "
            f"{cpu.get(side, float('nan')):.3f} |"
        )
    added = {
        side: statistics.median(
            mine - base for mine, base in zip(rounds[side], rounds["direct"], strict=True)
        )
        for side in shown
        if side != "direct"
    }
    lines.append("")
    for side, extra in added.items():
        ratio = shown[side]["p50"] / shown["direct"]["p50"]
        lines.append(
            f"- {side}: added median {extra:.3f} ms (paired by round); pooled p50 "
            f"{side} / direct {ratio:.2f}x"
        )
    lines.append(
        "- Per-round medians (ms): "
        + "; ".join(
            f"{side} " + " ".join(f"{value:.2f}" for value in values)
            for side, values in rounds.items()
        )
    )
    passed = added["proxy"] <= TARGET_MS
    lines.append(
        f"\n{'PASS' if passed else 'FAIL'}  the proxy adds <= {TARGET_MS:g} ms to the median "
        f"call ({added['proxy']:.3f} ms; CPU ms per call behind the client from /proc, 10 ms "
        "ticks)"
    )
    text = "\n".join(lines)
    print(header)
    print(text)
    if not args.no_write:
        body = f"{header}\n\n{text}"
        write_results(
            __file__, "the proxy's overhead over stdio", argv or None, host, body, args.out
        )
    if args.profile:
        print(f"the proxy's profile (last round): {args.profile}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
