"""Whole-process speed and memory of `recallbench evaluate` against trec_eval's C code
(pytrec-eval-terrier), ranx and, when given, a built trec_eval binary.

Generates (once, deterministically) a TREC run of QUERIES x DEPTH lines with graded qrels,
then times each tool as its own process: parse both files, compute trec_eval's default
("official") measures, print or build the results. Each tool runs once unmeasured, then
REPEATS times, the tools taking turns (so drifting machine state hits them alike); reports
the median wall time, the peak resident memory of the process, and
recallbench's ratios. Put --data on a RAM disk (/dev/shm) to keep disk noise out.

    python benchmarks/evaluate_speed.py                      # 7,000 x 1,000 = 7M lines
    python benchmarks/evaluate_speed.py --queries 500 --trec-eval ~/trec_eval/trec_eval
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _generate import generate

PYTREC = """
import sys, pytrec_eval
qrels = pytrec_eval.parse_qrel(open(sys.argv[1]))
run = pytrec_eval.parse_run(open(sys.argv[2]))
measures = {"num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
            "recip_rank", "iprec_at_recall", "P"}
per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
names = next(iter(per_query.values())).keys()
for name in sorted(names):
    values = [q[name] for q in per_query.values()]
    print(name, pytrec_eval.compute_aggregated_measure(name, values))
"""

RANX = """
import sys
from ranx import Qrels, Run, evaluate
qrels = Qrels.from_file(sys.argv[1], kind="trec")
run = Run.from_file(sys.argv[2], kind="trec")
metrics = ["map", "mrr", "r-precision", "bpref", "precision@5", "precision@10",
           "precision@15", "precision@20", "precision@30", "precision@100", "precision@200",
           "precision@500", "precision@1000"]
print(evaluate(qrels, run, metrics))
"""


def measure(command: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one process."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    if status != 0:
        error = process.stderr.read().decode() if process.stderr else ""
        raise SystemExit(f"{command[:3]} failed ({status}): {error[-2000:]}")
    return elapsed, usage.ru_maxrss * 1024


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=7000)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "rb-bench")
    parser.add_argument("--trec-eval", type=Path, help="a built trec_eval binary to include")
    parser.add_argument("--skip", action="append", default=[], help="tool to leave out")
    args = parser.parse_args()
    qrels, run = generate(args.data, args.queries, args.depth)
    python = sys.executable
    tools = {
        "recallbench evaluate": [python, "-m", "recallbench", "evaluate", str(qrels), str(run)],
        "pytrec-eval-terrier": [python, "-c", PYTREC, str(qrels), str(run)],
        "ranx (numba cache warm)": [python, "-c", RANX, str(qrels), str(run)],
    }
    if args.trec_eval:
        tools["trec_eval"] = [str(args.trec_eval), str(qrels), str(run)]
    lines = args.queries * args.depth
    print(
        f"{lines:,} run lines ({args.queries} queries x {args.depth}), "
        f"{qrels.stat().st_size + run.stat().st_size:,} bytes; trec_eval's official measures "
        f"(ranx: the subset it has); median of {args.repeats} runs; "
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}"
    )
    chosen = {n: c for n, c in tools.items() if not any(skip in n for skip in args.skip)}
    for command in chosen.values():
        measure(command)  # one unmeasured run: warms caches (and ranx's numba cache)
    # rounds of one run per tool, so that every tool sees the same drift in machine state
    runs: dict[str, list[tuple[float, int]]] = {name: [] for name in chosen}
    for _ in range(args.repeats):
        for name, command in chosen.items():
            runs[name].append(measure(command))
    results: dict[str, tuple[float, int]] = {}
    for name, measured in runs.items():
        results[name] = (statistics.median(t for t, _ in measured), max(m for _, m in measured))
        wall, peak = results[name]
        print(f"{name:<26} {wall:8.2f} s {peak / 2**20:9.0f} MiB", flush=True)
    ours = results.get("recallbench evaluate")
    for name, (wall, peak) in results.items():
        if ours and name != "recallbench evaluate":
            print(f"recallbench / {name}: time {ours[0] / wall:.2f}x, memory {ours[1] / peak:.2f}x")


if __name__ == "__main__":
    main()
