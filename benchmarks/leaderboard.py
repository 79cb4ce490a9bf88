"""The memory-benchmark leaderboard: builtin systems and real MCP memory servers on
LoCoMo (turns) and LongMemEval (oracle, turns; S sample, sessions).

    python benchmarks/leaderboard.py                       # data from ../shared/data
    python benchmarks/leaderboard.py --data ~/datasets --out out/leaderboard

--data is a folder holding locomo/locomo10.json and longmemeval/longmemeval_oracle.json,
longmemeval/longmemeval_s_sample28.json (or the full longmemeval_s file, renamed). The MCP
servers are installed first (`recallbench systems install`, npm and PyPI). Each system's
runs and reports go to --out; the leaderboard (with the machine and the exact command) is
copied to benchmarks/results/leaderboard.md and .json. Run it from the repository root.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ["builtin-lexical", "builtin-dense", "builtin-hybrid", "agentrecall", "server-memory"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=Path("out/leaderboard"))
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--system", action="append", help="system (repeatable)")
    args = parser.parse_args()
    systems = args.system or SYSTEMS
    recallbench = [sys.executable, "-m", "recallbench"]
    servers = [name for name in systems if not name.startswith("builtin")]
    for server in servers:
        subprocess.run([*recallbench, "systems", "install", server], check=True)
    data = args.data
    datasets = [
        f"locomo:{data / 'locomo' / 'locomo10.json'}",
        f"longmemeval-turns:{data / 'longmemeval' / 'longmemeval_oracle.json'}",
        f"longmemeval:{data / 'longmemeval' / 'longmemeval_s_sample28.json'}",
    ]
    command = [*recallbench, "bench", "--out", str(args.out)]
    command += [part for spec in datasets for part in ("--dataset", spec)]
    command += [part for name in systems for part in ("--system", name)]
    subprocess.run(command, check=True)
    args.results.mkdir(parents=True, exist_ok=True)
    for name in ("leaderboard.md", "leaderboard.json"):  # each system's runs stay in --out
        shutil.copyfile(args.out / name, args.results / name)
    print(f"copied the leaderboard to {args.results}")


if __name__ == "__main__":
    main()
