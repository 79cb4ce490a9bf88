"""`recallbench evaluate` and the Python API beside pytrec_eval at every size, in one run.

Cases: the small file (1,000 queries x 100 documents, 50 judgments a query, 100k run
lines), ~1M lines (1,000 x 1,000) and, with --with-7M, ~7M lines (7,000 x 1,000, 200
judgments a query), each with nearly distinct scores (4 decimals) and tie-heavy ones (100
distinct scores); trec_eval's official measures. Each case runs on every core set given
(default: both cores, then one, pinned with taskset). Every tool runs as its own fresh
process: once unmeasured, then REPEATS times, the tools taking turns; the median wall time
and the largest peak resident memory are reported with recallbench's ratios and the issue's
targets (time <= 1/4 and memory <= 1/2 of pytrec_eval's from 100k lines up; the small file
<= 0.15 s). recallbench runs as ``python -m recallbench`` and, on the small file, also as
the installed ``recallbench`` script (which imports the click command line first).

The API case builds ``{query: {doc: score}}`` dicts of the small case in a fresh process,
then times ndcg_cut.10 through ``recallbench.evaluate`` and
``pytrec_eval.RelevanceEvaluator`` (construction included): the first call (recallbench's
imports included), and the median of 5 more; target: half of pytrec_eval's time.

Children write and reuse compiled bytecode in a cache of their own
(PYTHONPYCACHEPREFIX), as an installed package does, even where the calling shell sets
PYTHONDONTWRITEBYTECODE (compiling every module each time cost ~40 ms a process here).

    python benchmarks/evaluate_suite.py --data /dev/shm/rb-suite
    python benchmarks/evaluate_suite.py --cores 0 --with-7M --trec-eval /tmp/te/trec_eval
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _generate import generate
from _machine import machine as describe_machine
from evaluate_speed import PYTREC

CASES = {  # name: (queries, depth, judged)
    "100k": (1000, 100, 50),
    "1M": (1000, 1000, 200),
    "7M": (7000, 1000, 200),
}
TIME_TARGET = 0.25
"""recallbench's whole-process time over pytrec_eval's, at most (from 100k lines up)."""
MEMORY_TARGET = 0.5
SMALL_TARGET = 0.15
"""Seconds for the small file (1,000 queries x 100 documents), whole process."""
API_TARGET = 0.5
SCRIPT = Path(sys.executable).with_name("recallbench")

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
    import numpy
    import pytrec_eval

    return describe_machine(
        cores_used=len(os.sched_getaffinity(0)),
        numpy=numpy.__version__,
        pytrec_eval=pytrec_eval.__version__,
    )


def child_environment() -> dict[str, str]:
    """The environment of every measured process: bytecode cached as when installed."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "evaluate-suite-pycache")
    return env


ENV = child_environment()


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
            env=ENV,
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
    if name == "100k" and SCRIPT.exists():
        tools["recallbench script"] = [str(SCRIPT), "evaluate", str(qrels), str(run)]
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
            done = subprocess.run(command, capture_output=True, text=True, check=True, env=ENV)
            rounds.append(json.loads(done.stdout))
        out[tool] = {
            "first": statistics.median(r["first"] for r in rounds),
            "then": statistics.median(r["then"] for r in rounds),
        }
    return out


def _mark(met: bool) -> str:
    return "met" if met else "NOT met"


