"""`recallbench evaluate` on runs of 10M and 100M lines against trec_eval 10.0: wall time,
peak memory, identical output.

Generates (once, deterministically, cached in --data) a run of QUERIES x 1,000 lines per
size, its queries in shuffled order (so that trec_eval's order is a sort) with nearly
distinct scores, and qrels of 20 judgments a query (half inside the ranking, graded 0-3).
Each tool runs as its own process on the same files: recallbench streamed (its default
above 256 MiB), recallbench reading the run whole (RECALLBENCH_STREAM_BLOCK=0, today's
path below 256 MiB), and trec_eval 10.0, built from ../shared/tools/trec_eval-10.0. One
unmeasured run warms the page cache, then each tool runs --repeats times in turns; the
median wall time and the largest peak RSS (getrusage of the child) are reported, and the
outputs (trec_eval's official measures) must be byte for byte the same. trec_eval runs on
the larger run only if its peak memory, estimated from the smaller run's, fits in 80% of
the machine's memory, and there once (it takes minutes).

    python benchmarks/evaluate_scale.py                      # 10M and 100M lines
    python benchmarks/evaluate_scale.py --sizes 1000000 --no-write
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine, write_results

ROOT = Path(__file__).resolve().parent.parent
TREC_EVAL_SOURCE = ROOT.parent / "shared" / "tools" / "trec_eval-10.0"
DEPTH = 1000
JUDGED = 20
POOL = 10_000_000  # document ids d0000000-d9999999
STRIDE = 104_729  # prime: a query's consecutive multiples are distinct modulo the pool
RUN_LINE = b"q000000 Q0 d0000000 0000 0.0000 bench\n"  # fixed width: filled by numpy
QRELS_LINE = b"q000000 0 d0000000 0\n"
MEMORY_TARGET = 300 * 2**20  # recallbench's peak at 100M lines
TIME_TARGET = 0.2  # recallbench's time over trec_eval's at 10M lines
LARGE = 50_000_000  # from this many lines on, trec_eval runs once


def digits(out: np.ndarray, column: int, width: int, values: np.ndarray) -> None:
    """``values`` as zero-padded decimal digits in ``out[:, column:column + width]``."""
    for k in range(width):
        out[:, column + width - 1 - k] = 48 + (values // 10**k) % 10


def write_chunk(
    rng: np.random.Generator, qids: np.ndarray, run_file: object, qrels_file: object
) -> None:
    """The run and qrels lines of queries ``qids`` (a chunk, in file order)."""
    n = len(qids)
    base = rng.integers(POOL, size=(n, 1))
    docs = (base + np.arange(DEPTH + JUDGED // 2) * STRIDE) % POOL
    scores = -np.sort(-rng.integers(0, 100_000, size=(n, DEPTH)), axis=1)  # descending
    run = np.tile(np.frombuffer(RUN_LINE, np.uint8), (n * DEPTH, 1))
    digits(run, 1, 6, np.repeat(qids, DEPTH))
    digits(run, 12, 7, docs[:, :DEPTH].ravel())
    digits(run, 20, 4, np.tile(np.arange(1, DEPTH + 1), n))
    flat = scores.ravel()
    digits(run, 25, 1, flat // 10_000)
    digits(run, 27, 4, flat % 10_000)
    run_file.write(run.tobytes())  # type: ignore[attr-defined]
    # judged: half at random ranks (relevant ones likelier near the top), half unranked
    inside = np.argsort(rng.random((n, DEPTH)), axis=1)[:, : JUDGED // 2]
    grades_in = np.minimum(3, rng.poisson(1.5 - inside / DEPTH))
    judged_docs = np.concatenate(
        [np.take_along_axis(docs, inside, axis=1), docs[:, DEPTH:]], axis=1
    )
    grades = np.concatenate([grades_in, rng.integers(0, 4, size=(n, JUDGED // 2))], axis=1)
    qrels = np.tile(np.frombuffer(QRELS_LINE, np.uint8), (n * JUDGED, 1))
    digits(qrels, 1, 6, np.repeat(qids, JUDGED))
    digits(qrels, 11, 7, judged_docs.ravel())
    digits(qrels, 19, 1, grades.ravel())
    qrels_file.write(qrels.tobytes())  # type: ignore[attr-defined]


def generate(folder: Path, lines: int, seed: int = 20261127) -> tuple[Path, Path]:
    """The qrels and run of ``lines`` run lines (``lines // 1000`` queries), unless present."""
    queries = lines // DEPTH
    qrels_path, run_path = folder / f"qrels.{queries}x{JUDGED}", folder / f"run.{queries}x{DEPTH}"
    if qrels_path.exists() and run_path.exists():
        return qrels_path, run_path
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    order = rng.permutation(queries)  # file order differs from trec_eval's sorted order
    qrels_tmp, run_tmp = folder / "qrels.tmp", folder / "run.tmp"
    with qrels_tmp.open("wb") as qrels_file, run_tmp.open("wb") as run_file:
        for start in range(0, queries, 1000):
            write_chunk(rng, order[start : start + 1000], run_file, qrels_file)
    qrels_tmp.rename(qrels_path)
    run_tmp.rename(run_path)
    return qrels_path, run_path


def build_trec_eval(folder: Path) -> Path:
    """trec_eval 10.0 built from the shared source, in ``folder`` (once)."""
    binary = folder / "trec_eval-10.0" / "trec_eval"
    if not binary.exists():
        shutil.copytree(
            TREC_EVAL_SOURCE, binary.parent, ignore=shutil.ignore_patterns("trec_eval", "*.o")
        )
        binary.parent.chmod(0o755)  # the shared copy has no write bits
        subprocess.run(["make"], cwd=binary.parent, check=True, capture_output=True)
    return binary


PEAK = """
import os, subprocess, sys, time
start = time.perf_counter()
with open(sys.argv[1], "wb") as out:
    child = subprocess.Popen(sys.argv[2:], stdout=out, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
print(status, time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)
sys.stderr.write(child.stderr.read().decode()[-2000:])
"""


Measured = tuple[float, float, int]
"""Wall seconds, CPU seconds (user and system) and peak RSS (bytes) of one process."""


def measure(command: list[str], out: Path, env: dict[str, str]) -> Measured:
    """Wall and CPU seconds and peak RSS of one process, its output written to ``out``.
    Started from a small process of its own: a child's peak RSS counts the memory of the
    process it was forked from until it execs (this one holds the generator's arrays)."""
    done = subprocess.run(
        [sys.executable, "-c", PEAK, str(out), *command], env=env, capture_output=True, text=True
    )
    status, elapsed, cpu, peak = done.stdout.split()
    if done.returncode != 0 or int(status) != 0:
        raise SystemExit(f"{command} failed ({status}): {done.stderr}")
    return float(elapsed), float(cpu), int(peak) * 1024


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000_000, 100_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "rb-scale")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    host = machine(repeats=args.repeats)  # the load average before the runs
    trec_eval = build_trec_eval(args.data)
    recallbench = [sys.executable, "-m", "recallbench", "evaluate"]
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    env = {k: v for k, v in os.environ.items() if k != "RECALLBENCH_STREAM_BLOCK"}
    tools = {
        "recallbench (streamed)": (recallbench, env),
        "recallbench (whole file)": (recallbench, {**env, "RECALLBENCH_STREAM_BLOCK": "0"}),
        "trec_eval 10.0": ([str(trec_eval)], env),
    }
    rows = []
    trec_peak_per_line: float | None = None
    for lines in sorted(args.sizes):
        started = time.perf_counter()
        qrels, run = generate(args.data, lines)
        print(
            f"{lines:,} lines: {run.stat().st_size:,} bytes ({time.perf_counter() - started:.0f} s)"
        )
        chosen = dict(tools)
        estimate = trec_peak_per_line * lines if trec_peak_per_line else 0
        if estimate > 0.8 * memory:
            print(f"  trec_eval left out: ~{estimate / 2**30:.1f} GiB estimated")
            del chosen["trec_eval 10.0"]
        if "recallbench (whole file)" in chosen and 80 * lines > 0.8 * memory:
            del chosen["recallbench (whole file)"]
        outputs = {name: args.data / f"out.{lines}.{i}" for i, name in enumerate(chosen)}
        # trec_eval takes minutes on the largest run: measured once there, with no warm-up
        # (recallbench's warm-ups have read the files into the page cache)
        once = {"trec_eval 10.0"} if lines >= LARGE else set()
        for name, (command, environment) in chosen.items():  # warm the page cache
            if name not in once:
                measure([*command, str(qrels), str(run)], outputs[name], environment)
        runs: dict[str, list[Measured]] = {name: [] for name in chosen}
        for repeat in range(args.repeats):
            for name, (command, environment) in chosen.items():
                if name in once and repeat:
                    continue
                runs[name].append(
                    measure([*command, str(qrels), str(run)], outputs[name], environment)
                )
        texts = {name: path.read_bytes() for name, path in outputs.items()}
        reference = texts.get("trec_eval 10.0", texts["recallbench (streamed)"])
        same = {name: text == reference for name, text in texts.items()}
        result: dict[str, Measured] = {
            name: (
                statistics.median(wall for wall, _, _ in m),
                statistics.median(cpu for _, cpu, _ in m),
                max(peak for _, _, peak in m),
            )
            for name, m in runs.items()
        }
        if "trec_eval 10.0" in result:
            trec_peak_per_line = result["trec_eval 10.0"][2] / lines
        for name, (wall, cpu, peak) in result.items():
            print(
                f"  {name:<26} {wall:8.2f} s {cpu:8.2f} s CPU {peak / 2**20:9.0f} MiB"
                f"  same: {same[name]}",
                flush=True,
            )
        rows.append((lines, result, same))
    body = table(rows)
    print(body)
    if not args.no_write:
        write_results(
            __file__,
            "recallbench evaluate at scale: streamed runs against trec_eval 10.0",
            None,
            host,
            body,
        )


