"""`recallbench merge`: join the shards of a `run --shard I/N` or `bench --shard I/N` into
the reports, leaderboard and history entries the unsharded command writes."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

import click
from rich.console import Console

from recallbench.cli._console import make_console
from recallbench.cli._errors import reports_errors
from recallbench.cli._options import quiet_option, with_store_options
from recallbench.cli._run import _open_store, _record_in, run_report
from recallbench.cli._run_io import staged, writable_folder
from recallbench.core import ConfigError, Dataset, Run
from recallbench.datasets import load_dataset
from recallbench.measures import Measure, Rules, parse_measure
from recallbench.report import Report, build_report
from recallbench.runner import EXIT_SYSTEM_FAILED, raise_for_failures
from recallbench.runner._merge import join_runs, read_shards
from recallbench.runner._shard import ShardManifest


@click.command(
    epilog="""\b
Examples:
  recallbench run --shard 1/2 --out out/shard-1   # on one machine
  recallbench run --shard 2/2 --out out/shard-2   # on another
  recallbench merge out/merged out/shard-1 out/shard-2
  recallbench merge out/bench shards/*/ --dataset locomo:/data/locomo10.json
  recallbench merge out/merged out/shard-* --no-store --strict

\b
The shards must be the N shards of one command (`run` or `bench` with the same
datasets, systems, k, measures and N), each given once; the dataset is loaded again
from where the shards were given it (--dataset to load it from elsewhere; it must have
the same fingerprint). Every file is written at once: on bad input (exit 2) nothing.

\b
Exit codes: 0 merged; 2 bad input (shards that do not belong together, a missing or
  repeated shard, a dataset that changed); 3 a system failed (as run says; the reports
  are written first).
"""
)
@click.argument("out_dir", metavar="OUT", type=click.Path(file_okay=False, path_type=Path))
@click.argument(
    "shard_dirs",
    metavar="SHARD_DIR...",
    nargs=-1,
    required=True,
    type=click.Path(path_type=Path),
)
@click.option(
    "--dataset",
    "dataset_specs",
    multiple=True,
    metavar="SPEC",
    help="Load a dataset from SPEC instead of the spec the shards recorded (repeatable; "
    "matched to the shards' datasets by fingerprint).",
)
@click.option(
    "--strict",
    is_flag=True,
    help=f"Exit {EXIT_SYSTEM_FAILED} when any query failed (without it, only when every query "
    "of a system failed).",
)
@with_store_options
@quiet_option
@reports_errors
def merge(
    out_dir: Path,
    shard_dirs: tuple[Path, ...],
    dataset_specs: tuple[str, ...],
    strict: bool,
    store_url: str | None,
    no_store: bool,
    quiet: bool,
) -> None:
    """Merge the shard folders of a sharded run or bench into OUT: the same report.json,
    report.md, leaderboard and history entry as the unsharded command."""
    if store_url is not None and no_store:
        raise ConfigError("--store and --no-store exclude each other")
    shards = read_shards(list(shard_dirs))
    manifest = shards[0].manifest
    datasets = _datasets(manifest, dataset_specs)
    measures = [parse_measure(name) for name in manifest.measures]
    runs = [
        [join_runs(dataset, position, system, shards)[0] for system in manifest.systems]
        for position, dataset in enumerate(datasets)
    ]
    writable_folder(out_dir, "OUT")
    console = make_console(quiet)
    with contextlib.ExitStack() as stack:
        # opened first: a bad store URL is refused before anything is written
        store = None if no_store else stack.enter_context(_open_store(store_url))
        if manifest.command == "run":
            reports = _merge_run(out_dir, manifest, datasets[0], runs[0], measures, console)
        else:
            reports = _merge_bench(out_dir, manifest, datasets, runs, measures, console)
        if store is not None:
            for dataset_reports, folders in reports:
                _record_in(store, dataset_reports, console, folders)
    if manifest.command == "run":  # as run's exit code; bench lists failed systems instead
        raise_for_failures([run for dataset_runs in runs for run in dataset_runs], strict)


def _datasets(manifest: ShardManifest, specs: Sequence[str]) -> list[Dataset]:
    """The shards' datasets, loaded from --dataset (by fingerprint) or the recorded specs;
    a dataset that changed since the shards ran is refused."""
    given: dict[str, tuple[str, Dataset]] = {}
    for spec in specs:
        dataset = load_dataset(spec)
        given[dataset.sha256] = (spec, dataset)
    ran = {entry.ref.sha256: entry.ref for entry in manifest.datasets}
    for sha, (spec, dataset) in given.items():
        if sha not in ran:
            shown = ", ".join(f"{ref.name} ({key[:12]})" for key, ref in ran.items())
            raise ConfigError(
                f"--dataset {spec}: {dataset.name} ({sha[:12]}) is not a dataset the shards "
                f"ran on: {shown} (name and content must be the same)"
            )
    found = []
    for entry in manifest.datasets:
        if entry.ref.sha256 in given:
            found.append(given[entry.ref.sha256][1])
            continue
        dataset = load_dataset(entry.spec)
        if dataset.sha256 != entry.ref.sha256:
            raise ConfigError(
                f"dataset {entry.spec}: its fingerprint is {dataset.sha256[:12]}, the "
                f"shards ran on {entry.ref.sha256[:12]} ({entry.ref.name}): it changed "
                "since (give the one they ran on with --dataset)"
            )
        found.append(dataset)
    return found


Written = list[tuple[list[Report], list[Path]]]
"""Per dataset, its reports and the folders they were written to (for the history)."""


def _merge_run(
    out_dir: Path,
    manifest: ShardManifest,
    dataset: Dataset,
    runs: list[Run],
    measures: Sequence[Measure],
    console: Console,
) -> Written:
    from recallbench.render import render_terminal, write_outputs
    from recallbench.render._leaderboard import render_leaderboard, write_leaderboard
    from recallbench.report._leaderboard import standings

    rules = Rules(relevance_threshold=dataset.relevance_threshold, equivalence=manifest.equivalence)
    source = manifest.measures_source or ""
    reports = [run_report(dataset, run, measures, rules, source) for run in runs]
    folders = [manifest.folders[run.spec.system] for run in runs]
    with staged(out_dir, "OUT") as stage:
        for run, report, folder in zip(runs, reports, folders, strict=True):
            write_outputs(stage / folder, run, report, dataset)
        board = standings(reports) if len(reports) > 1 else None
        if board is not None:
            write_leaderboard(stage, board)
    for report in reports:
        render_terminal(report, console)
    if board is not None:
        render_leaderboard(board, console)
    _wrote(console, out_dir, len(reports))
    return [(reports, [out_dir / folder for folder in folders])]


def _merge_bench(
    out_dir: Path,
    manifest: ShardManifest,
    datasets: list[Dataset],
    runs: list[list[Run]],
    measures: Sequence[Measure],
    console: Console,
) -> Written:
    from recallbench.cli._bench import _context
    from recallbench.render import write_outputs
    from recallbench.render._bench import write_bench
    from recallbench.render._leaderboard import render_leaderboard
    from recallbench.report._bench import Board

    written: Written = []
    boards = []
    with staged(out_dir, "OUT") as stage:
        for dataset, entry, dataset_runs in zip(datasets, manifest.datasets, runs, strict=True):
            reports, folders = [], []
            for run in dataset_runs:
                report = build_report(dataset, run, measures)
                folder = Path(entry.folder) / manifest.folders[run.spec.system]
                write_outputs(stage / folder, run, report, dataset)
                reports.append(report)
                folders.append(out_dir / folder)
            boards.append(Board(dataset, reports))
            written.append((reports, folders))
        write_bench(stage, boards, _context([*manifest.arguments, f"--out={out_dir}"]))
    for board in boards:
        render_leaderboard(board.standings, console)
    _wrote(console, out_dir, sum(len(r) for r, _ in written))
    return written


def _wrote(console: Console, out_dir: Path, reports: int) -> None:
    console.print(
        f"merged {reports} report{'s' if reports > 1 else ''} into {out_dir}", highlight=False
    )
