"""`recallbench bench`: several systems on several datasets, one leaderboard."""

from __future__ import annotations

import os
import platform
import shlex
from datetime import UTC, datetime
from pathlib import Path

import click

from recallbench import __version__
from recallbench.cli._errors import reports_errors
from recallbench.cli._options import (
    config_option,
    measures_option,
    out_option,
    quiet_option,
    systems_option,
    with_store_options,
)
from recallbench.cli._run import _record, _systems, make_console, record_history
from recallbench.core import ConfigError
from recallbench.datasets import load_dataset
from recallbench.gates import load_config
from recallbench.measures import parse_measures
from recallbench.report import build_report, write_outputs
from recallbench.report._bench import Board, write_bench
from recallbench.report._leaderboard import render_leaderboard, safe_name

BENCH_MEASURES = (
    "ndcg@10",
    "recall@10",
    "recall_any@5",
    "recall_all@5",
    "mrr@10",
    "false_surface",
)
BENCH_K = 20
BENCH_SYSTEMS = ("builtin-lexical", "builtin-dense", "builtin-hybrid")


@click.command(
    epilog="""\b
Examples:
  recallbench bench --dataset locomo:data/locomo10.json \\
      --dataset longmemeval-turns:data/longmemeval_oracle.json
  recallbench bench --dataset locomo:data/locomo10.json --system builtin-hybrid \\
      --system server-memory --out out/bench
\b
Each dataset runs against every system; each system's run and report go to
OUT/DATASET/SYSTEM/, the leaderboard of all to OUT/leaderboard.md and .json.
"""
)
@click.option(
    "--dataset",
    "dataset_specs",
    multiple=True,
    metavar="SPEC",
    help="Dataset (repeatable): FORMAT:PATH such as locomo:, longmemeval:, or a JSON file. "
    "Default: the configuration's datasets.",
)
@systems_option(f"System (repeatable). Default: {' '.join(BENCH_SYSTEMS)}.")
@measures_option(
    f"Measure (repeatable; the first orders the board). Default: {' '.join(BENCH_MEASURES)}."
)
@click.option(
    "--k",
    type=click.IntRange(min=1),
    help=f"Results requested per query. Default: the configuration's, else {BENCH_K}.",
)
@out_option("Folder of the runs, reports and leaderboards.", Path("out/bench"))
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="Send up to N queries at once to systems that take concurrent calls (see run).",
)
@config_option
@with_store_options
@quiet_option
@reports_errors
def bench(
    dataset_specs: tuple[str, ...],
    system_names: tuple[str, ...],
    measure_names: tuple[str, ...],
    k: int | None,
    out_dir: Path,
    concurrency: int,
    config_path: Path | None,
    store_url: str | None,
    no_store: bool,
    quiet: bool,
) -> None:
    """Run systems over datasets and write one leaderboard (per dataset and category)."""
    config = load_config(config_path).config
    dataset_specs = dataset_specs or tuple(config.datasets)
    if not dataset_specs:
        raise ConfigError("give --dataset (or list datasets in recallbench.toml)")
    measures = parse_measures(measure_names or config.measures or BENCH_MEASURES)
    names = list(dict.fromkeys(system_names or config.systems or BENCH_SYSTEMS))
    k = k or config.k or BENCH_K
    datasets = [load_dataset(spec) for spec in dataset_specs]  # all bad input before any run
    console = make_console(quiet)
    boards = []
    for dataset in datasets:
        reports = []
        for system in _systems(names, dataset, None, None, False):
            run = _record(dataset, system, k, console, concurrency=concurrency)
            report = build_report(dataset, run, measures)
            folder = out_dir / safe_name(dataset.name) / safe_name(system.name)
            write_outputs(folder, run, report, dataset)
            reports.append(report)
        board = Board(dataset, reports)
        render_leaderboard(board.standings, console)
        boards.append(board)
        if not no_store:
            record_history(reports, store_url, console)
    context = {
        "command": shlex.join(
            [
                "recallbench",
                "bench",
                *(f"--dataset={spec}" for spec in dataset_specs),
                *(f"--system={name}" for name in names),
                *(f"--measure={m}" for m in measures),
                f"--k={k}",
                *([f"--concurrency={concurrency}"] if concurrency > 1 else []),
                f"--out={out_dir}",
            ]
        ),
        "recallbench": __version__,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}",
    }
    written = write_bench(out_dir, boards, context)
    console.print("wrote " + ", ".join(str(path) for path in written))