def table(rows: list[tuple[int, dict[str, Measured], dict[str, bool]]]) -> str:
    """The Markdown table: each tool's times and peak, recallbench's ratios, the targets."""
    out = [
        "| run lines | tool | wall time | CPU time | peak RSS | output "
        "| wall / trec_eval's | CPU / trec_eval's | peak / trec_eval's |",
        "|---:|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    verdicts = []
    for lines, result, same in rows:
        trec = result.get("trec_eval 10.0")
        for name, (wall, cpu, peak) in result.items():
            ratios = ["", "", ""]
            if trec and name != "trec_eval 10.0":
                ratios = [f"{wall / trec[0]:.3f}", f"{cpu / trec[1]:.3f}", f"{peak / trec[2]:.3f}"]
            if name == "trec_eval 10.0":
                identical = "reference"
            elif trec:
                identical = "identical" if same[name] else "**differs**"
            else:
                identical = "identical to streamed" if same[name] else "**differs**"
            out.append(
                f"| {lines:,} | {name} | {wall:.2f} s | {cpu:.2f} s | {peak / 2**20:,.0f} MiB "
                f"| {identical} | {' | '.join(ratios)} |"
            )
        streamed = result["recallbench (streamed)"]
        if lines == 100_000_000:
            met = "met" if streamed[2] <= MEMORY_TARGET else "**not met**"
            verdicts.append(f"- peak ≤ 300 MiB at 100M lines: {streamed[2] / 2**20:.0f} MiB, {met}")
        if lines == 10_000_000 and trec:
            ratio = streamed[0] / trec[0]
            met = "met" if ratio <= TIME_TARGET else "**not met**"
            verdicts.append(
                f"- wall time ≤ 0.2x trec_eval's at 10M lines: {ratio:.3f}x, {met} "
                f"(CPU time: {streamed[1] / trec[1]:.3f}x)"
            )
    notes = (
        "\n\nEach query has 1,000 lines and 20 judgments; lines are 38 bytes; the output is "
        "trec_eval's official measures (the default). Wall time (median) includes Python's "
        "start (recallbench) and reading the files from the page cache; CPU time (median, "
        "user + system) is the steadier number on a shared machine. trec_eval runs once at "
        "100M lines. Both runs are over 256 MiB, so `recallbench evaluate` as it is "
        "streams them (recallbench (streamed)); the whole-file row forces the other path."
    )
    targets = "\n\nTargets:\n" + "\n".join(verdicts) if verdicts else ""
    return "\n".join(out) + notes + targets


if __name__ == "__main__":
    main()