def table(results: dict[str, Any]) -> str:
    """The results as a Markdown table with recallbench's ratios and the targets."""
    rows = [
        "| cores | case | recallbench | pytrec_eval | time ratio | memory ratio "
        "| trec_eval (C) | targets |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for cores, measured in results["runs"].items():
        for case, value in measured["files"].items():
            ours, theirs = value["recallbench"], value["pytrec_eval"]
            c = value.get("trec_eval")
            native = f"{c['seconds']:.2f} s / {c['peak_mib']:.0f} MiB" if c else "-"
            time_ratio = ours["seconds"] / theirs["seconds"]
            memory_ratio = ours["peak_mib"] / theirs["peak_mib"]
            marks = [
                f"time {_mark(time_ratio <= TIME_TARGET)}",
                f"memory {_mark(memory_ratio <= MEMORY_TARGET)}",
            ]
            if case.startswith("100k"):
                marks.append(f"<= {SMALL_TARGET} s {_mark(ours['seconds'] <= SMALL_TARGET)}")
            script = value.get("recallbench script")
            shown = f"{ours['seconds']:.3f} s / {ours['peak_mib']:.0f} MiB"
            if script:
                shown += f" (script {script['seconds']:.3f} s)"
                marks.append(
                    f"script <= {SMALL_TARGET} s {_mark(script['seconds'] <= SMALL_TARGET)}"
                )
            rows.append(
                f"| {cores} | {case} ({value['lines']:,} lines) | {shown} "
                f"| {theirs['seconds']:.3f} s / {theirs['peak_mib']:.0f} MiB "
                f"| {time_ratio:.2f}x | {memory_ratio:.2f}x | {native} | {'; '.join(marks)} |"
            )
        api = measured.get("api")
        if api:
            ours, theirs = api["recallbench"], api["pytrec_eval"]
            for label, key in (("first call", "first"), ("later calls (median of 5)", "then")):
                ratio = ours[key] / theirs[key]
                rows.append(
                    f"| {cores} | API, dicts 1,000 x 100, ndcg_cut.10, {label} "
                    f"| {ours[key] * 1000:.1f} ms | {theirs[key] * 1000:.1f} ms "
                    f"| {ratio:.2f}x | | | time {_mark(ratio <= API_TARGET)} |"
                )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=Path("/dev/shm/rb-suite"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip", action="append", default=[], help="case to leave out (1M, api)")
    parser.add_argument("--with-7M", dest="with_7m", action="store_true", help="add ~7M lines")
    parser.add_argument(
        "--cores",
        action="append",
        help="taskset CPU list (repeatable; default: 0,1 then 0; 'all' for no pinning)",
    )
    parser.add_argument("--trec-eval", type=Path, help="a built trec_eval binary to include")
    parser.add_argument("--out", type=Path, help="write the table and the numbers here (.md)")
    args = parser.parse_args()
    skipped = set(args.skip) | (set() if args.with_7m else {"7M"})
    core_sets = args.cores or ["0,1", "0"]
    results: dict[str, Any] = {"machine": machine(), "runs": {}}
    started = time.perf_counter()
    for cores in core_sets:
        prefix = [] if cores == "all" else ["taskset", "-c", cores]
        label_cores = "all" if cores == "all" else f"{len(cores.split(','))} ({cores})"
        files: dict[str, object] = {}
        for name in CASES:
            if name in skipped:
                continue
            for ties in (False, True):
                label = f"{name} {'tie-heavy' if ties else 'distinct'}"
                files[label] = files_case(
                    name, args.data, ties, args.repeats, args.trec_eval, prefix
                )
                print(cores, label, json.dumps(files[label]), flush=True)
        run: dict[str, object] = {"files": files}
        if "api" not in skipped:
            run["api"] = api_case(args.data, max(args.repeats, 5), prefix)
            print(cores, "api", json.dumps(run["api"]), flush=True)
        results["runs"][label_cores] = run
    results["seconds"] = round(time.perf_counter() - started)
    text = table(results)
    print(json.dumps(results["machine"]))
    print(text)
    if args.out:
        args.out.write_text(
            "# evaluate speed\n\n"
            f"`python benchmarks/evaluate_suite.py {' '.join(sys.argv[1:])}`\n\n"
            f"Machine: `{json.dumps(results['machine'])}`\n\n"
            "Shared machine: compare the ratios (measured in the same run, tools taking "
            "turns, medians), not absolute times across runs.\n\n"
            f"{text}\n\n"
            f"```json\n{json.dumps(results, indent=1)}\n```\n"
        )


if __name__ == "__main__":
    main()
