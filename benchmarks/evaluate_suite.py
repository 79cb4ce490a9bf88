"""`recallbench evaluate` and the Python API beside pytrec_eval at every size, in one run.

Cases: the small file (1,000 queries x 100 documents, 50 judgments a query, 100k run
lines), ~1M lines (1,000 x 1,000) and ~7M lines (7,000 x 1,000, 200 judgments a query),
each with nearly distinct scores (4 decimals) and tie-heavy ones (100 distinct scores);
trec_eval's official measures. Every tool runs as its own fresh process: once unmeasured,
then REPEATS times, the tools taking turns; the median wall time and the largest peak
resident memory (the child's ru_maxrss) are reported with recallbench's ratios. The API
case builds ``{query: {doc: score}}`` dicts of the small case in a fresh process, then
times ndcg_cut.10 through ``recallbench.evaluate`` and ``pytrec_eval.RelevanceEvaluator``
(construction included): the first call, and the median of 5 more.

    python benchmarks/evaluate_suite.py --data /dev/shm/rb-suite
    python benchmarks/evaluate_suite.py --data /dev/shm/rb-suite --cores 0   # one core
    python benchmarks/evaluate_suite.py --skip 7M --trec-eval /tmp/trec_eval/trec_eval
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _generate import generate
from evaluate_speed import PYTREC

CASES = {  # name: (queries, depth, judged)
    "100k": (1000, 100, 50),
    "1M": (1000, 1000, 200),
    "7M": (7000, 1000, 200),
}

API = """
import json, statistics, sys, time
import numpy, pytrec_eval
qrels = pytrec_eval.parse_qrel(open(sys.argv[2]))
run = pytrec_eval.parse_run(open(sys.argv[3]))
if sys.argv[1] == "recallbench":
    import recallbench
    def call():
        return recallbench.evaluate(qrels, run, ["ndcg_cut.10"])
else:
    def call():
        return pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
times = []
for _ in range(6):
    start = time.perf_counter()
    call()
    times.append(time.perf_counter() - start)
print(json.dumps({"first": times[0], "then": statistics.median(times[1:])}))
"""


def machine() -> dict[str, object]:
    """What the numbers were measured on."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numpy
    import pyarrow
    import pytrec_eval

    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": model,
        "cores": os.cpu_count(),
        "cores_used": len(os.sched_getaffinity(0)),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "pyarrow": pyarrow.__version__,
        "pytrec_eval": pytrec_eval.__version__,
    }


