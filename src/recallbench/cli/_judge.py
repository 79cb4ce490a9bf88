"""`recallbench judge`: fill the unjudged results of runs with an LLM judge's labels
(`judge fill`, the default), and measure how well the judge agrees with people
(`judge calibrate`)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, NoReturn

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from recallbench._version import __version__
from recallbench.cli._console import make_console, show_progress
from recallbench.cli._errors import EXIT_SERVICE_FAILED, reports_errors, warn
from recallbench.cli._measure_choice import choose_measures
from recallbench.cli._options import (
    config_option,
    measures_option,
    out_option,
    quiet_option,
    systems_option,
    with_judge_cache_options,
    with_store_options,
)
from recallbench.cli._run import DEFAULT_K, _one_dataset, _record
from recallbench.cli._run_io import writable_folder, written
from recallbench.core import ConfigError, Dataset, Run
from recallbench.core._files import atomic_write_texts
from recallbench.core._validation import read_json, validate
from recallbench.datasets import DEFAULT_DATASET, load_dataset
from recallbench.gates import load_config
from recallbench.measures import Rules, parse_measure
from recallbench.report._read import output_file

if TYPE_CHECKING:
    from recallbench.judges._fill import Filled
    from recallbench.judges._fill_report import JudgeReport
    from recallbench.judges._setup import JudgeSetup
    from recallbench.measures import Measure

DEFAULT_DEPTH = 10
DEFAULT_OUT = Path("out/judged")


EXIT_UNRELIABLE = EXIT_SERVICE_FAILED
"""The one exit code of "unreliable" in `judge fill`, `judge task`, `judge calibrate` and
`qa`: more model calls failed than ``max_failure_rate`` allows. The calls' failures are the
service's (no answer in time, refused connection, error status, an answer off the schema),
so the code is EX_UNAVAILABLE's, as for any failed service."""

UNRELIABLE_RULE = f"""\
  {EXIT_UNRELIABLE} unreliable: more model calls failed than max_failure_rate allows
  ([judge], or [reader] for qa's answers; default 0.1). Always this code, never a
  warning with 0: the outputs are written first, every failure counted, and one
  line on stderr starts with "unreliable:"."""
"""The rule as each of the four commands' --help states it, word for word."""


def exit_unreliable(what: str, rate: float, limit: float, consequence: str) -> NoReturn:
    """The "unreliable" line on stderr, then exit :data:`EXIT_UNRELIABLE` (call after the
    outputs are written)."""
    warn(
        f"unreliable: {rate:.1%} of {what} failed, more than max_failure_rate {limit:g} "
        f"allows; {consequence}"
    )
    click.get_current_context().exit(EXIT_UNRELIABLE)


def cost_line(spent: float | None, calls: int, replayed: int, recorded: float | None) -> str:
    """What this invocation spent (a replayed call costs nothing now) beside what the
    answers cost when they were asked (recorded): on a replay the two differ."""
    now = "price unknown" if spent is None else f"${spent:.4f}"
    was = "price unknown" if recorded is None else f"${recorded:.4f}"
    return (
        f"cost: spent now {now} ({calls:,} calls made, {replayed:,} replayed); "
        f"recorded {was} (what the answers cost when asked)"
    )


