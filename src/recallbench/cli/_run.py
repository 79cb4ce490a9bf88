"""`recallbench run`: evaluate a system on a dataset."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from recallbench.cli._console import make_console, show_progress
from recallbench.cli._errors import reports_errors
from recallbench.cli._measure_choice import choose_measures
from recallbench.cli._options import (
    config_option,
    measures_option,
    out_option,
    quiet_option,
    systems_option,
    with_store_options,
)
from recallbench.cli._run_io import distinct_folders, writable_folder, written
from recallbench.cli._types import FiniteFloat
from recallbench.core import ConfigError, Dataset, Query, Run
from recallbench.core._files import atomic_write_texts
from recallbench.datasets import DEFAULT_DATASET, load_dataset
from recallbench.gates import load_config
from recallbench.measures import DEFAULT_MEASURES, Measure, Rules, parse_measure
from recallbench.render import render_terminal, write_outputs
from recallbench.render._leaderboard import render_leaderboard, write_leaderboard
from recallbench.report import Report, build_report, measure_session_lift
from recallbench.report._leaderboard import standings
from recallbench.report._session import DEFAULT_LIFT_MEASURE
from recallbench.runner import DEFAULT_RESTARTS, EXIT_SYSTEM_FAILED, raise_for_failures, run_dataset
from recallbench.runner._shard import (
    SHARD_FILE,
    Shard,
    ShardDataset,
    ShardManifest,
    identity,
    shard_queries,
)
from recallbench.systems import DEFAULT_SYSTEM, SystemUnderTest, create_system
from recallbench.systems._command import TIMEOUT as COMMAND_TIMEOUT
from recallbench.systems._folder import folder_for
from recallbench.systems._replay import RecordingSystem, ReplaySystem, recording_path

if TYPE_CHECKING:
    from recallbench.store import Store

DEFAULT_K = 100


@click.command(
    epilog="""\b
Examples:
  recallbench run
  recallbench run --dataset my-golden.json --k 20 -m ndcg@10 -m recall@20
  recallbench run --dataset beir:data/scifact --out out/scifact
  recallbench run --dataset locomo:data/locomo10.json --k 20 -m recall_all@5
  recallbench run --system builtin-lexical --system builtin-hybrid --system server-memory
  recallbench run --system server-memory --record rec/
  recallbench run --system server-memory --replay rec/ --strict
  recallbench run --system python:my_reranker:make --repeat 3
  recallbench run --system builtin-lexical --session-lift
  recallbench run --equivalence -m must_surface@5 -m iw_recall@10 -m cold_start_ratio@10
  recallbench run --system command:./my-retriever --timeout 10 --restarts 5 --strict
  recallbench run --dataset locomo:data/locomo10.json --shard 2/4 --out out/shard-2
  recallbench merge out/merged out/shard-1 out/shard-2 out/shard-3 out/shard-4

\b
With --shard I/N the run asks only shard I of N of the dataset (whole conversations or
sessions, the same split on every machine), writes its run.json files and shard.json to
--out and records no history; `recallbench merge` joins the N folders into the reports,
leaderboard and history entry of the unsharded run.

\b
Exit codes: 0 the run was measured (failed queries are counted and score 0);
  2 bad input or usage; 3 the system failed: every query of a system failed, or, with
  --strict, any query did (the reports are written first); 130 interrupted.