def measure(command: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one process, read by /usr/bin/time: a child
    forked from this process would report this process's RSS at the fork when it is
    larger than its own (ru_maxrss survives exec)."""
    with tempfile.NamedTemporaryFile("r") as report:
        start = time.perf_counter()
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", report.name, *command],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        elapsed = time.perf_counter() - start
        if done.returncode:
            raise SystemExit(f"{command[:4]} failed: {done.stderr.decode()[-2000:]}")
        return elapsed, int(report.read().split()[-1]) * 1024


def files_case(
    name: str, data: Path, ties: bool, repeats: int, trec_eval: Path | None, prefix: list[str]
) -> dict[str, object]:
    queries, depth, judged = CASES[name]
    qrels, run = generate(data, queries, depth, judged=judged, ties=ties)
    python = sys.executable
    tools = {
        "recallbench": [python, "-m", "recallbench", "evaluate", str(qrels), str(run)],
        "pytrec_eval": [python, "-c", PYTREC, str(qrels), str(run)],
    }
    if trec_eval:
        tools["trec_eval"] = [str(trec_eval), str(qrels), str(run)]
    for command in tools.values():
        measure(prefix + command)  # warm-up: caches, page cache
    runs: dict[str, list[tuple[float, int]]] = {tool: [] for tool in tools}
    for _ in range(repeats):
        for tool, command in tools.items():
            runs[tool].append(measure(prefix + command))
    return {
        tool: {
            "seconds": statistics.median(t for t, _ in measured),
            "peak_mib": max(m for _, m in measured) / 2**20,
        }
        for tool, measured in runs.items()
    } | {"lines": queries * depth}


def api_case(data: Path, repeats: int, prefix: list[str]) -> dict[str, object]:
    queries, depth, judged = CASES["100k"]
    qrels, run = generate(data, queries, depth, judged=judged)
    out: dict[str, object] = {}
    for tool in ("recallbench", "pytrec_eval"):
        rounds = []
        for _ in range(repeats):
            command = [*prefix, sys.executable, "-c", API, tool, str(qrels), str(run)]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            rounds.append(json.loads(done.stdout))
        out[tool] = {
            "first": statistics.median(r["first"] for r in rounds),
            "then": statistics.median(r["then"] for r in rounds),
        }
    return out


def table(results: dict[str, object]) -> str:
    """The results as a Markdown table with recallbench's ratios."""
    rows = [
        "| case | recallbench | pytrec_eval | time ratio | memory ratio | trec_eval (C) |",
        "|---|---|---|---|---|---|",
    ]
    for case, value in results["files"].items():  # type: ignore[attr-defined]
        ours, theirs = value["recallbench"], value["pytrec_eval"]
        c = value.get("trec_eval")
        native = f"{c['seconds']:.2f} s / {c['peak_mib']:.0f} MiB" if c else "-"
        rows.append(
            f"| {case} ({value['lines']:,} lines) "
            f"| {ours['seconds']:.2f} s / {ours['peak_mib']:.0f} MiB "
            f"| {theirs['seconds']:.2f} s / {theirs['peak_mib']:.0f} MiB "
            f"| {ours['seconds'] / theirs['seconds']:.2f}x "
            f"| {ours['peak_mib'] / theirs['peak_mib']:.2f}x "
            f"| {native} |"
        )
    api = results.get("api")
    if api:
        ours, theirs = api["recallbench"], api["pytrec_eval"]  # type: ignore[index]
        rows.append(
            f"| API, dicts 1,000 x 100, ndcg_cut.10, first call "
            f"| {ours['first'] * 1000:.0f} ms | {theirs['first'] * 1000:.0f} ms "
            f"| {ours['first'] / theirs['first']:.2f}x | | |"
        )
        rows.append(
            f"| API, later calls (median of 5) "
            f"| {ours['then'] * 1000:.0f} ms | {theirs['then'] * 1000:.0f} ms "
            f"| {ours['then'] / theirs['then']:.2f}x | | |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=Path("/dev/shm/rb-suite"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip", action="append", default=[], help="case to leave out (7M)")
    parser.add_argument("--cores", help="taskset CPU list for every process (e.g. 0)")
    parser.add_argument("--trec-eval", type=Path, help="a built trec_eval binary to include")
    parser.add_argument("--out", type=Path, help="write the table and the numbers here (.md)")
    args = parser.parse_args()
    prefix = ["taskset", "-c", args.cores] if args.cores else []
    results: dict[str, object] = {"machine": machine(), "cores": args.cores or "all"}
    files: dict[str, object] = {}
    started = time.perf_counter()
    for name in CASES:
        if name in args.skip:
            continue
        for ties in (False, True):
            label = f"{name} {'tie-heavy' if ties else 'distinct'}"
            files[label] = files_case(name, args.data, ties, args.repeats, args.trec_eval, prefix)
            print(label, json.dumps(files[label]), flush=True)
    results["files"] = files
    if "api" not in args.skip:
        results["api"] = api_case(args.data, args.repeats, prefix)
    results["seconds"] = round(time.perf_counter() - started)
    text = table(results)
    print(json.dumps(results["machine"]))
    print(text)
    if args.out:
        args.out.write_text(
            f"# evaluate speed ({'cores ' + args.cores if args.cores else 'all cores'})\n\n"
            f"`python benchmarks/evaluate_suite.py {' '.join(sys.argv[1:])}`\n\n"
            f"Machine: `{json.dumps(results['machine'])}`\n\n{text}\n\n"
            f"```json\n{json.dumps(results, indent=1)}\n```\n"
        )


if __name__ == "__main__":
    main()
