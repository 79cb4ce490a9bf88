"""The memory-benchmark leaderboards: builtin systems and real MCP memory servers on
LoCoMo (turns) and LongMemEval (oracle, turns; S sample, sessions), and a second board on
session-level LongMemEval (oracle and S sample, a session per memory) that adds
basic-memory, whose notes take ~0.3 s each to write: the turn-level datasets (16,800 notes)
would take it about 1.5 hours, the session-level ones ~20 minutes with one server emptied
between units (its profile's [reset]) instead of 528 server starts.

    python benchmarks/leaderboard.py                       # data from ../shared/data
    python benchmarks/leaderboard.py --data ~/datasets --out out/leaderboard

--data is a folder holding locomo/locomo10.json and longmemeval/longmemeval_oracle.json,
longmemeval/longmemeval_s_sample28.json (or the full longmemeval_s file, renamed). The MCP
servers are installed first (`recallbench systems install`, npm and PyPI). Each system's
runs and reports go to --out; the leaderboard (with the machine and the exact command) is
copied to benchmarks/results/leaderboard.md and .json (and leaderboard_sessions.md, .json).
Run it from the repository root; --board picks one board. `--board lme-turns` runs
LongMemEval oracle at turn level under both protocols: user turns only (upstream's
run_retrieval.py, `longmemeval-turns`) and user and assistant turns
(`longmemeval-all-turns`), into leaderboard_longmemeval_turns.md and .json.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ["builtin-lexical", "builtin-dense", "builtin-hybrid", "agentrecall", "server-memory"]
SESSION_SYSTEMS = [*SYSTEMS, "basic-memory"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=Path("out/leaderboard"))
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--system", action="append", help="system (repeatable)")
    parser.add_argument("--board", choices=["turns", "lme-turns", "sessions"], action="append")
    args = parser.parse_args()
    data = args.data
    lme = data / "longmemeval"
    boards = {
        "turns": (
            "leaderboard",
            [
                f"locomo:{data / 'locomo' / 'locomo10.json'}",
                f"longmemeval-turns:{lme / 'longmemeval_oracle.json'}",
                f"longmemeval:{lme / 'longmemeval_s_sample28.json'}",
            ],
            args.system or SYSTEMS,
        ),
        "lme-turns": (  # LongMemEval's two turn protocols side by side
            "leaderboard_longmemeval_turns",
            [
                f"longmemeval-turns:{lme / 'longmemeval_oracle.json'}",
                f"longmemeval-all-turns:{lme / 'longmemeval_oracle.json'}",
            ],
            args.system or SYSTEMS,
        ),
        "sessions": (
            "leaderboard_sessions",
            [
                f"longmemeval:{lme / 'longmemeval_oracle.json'}",
                f"longmemeval:{lme / 'longmemeval_s_sample28.json'}",
            ],
            args.system or SESSION_SYSTEMS,
        ),
    }
    recallbench = [sys.executable, "-m", "recallbench"]
    chosen = [boards[name] for name in args.board or ("turns", "sessions")]
    servers = {
        name for _, _, systems in chosen for name in systems if not name.startswith("builtin")
    }
    for server in sorted(servers):
        subprocess.run([*recallbench, "systems", "install", server], check=True)
    args.results.mkdir(parents=True, exist_ok=True)
    for stem, datasets, systems in chosen:
        out = args.out / stem
        command = [*recallbench, "bench", "--out", str(out)]
        command += [part for spec in datasets for part in ("--dataset", spec)]
        command += [part for name in systems for part in ("--system", name)]
        subprocess.run(command, check=True)
        for suffix in (".md", ".json"):  # each system's runs stay in --out
            shutil.copyfile(out / f"leaderboard{suffix}", args.results / f"{stem}{suffix}")
        print(f"copied {stem} to {args.results}")


if __name__ == "__main__":
    main()