"""
)
@click.option(
    "--dataset",
    "dataset_spec",
    help="Bundled dataset name, a dataset JSON file, or FORMAT:PATH (see datasets formats). "
    f"Default: the configuration's, else {DEFAULT_DATASET}.",
)
@systems_option(
    f"System under test (repeatable: a leaderboard of several). Default: {DEFAULT_SYSTEM}."
)
@click.option(
    "--k",
    type=click.IntRange(min=1),
    help=f"Results requested per query. Default: the configuration's, else {DEFAULT_K}.",
)
@out_option("Folder for run.json, report.json and report.md.", Path("out"))
@measures_option(
    "Measure to report (repeatable; the first ranks a leaderboard). Default: the "
    "configuration's, else the dataset's own (metadata.default_measures), else "
    f"{' '.join(DEFAULT_MEASURES)}. `recallbench measures` lists them all."
)
@click.option(
    "--record",
    "record_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep every answer under DIR, keyed by system and dataset fingerprint.",
)
@click.option(
    "--replay",
    "replay_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Score answers recorded under DIR instead of running the systems.",
)
@click.option(
    "--strict",
    is_flag=True,
    help=f"Exit {EXIT_SYSTEM_FAILED} when any query failed (without it, only when every query "
    "of a system failed); with --replay, also refuse to run (exit 2) when any query has no "
    "recorded answer.",
)
@click.option(
    "--timeout",
    type=FiniteFloat(min=0, min_open=True),
    metavar="SECONDS",
    help="Seconds each call to a system's process or endpoint may take. Default: the "
    "profile's (MCP [server] call_timeout, HTTP [http] timeout), else "
    f"{COMMAND_TIMEOUT:g} for command: systems.",
)
@click.option(
    "--restarts",
    type=click.IntRange(min=0),
    default=DEFAULT_RESTARTS,
    show_default=True,
    help="Restart a system's process that hung or died (its corpus ingested again) at most "
    "N times per run; the report counts the restarts.",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Ask each query N times in a row and report how often the ranking changed "
    "(stability of non-deterministic systems); the first answer is the one scored.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="Send up to N queries at once to systems that take concurrent calls (HTTP, async "
    "python: retrievers, MCP servers whose profile sets [server] concurrency); results are "
    "those of a sequential run, in the same order.",
)
@click.option(
    "--session-lift",
    is_flag=True,
    help="Also run each system that accepts sessions with every query asked alone, and "
    "report the lift its session context brings (paired, with interval and test).",
)
@click.option(
    "--session-lift-measure",
    default=DEFAULT_LIFT_MEASURE,
    show_default=True,
    help="The measure of --session-lift.",
)
@click.option(
    "--equivalence",
    is_flag=True,
    help="Apply the dataset's equivalence classes: interchangeable memories count once.",
)
@click.option(
    "--keep", is_flag=True, help="Keep each server's store (its temporary directory) after the run."
)
@click.option(
    "--shard",
    "shard_text",
    metavar="I/N",
    help="Run shard I of N (1-based) of the dataset only, for `recallbench merge`; whole "
    "units (conversations, sessions) stay in one shard.",
)
@config_option
@with_store_options
@quiet_option
@reports_errors
def run(
    dataset_spec: str | None,
    system_names: tuple[str, ...],
    k: int | None,
    out_dir: Path,
    measure_names: tuple[str, ...],
    record_dir: Path | None,
    replay_dir: Path | None,
    strict: bool,
    timeout: float | None,
    restarts: int,
    repeat: int,
    concurrency: int,
    session_lift: bool,
    session_lift_measure: str,
    equivalence: bool,
    keep: bool,
    shard_text: str | None,
    config_path: Path | None,
    store_url: str | None,
    no_store: bool,
    quiet: bool,
) -> None:
    """Run every query of a dataset against one or more systems and report the measures.

    Each report is also recorded in the history store (for `recallbench history` and the
    rolling baseline of `recallbench gate`), unless --no-store.
    """
    if repeat > 1 and replay_dir is not None:
        raise ConfigError("--repeat measures the live system; it cannot be combined with --replay")
    if store_url is not None and no_store:
        raise ConfigError("--store and --no-store exclude each other")
    shard = Shard.parse(shard_text) if shard_text is not None else None
    if shard is not None and session_lift:
        raise ConfigError(
            "--session-lift is not sharded (it asks every query again alone): run it unsharded"
        )
    config = load_config(config_path).config
    dataset = load_dataset(dataset_spec or _one_dataset(config.datasets))
    measures, measures_source = choose_measures(measure_names, config.measures or (), dataset)
    names = list(dict.fromkeys(system_names or config.systems or (DEFAULT_SYSTEM,)))
    k = k or config.k or DEFAULT_K
    lift_measure = parse_measure(session_lift_measure) if session_lift else None
    if equivalence and not dataset.equivalence:
        raise ConfigError(f"--equivalence: {dataset.name} has no equivalence classes")
    rules = Rules(relevance_threshold=dataset.relevance_threshold, equivalence=equivalence)
    part = shard_queries(dataset, shard) if shard is not None else None
    systems = _systems(names, dataset, record_dir, replay_dir, strict, keep, timeout, part)
    distinct_folders(((s.name, s.name) for s in systems), folder_for, out_dir, "systems")
    folders = {s.name: out_dir / folder_for(s.name) for s in systems} if len(systems) > 1 else {}
    writable_folder(out_dir, "--out")
    if record_dir is not None:
        writable_folder(record_dir, "--record")
    console = make_console(quiet)
    console.print(f"measures: {measures_source}", highlight=False)
    if shard is not None and part is not None:
        manifest = ShardManifest(
            command="run",
            shard=identity(shard),
            k=k,
            measures=[str(m) for m in measures],
            measures_source=measures_source,
            equivalence=equivalence,
            systems=[s.name for s in systems],
            folders={s.name: folder_for(s.name) if folders else "" for s in systems},
            datasets=[
                ShardDataset(
                    spec=dataset_spec or _one_dataset(config.datasets),
                    ref=dataset.ref,
                    folder="",
                    queries=[q.id for q in part],
                )
            ],
        )
        runs = [
            _record(
                dataset,
                system,
                k,
                console,
                repeat,
                restarts=restarts,
                concurrency=concurrency,
                only=manifest.datasets[0].queries,
            )
            for system in systems
        ]
        write_shard(out_dir, manifest, {"": runs}, console)
        raise_for_failures(runs, strict)  # each shard fails as the run would
        return
    with contextlib.ExitStack() as stack:
        # opened now: a bad store URL is refused before the run, not after it
        store = None if no_store else stack.enter_context(_open_store(store_url))
        reports, runs, folders_written = [], [], []
        for system in systems:
            recorded = _record(
                dataset, system, k, console, repeat, restarts=restarts, concurrency=concurrency
            )
            report = run_report(dataset, recorded, measures, rules, measures_source)
            if lift_measure is not None:
                report = _with_session_lift(
                    report, dataset, system, recorded, k, console, lift_measure, rules, concurrency
                )
            folder = folders.get(system.name, out_dir)
            try:
                paths = write_outputs(folder, recorded, report, dataset)
            except OSError as error:
                raise written("--out", folder, error) from None
            render_terminal(report, console)
            console.print("wrote " + ", ".join(str(path) for path in paths))
            reports.append(report)
            runs.append(recorded)
            folders_written.append(folder)
        if store is not None:
            _record_in(store, reports, console, folders_written)
    if len(reports) > 1:
        board = standings(reports)
        render_leaderboard(board, console)
        console.print("wrote " + ", ".join(str(p) for p in write_leaderboard(out_dir, board)))
    raise_for_failures(runs, strict)


def run_report(
    dataset: Dataset, run: Run, measures: Sequence[Measure], rules: Rules, measures_source: str
) -> Report:
    """The report of `run` (and of `merge`, which must write the same bytes)."""
    report = build_report(dataset, run, measures, rules)
    return report.model_copy(update={"rules": {**report.rules, "measures": measures_source}})


def write_shard(
    out_dir: Path, manifest: ShardManifest, runs: dict[str, list[Run]], console: Console
) -> None:
    """A shard's files, all at once: each run's run.json (under its dataset's folder,
    ``runs``' key, and its system's) and shard.json, which `recallbench merge` reads."""
    files = {
        out_dir / folder / manifest.folders[run.spec.system] / "run.json": run.model_dump_json(
            indent=2
        )
        + "\n"
        for folder, dataset_runs in runs.items()
        for run in dataset_runs
    }
    files[out_dir / SHARD_FILE] = manifest.model_dump_json(indent=2) + "\n"
    try:
        atomic_write_texts(files)
    except OSError as error:
        raise written("--out", out_dir, error) from None
    asked = sum(len(d.queries) for d in manifest.datasets)
    console.print(
        f"shard {manifest.shard.index}/{manifest.shard.count}: {asked} queries; wrote "
        + ", ".join(str(path) for path in files)
        + " (no history: `recallbench merge` records the whole run)",
        highlight=False,
    )


def _one_dataset(configured: list[str]) -> str:
    if len(configured) > 1:
        raise ConfigError(
            f"the configuration lists {len(configured)} datasets: give --dataset, or run them "
            "all with `recallbench bench`"
        )
    return configured[0] if configured else DEFAULT_DATASET


def _open_store(store_url: str | None) -> Store:
    from recallbench.store import open_store

    return open_store(store_url)


def record_history(
    reports: list[Report],
    store_url: str | None,
    console: Console,
    folders: Sequence[Path] | None = None,
) -> None:
    """Every report into the history store, each run with its id (and the folder its
    run files were written to, so the dashboard reaches every query's ranking)."""
    with _open_store(store_url) as store:
        _record_in(store, reports, console, folders)


def _record_in(
    store: Store, reports: list[Report], console: Console, folders: Sequence[Path] | None = None
) -> None:
    from recallbench.report._run_statistics import record_run

    sources = [str(f.resolve()) for f in folders] if folders else [None] * len(reports)
    ids = [  # each with its statistics, which `history` then reads rather than computes
        record_run(store, report, source=source).id
        for report, source in zip(reports, sources, strict=True)
    ]
    console.print(
        f"recorded run{'s' if len(ids) > 1 else ''} "
        + ", ".join(f"#{i}" for i in ids)
        + f" in {store.url}",
        highlight=False,
    )


def _systems(
    names: list[str],
    dataset: Dataset,
    record_dir: Path | None,
    replay_dir: Path | None,
    strict: bool,
    keep: bool = False,
    timeout: float | None = None,
    asked: Sequence[Query] | None = None,
) -> list[SystemUnderTest]:
    """The systems to run: real ones (recorded when asked), or their recorded answers
    (``asked``: the queries that must have one under --strict, by default all)."""
    if record_dir and replay_dir:
        raise ConfigError("--record and --replay exclude each other")
    if replay_dir is None:
        systems = [create_system(name) for name in names]
        for system in systems:
            if hasattr(system, "keep"):  # servers with a store of their own (MCP)
                system.keep = keep
            if timeout is not None and hasattr(system, "call_timeout"):  # processes, HTTP
                system.call_timeout = timeout
        if record_dir is None:
            return systems
        return [RecordingSystem(s, recording_path(record_dir, s.name, dataset)) for s in systems]
    if not replay_dir.is_dir():
        raise ConfigError(f"--replay {replay_dir}: no such folder")
    replays = [ReplaySystem(n, recording_path(replay_dir, n, dataset)) for n in names]
    for replay in replays:
        if not replay.path.is_file():
            raise ConfigError(
                f"--replay {replay_dir}: no recording of {replay.name} on {dataset.name} "
                f"(expected {replay.path}; make one with --record)"
            )
        missing = replay.missing(dataset.queries if asked is None else asked)
        if strict and missing:
            shown = ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
            raise ConfigError(
                f"--strict: {len(missing)} queries have no recorded answer for {replay.name} "
                f"in {replay.path}: {shown}"
            )
    return list(replays)


def _with_session_lift(
    report: Report,
    dataset: Dataset,
    system: SystemUnderTest,
    recorded: Run,
    k: int,
    console: Console,
    measure: Measure,
    rules: Rules,
    concurrency: int = 1,
) -> Report:
    """The report with the session lift: the dataset asked again, every query alone (the
    same system object, set up afresh), paired with the run already recorded."""
    if not getattr(system, "accepts_session", False):
        console.print(f"{system.name} does not accept a session: no lift measured")
        return report
    alone = _record(dataset, system, k, console, session_context=False, concurrency=concurrency)
    lift = measure_session_lift(dataset, recorded, alone, measure, rules)
    return report.model_copy(update={"session_lift": lift})


def _record(
    dataset: Dataset,
    system: SystemUnderTest,
    k: int,
    console: Console,
    repeat: int = 1,
    session_context: bool = True,
    restarts: int = DEFAULT_RESTARTS,
    concurrency: int = 1,
    only: Sequence[str] | None = None,
) -> Run:
    chosen = None if only is None else frozenset(only)
    if not show_progress(console):
        return asyncio.run(
            run_dataset(
                dataset,
                system,
                k,
                repeat=repeat,
                session_context=session_context,
                restarts=restarts,
                concurrency=concurrency,
                only=chosen,
            )
        )
    with Progress(
        "{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        title = f"{system.name} on {dataset.name}"
        task = bar.add_task(title, total=len(dataset.queries if only is None else only))
        return asyncio.run(
            run_dataset(
                dataset,
                system,
                k,
                progress=lambda done, _: bar.update(task, completed=done, description=title),
                repeat=repeat,
                session_context=session_context,
                restarts=restarts,
                concurrency=concurrency,
                only=chosen,
                ingesting=lambda n: bar.update(
                    task, description=f"{title}: ingesting {n} documents"
                ),
            )
        )