class DefaultGroup(click.Group):
    """A group that runs ``fill`` when its first argument names no subcommand, so that
    ``recallbench judge out/run.json`` reads like a command; ``calibrate`` (numpy, scipy)
    is imported only when it runs."""

    default = "fill"
    lazy: ClassVar[dict[str, tuple[str, str]]] = {
        "calibrate": ("recallbench.cli._judge_calibrate", "calibrate"),
        "task": ("recallbench.cli._judge_task", "task"),
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            module, attribute = self.lazy[cmd_name]
            command: click.Command = getattr(importlib.import_module(module), attribute)
            return command
        return super().get_command(ctx, cmd_name)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        named = args and (args[0] in self.commands or args[0] in self.lazy)
        if not named and (not args or args[0] not in ("-h", "--help")):
            args = [self.default, *args]
        return super().parse_args(ctx, args)


@click.group(
    cls=DefaultGroup,
    epilog="""\b
Examples:
  recallbench judge --system builtin-lexical --system builtin-hybrid
  recallbench judge out/builtin-lexical out/builtin-hybrid --depth 20
  recallbench judge --judge-cache ci/judge-cache.jsonl --strict    # replay only (CI)
  recallbench judge calibrate                 # agreement with the dataset's human labels
  recallbench judge task faithfulness answers.jsonl               # any task on a file
  recallbench run --dataset out/judged/dataset.json               # measure with them

\b
The judge is the [judge] table of recallbench.toml: any OpenAI-compatible endpoint
(Ollama, vLLM, llama.cpp's server, hosted APIs) or a local GGUF file.
""",
)
def judge() -> None:
    """Label unjudged results with an LLM judge, or calibrate it against human labels.

    Without a subcommand, `fill` runs.
    """


@judge.command(
    "fill",
    epilog="""\b
Examples:
  recallbench judge fill --system builtin-lexical --system builtin-hybrid
  recallbench judge fill out/a/run.json out/b/run.json --dataset my-golden.json
  recallbench judge fill --judge-cache judge-cache.jsonl --strict

\b
Writes DIR/dataset.json (the dataset with the judge's labels, each with its source in
label_sources), DIR/judge.json and DIR/judge.md (every judgment, the means of each run
with and without the judge's labels, noise@depth before and after).

\b
Exit codes: 0 judged; 2 bad input, or --strict and a judgment not in the cache;
"""
    + UNRELIABLE_RULE
    + """
  A failed judgment gives no label and counts 0.5 in the judge score.
""",
)
@click.argument("run_paths", nargs=-1, type=click.Path(path_type=Path), metavar="[RUN]...")
@click.option(
    "--dataset",
    "dataset_spec",
    help=f"The dataset the runs were made on. Default: the configuration's, else "
    f"{DEFAULT_DATASET}.",
)
@systems_option(
    "Without RUN files: the systems to run and pool (repeatable). Default: the "
    "configuration's systems."
)
@click.option(
    "--k",
    type=click.IntRange(min=1),
    help=f"Without RUN files: results requested per query. Default: {DEFAULT_K}.",
)
@click.option(
    "--depth",
    type=click.IntRange(min=1),
    default=DEFAULT_DEPTH,
    show_default=True,
    help="Judge the unjudged results within each run's top DEPTH (pooled across runs).",
)
@measures_option(
    "Measure to report before and after (repeatable). Default: as `run` chooses; "
    "noise@DEPTH is always added."
)
@out_option("Folder for dataset.json, judge.json and judge.md.", DEFAULT_OUT)
@with_judge_cache_options
@config_option
@with_store_options
@quiet_option
@reports_errors
def fill(
    run_paths: tuple[Path, ...],
    dataset_spec: str | None,
    system_names: tuple[str, ...],
    k: int | None,
    depth: int,
    measure_names: tuple[str, ...],
    out_dir: Path,
    cache_spec: str | None,
    strict: bool,
    config_path: Path | None,
    store_url: str | None,
    no_store: bool,
    quiet: bool,
) -> None:
    """Judge the unjudged top results of runs and write the dataset with the new labels."""
    from recallbench.judges._fill import fill_unjudged
    from recallbench.judges._setup import JudgeSetup, open_cache, require_judge

    if store_url is not None and no_store:
        raise ConfigError("--store and --no-store exclude each other")
    loaded = load_config(config_path)
    config = loaded.config
    judge_config = require_judge(config.judge, loaded.path)
    dataset = load_dataset(dataset_spec or _one_dataset(config.datasets))
    measures, _ = choose_measures(measure_names, config.measures or (), dataset)
    noise = parse_measure(f"noise@{depth}")
    if noise not in measures:
        measures = (*measures, noise)
    writable_folder(out_dir, "--out")
    console = make_console(quiet)
    runs = _runs(run_paths, dataset, system_names or tuple(config.systems), k or config.k, console)
    if cache_spec is None and no_store:
        cache_spec = "none"
    with open_cache(cache_spec, store_url) as cache:
        setup = JudgeSetup(judge_config, cache)
        with progress_bar(console, "judging") as progress:
            filled = asyncio.run(
                fill_unjudged(dataset, runs, depth, setup, strict=strict, progress=progress)
            )
    report, judged = _outputs(filled, setup, dataset, runs, measures, depth)
    files = {
        out_dir / "dataset.json": _dump(judged),
        out_dir / "judge.json": report.model_dump_json(indent=2) + "\n",
        out_dir / "judge.md": _markdown(report),
    }
    try:
        atomic_write_texts(files)
    except OSError as error:
        raise written("--out", out_dir, error) from None
    if not no_store:
        _record_labels(filled, store_url, console)
    _show(report, console)
    console.print("wrote " + ", ".join(str(path) for path in files))
    if report.judge.unreliable:
        exit_unreliable(
            "judgments",
            report.judge.failure_rate,
            report.judge.max_failure_rate,
            f"the labels are incomplete; see {out_dir / 'judge.json'} for each failure",
        )


def _runs(
    paths: tuple[Path, ...],
    dataset: Dataset,
    system_names: tuple[str, ...],
    k: int | None,
    console: Console,
) -> list[Run]:
    """The runs to pool: read from RUN files, else made now with the named systems."""
    if paths:
        if system_names:
            raise ConfigError("give RUN files or --system, not both")
        return [run for _, run in read_runs(paths, dataset)]
    if not system_names:
        raise ConfigError(
            "nothing to judge: give RUN files (run.json or the folders `recallbench run` "
            "wrote) or --system NAME"
        )
    from recallbench.cli._run import _systems

    systems = _systems(list(dict.fromkeys(system_names)), dataset, None, None, False)
    return [_record(dataset, system, k or DEFAULT_K, console) for system in systems]


def read_runs(paths: Sequence[Path], dataset: Dataset) -> list[tuple[str, Run]]:
    """(system name, run) of each run.json (or folder holding one), made on ``dataset``."""
    read: list[tuple[Path, Run]] = []
    for given in paths:
        path = output_file(given, ("run.json",))
        data = read_json(path)
        kind = data.get("format") if isinstance(data, dict) else None
        if kind != "recallbench.run/v1":
            raise ConfigError(
                f"{path}: not a recallbench run (format {kind!r}); give run.json files or "
                "the folders `recallbench run` wrote"
            )
        run = validate(Run, data, str(path))
        ref = run.spec.dataset
        if ref is not None and ref.sha256 != dataset.sha256:
            raise ConfigError(
                f"{path}: the run was made on {ref.name} (sha256 {ref.sha256[:12]}), not on "
                f"{dataset.name} (sha256 {dataset.sha256[:12]}); give --dataset"
            )
        read.append((path, run))
    names = [run.spec.system for _, run in read]
    return [
        (name if names.count(name) == 1 else f"{name} ({path})", run)
        for (path, run), name in zip(read, names, strict=True)
    ]


Bars = Callable[[str], Callable[[int, int], None]]
"""A title -> the progress callback of a new bar with that title."""


@contextlib.contextmanager
def progress_bars(console: Console) -> Iterator[Bars | None]:
    """Bars for batches of model calls, on an interactive terminal only (None elsewhere):
    each call adds a bar under the same display."""
    if not show_progress(console):
        yield None
        return
    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as display:

        def bar(title: str) -> Callable[[int, int], None]:
            task = display.add_task(title, total=None)

            def update(done: int, total: int) -> None:
                display.update(task, completed=done, total=total)

            return update

        yield bar


@contextlib.contextmanager
def progress_bar(console: Console, title: str) -> Iterator[Callable[[int, int], None] | None]:
    """One progress callback drawing a bar on an interactive terminal; None elsewhere."""
    with progress_bars(console) as bars:
        yield None if bars is None else bars(title)


def _outputs(
    filled: Filled,
    setup: JudgeSetup,
    dataset: Dataset,
    runs: list[Run],
    measures: Sequence[Measure],
    depth: int,
) -> tuple[JudgeReport, Dataset]:
    """The report and the judged dataset (its metadata names the judge)."""
    from recallbench.judges._fill_report import (
        JudgeReport,
        pair_judgments,
        run_changes,
    )
    from recallbench.judges._summary import METADATA_KEY, label_counts, summarize

    judgments = filled.judged.judgments
    config = setup.config
    summary = summarize(
        judgments,
        filled.judged.stats,
        model=filled.model,
        provider=config.provider,
        prompt=filled.prompt,
        params=filled.params,
        cost=sum(config.cost(j.tokens_in, j.tokens_out) for j in judgments),
    )
    version = (
        dataset.version if dataset.version.endswith("+judged") else f"{dataset.version}+judged"
    )
    metadata = {**filled.dataset.metadata, METADATA_KEY: summary.model_dump(mode="json")}
    judged = filled.dataset.replaced(version=version, metadata=metadata)
    rules = Rules(relevance_threshold=dataset.relevance_threshold)
    stats = filled.judged.stats
    report = JudgeReport(
        created_at=datetime.now(UTC),
        recallbench_version=__version__,
        dataset=dataset.ref,
        judged_dataset=judged.ref,
        depth=depth,
        pool={
            "pairs": len(filled.pool.items),
            "unknown": filled.pool.unknown,
            "skipped_queries": filled.pool.skipped_queries,
        },
        labels_before=label_counts(dataset),
        labels_after=label_counts(judged),
        judge=summary,
        endpoint=config.base_url,
        cached=stats.cached,
        called=stats.called,
        spent_usd=stats.cost,
        measures=[str(m) for m in measures],
        runs=run_changes(filled, runs, measures, rules),
        judgments=pair_judgments(filled, config.cost),
    )
    return report, judged


def _dump(dataset: Dataset) -> str:
    from recallbench.datasets._json_v1 import dump_json_dataset

    return dump_json_dataset(dataset)


def _markdown(report: JudgeReport) -> str:
    from recallbench.judges._fill_report import render_markdown

    return render_markdown(report)


def _show(report: JudgeReport, console: Console) -> None:
    from recallbench.judges._fill_report import render_terminal

    render_terminal(report, console)
    console.print(
        cost_line(report.spent_usd, report.called, report.cached, report.judge.cost_usd),
        highlight=False,
    )


def _record_labels(filled: Filled, store_url: str | None, console: Console) -> None:
    """The judge's labels into the history store's ``judgments`` table (source llm)."""
    from recallbench.judges._labels import record_llm_labels
    from recallbench.store import open_store

    with open_store(store_url) as store:
        labels = [
            (item.query_id, item.doc_id, judgment)
            for item, judgment in zip(filled.pool.items, filled.judged.judgments, strict=True)
        ]
        count = record_llm_labels(store, labels)
    console.print(f"recorded {count} judge labels in {store.url}", highlight=False)
