"""`recallbench bench`: several systems on several datasets, one leaderboard; with
``--extraction``, several extractors on several extraction ground truths, one extraction
leaderboard (:mod:`recallbench.extraction._bench`)."""

from __future__ import annotations

import os
import platform
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from recallbench._version import __version__
from recallbench.cli._console import make_console
from recallbench.cli._errors import reports_errors
from recallbench.cli._extract import (
    EXTRACTORS,
    LLMOptions,
    check_llm,
    conversation_option,
    documents_option,
    extracted,
    extractor_timeout_option,
    name_rule_option,
    parse_rules,
    report_files,
    resamples_option,
    rule_option,
    scored_report,
    seed_option,
    write_files,
)
from recallbench.cli._options import (
    config_option,
    measures_option,
    out_option,
    quiet_option,
    systems_option,
    with_judge_cache_options,
    with_store_options,
)
from recallbench.cli._run import _record, _systems, record_history, write_shard
from recallbench.cli._run_io import distinct_folders, writable_folder
from recallbench.core import ConfigError, Dataset, Run
from recallbench.datasets import load_dataset
from recallbench.extraction._sources import LOCOMO_PREFIX, first_documents, load_truth
from recallbench.gates import load_config
from recallbench.measures import Measure, parse_measures
from recallbench.render import write_outputs
from recallbench.render._bench import write_bench
from recallbench.render._leaderboard import render_leaderboard
from recallbench.report import build_report
from recallbench.report._bench import Board
from recallbench.report._leaderboard import safe_name
from recallbench.runner._shard import Shard, ShardDataset, ShardManifest, identity, shard_queries

if TYPE_CHECKING:
    from rich.console import Console

    from recallbench.extraction import ExtractionGroundTruth, MatchRule, NameRule
    from recallbench.extraction._bench import Entry
    from recallbench.extraction._extractors import Extractor

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
  recallbench bench --dataset locomo:data/locomo10.json --shard 1/4 --out out/shard-1
  recallbench merge out/bench out/shard-1 out/shard-2 out/shard-3 out/shard-4
  recallbench bench --extraction meeting-sample --extraction locomo-events:data/locomo \\
      --extractor baseline --extractor python:my_pkg.mem:extract --rule exact
\b
Each dataset runs against every system; each system's run and report go to
OUT/DATASET/SYSTEM/, the leaderboard of all to OUT/leaderboard.md and .json.
With --shard I/N, only shard I of N of each dataset runs (see run --help) and OUT gets
the runs and shard.json; `recallbench merge` writes the reports and the leaderboard.
\b
With --extraction (instead of --dataset and --system): every extractor runs on every
extraction ground truth (as recallbench extract, whose scoring options apply); its
extraction.json, extraction.md and output.json (to replay: extract --output) go to
OUT/GROUND_TRUTH/EXTRACTOR/, the extraction leaderboard to
OUT/extraction-leaderboard.md and .json. An extractor that fails (raises, exits
non-zero, times out, answers off the format) is listed as failed and the others run;
every file is written at the end, so bad input (exit 2) writes nothing.

\b
Exit codes with --extraction: 0 benched (an extractor that failed is a failed row,
  an LLM extractor over [judge] max_failure_rate an unreliable one, as a search
  system's failed queries are counted on its row); 2 bad input or usage, or --strict
  and a model call not in the cache (nothing is written); 130 interrupted.
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
@click.option(
    "--shard",
    "shard_text",
    metavar="I/N",
    help="Run shard I of N of each dataset only, for `recallbench merge` (see run).",
)
@click.option(
    "--extraction",
    "truth_specs",
    multiple=True,
    metavar="GROUND_TRUTH",
    help="Extraction ground truth (repeatable), as extract --ground-truth: a "
    "recallbench.extraction/v1 file, locomo-events:PATH or meeting-sample. Benchmarks "
    "extractors instead of search systems.",
)
@click.option(
    "--extractor",
    "extractor_specs",
    multiple=True,
    metavar="SPEC",
    help=f"With --extraction: extractor (repeatable): {EXTRACTORS}. Default: baseline.",
)
@conversation_option
@documents_option
@extractor_timeout_option
@rule_option
@name_rule_option
@resamples_option
@seed_option
@with_judge_cache_options
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
    shard_text: str | None,
    truth_specs: tuple[str, ...],
    extractor_specs: tuple[str, ...],
    conversations: tuple[str, ...],
    limit: int | None,
    timeout: float,
    rule_texts: tuple[str, ...],
    name_rule: str,
    resamples: int,
    seed: int,
    cache_spec: str | None,
    strict: bool,
    config_path: Path | None,
    store_url: str | None,
    no_store: bool,
    quiet: bool,
) -> None:
    """Run systems over datasets and write one leaderboard (per dataset and category); or,
    with --extraction, extractors over extraction ground truths."""
    given = _given_options()
    if truth_specs:
        _refuse(
            given & set(RETRIEVAL_OPTIONS),
            RETRIEVAL_OPTIONS,
            "not with --extraction (options of a retrieval bench; extractors are --extractor)",
        )
        from recallbench.extraction import NameRule

        settings = _ExtractionSettings(
            tuple(dict.fromkeys(extractor_specs or ("baseline",))),
            conversations,
            limit,
            timeout,
            parse_rules(rule_texts),
            NameRule.parse(name_rule),
            resamples,
            seed,
            LLMOptions(config_path, cache_spec, strict, store_url),
        )
        _extraction_bench(tuple(dict.fromkeys(truth_specs)), settings, out_dir, quiet)
        return
    _refuse(given & set(EXTRACTION_OPTIONS), EXTRACTION_OPTIONS, "only with --extraction")
    shard = Shard.parse(shard_text) if shard_text is not None else None
    config = load_config(config_path).config
    dataset_specs = dataset_specs or tuple(config.datasets)
    if not dataset_specs:
        raise ConfigError("give --dataset (or list datasets in recallbench.toml)")
    measures = parse_measures(measure_names or config.measures or BENCH_MEASURES)
    names = list(dict.fromkeys(system_names or config.systems or BENCH_SYSTEMS))
    k = k or config.k or BENCH_K
    datasets = [load_dataset(spec) for spec in dataset_specs]  # all bad input before any run
    distinct_folders(
        zip(dataset_specs, (d.name for d in datasets), strict=True), safe_name, out_dir, "datasets"
    )
    distinct_folders(((n, n) for n in names), safe_name, out_dir / "<dataset>", "systems")
    console = make_console(quiet)
    # without --out: the N shards write to N folders, the merge names its own
    options = [
        *(f"--dataset={spec}" for spec in dataset_specs),
        *(f"--system={name}" for name in names),
        *(f"--measure={m}" for m in measures),
        f"--k={k}",
        *([f"--concurrency={concurrency}"] if concurrency > 1 else []),
    ]
    if shard is not None:
        _bench_shard(
            shard,
            dataset_specs,
            datasets,
            names,
            measures,
            k,
            concurrency,
            out_dir,
            options,
            console,
        )
        return
    boards = []
    for dataset in datasets:
        reports, folders = [], []
        for system in _systems(names, dataset, None, None, False):
            run = _record(dataset, system, k, console, concurrency=concurrency)
            report = build_report(dataset, run, measures)
            folder = out_dir / safe_name(dataset.name) / safe_name(system.name)
            write_outputs(folder, run, report, dataset)
            reports.append(report)
            folders.append(folder)
        board = Board(dataset, reports)
        render_leaderboard(board.standings, console)
        boards.append(board)
        if not no_store:
            record_history(reports, store_url, console, folders)
    written = write_bench(out_dir, boards, _context([*options, f"--out={out_dir}"]))
    console.print("wrote " + ", ".join(str(path) for path in written))


RETRIEVAL_OPTIONS = {
    "dataset_specs": "--dataset",
    "system_names": "--system",
    "measure_names": "--measure",
    "k": "--k",
    "concurrency": "--concurrency",
    "shard_text": "--shard",
}
"""Parameter -> option of the retrieval bench, refused with --extraction."""
EXTRACTION_OPTIONS = {
    "extractor_specs": "--extractor",
    "conversations": "--conversation",
    "limit": "--documents",
    "timeout": "--timeout",
    "rule_texts": "--rule",
    "resamples": "--resamples",
    "seed": "--seed",
    "cache_spec": "--judge-cache",
    "strict": "--strict",
}
"""Parameter -> option of the extraction bench, refused without --extraction."""


def _bench_shard(
    shard: Shard,
    specs: Sequence[str],
    datasets: Sequence[Dataset],
    names: list[str],
    measures: Sequence[Measure],
    k: int,
    concurrency: int,
    out_dir: Path,
    arguments: list[str],
    console: Console,
) -> None:
    """Shard ``shard`` of every dataset against every system: the runs and shard.json."""
    runs: dict[str, list[Run]] = {}
    entries = []
    systems: list[str] = []
    for spec, dataset in zip(specs, datasets, strict=True):
        part = [query.id for query in shard_queries(dataset, shard)]
        folder = safe_name(dataset.name)
        runs[folder] = [
            _record(dataset, system, k, console, concurrency=concurrency, only=part)
            for system in _systems(names, dataset, None, None, False)
        ]
        systems = [run.spec.system for run in runs[folder]]
        entries.append(ShardDataset(spec=spec, ref=dataset.ref, folder=folder, queries=part))
    manifest = ShardManifest(
        command="bench",
        shard=identity(shard),
        k=k,
        measures=[str(m) for m in measures],
        systems=systems,
        folders={name: safe_name(name) for name in systems},
        datasets=entries,
        arguments=arguments,
    )
    write_shard(out_dir, manifest, runs, console)


def _given_options() -> set[str]:
    """The parameters given on the command line or in the environment (not defaults), so
    that an option of the other kind of bench is refused rather than ignored."""
    context = click.get_current_context()
    given = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
    return {name for name in context.params if context.get_parameter_source(name) in given}


def _refuse(given: set[str], options: dict[str, str], why: str) -> None:
    """ConfigError (exit 2, before anything runs) naming the options given in vain."""
    if given:
        names = ", ".join(option for name, option in options.items() if name in given)
        raise ConfigError(f"{names}: {why}")


def _context(arguments: Sequence[str]) -> dict[str, str]:
    """The command, version, date and machine that head a leaderboard."""
    return {
        "command": shlex.join(["recallbench", "bench", *arguments]),
        "recallbench": __version__,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}",
    }


@dataclass(frozen=True, slots=True)
class _ExtractionSettings:
    """What every extractor of an extraction bench is run and scored with."""

    extractors: tuple[str, ...]
    conversations: tuple[str, ...]
    limit: int | None
    timeout: float
    rules: Sequence[MatchRule]
    names: NameRule
    resamples: int
    seed: int
    llm: LLMOptions

    def arguments(self) -> list[str]:
        """These settings as options, for the leaderboard's command line."""
        llm = self.llm
        return [
            *(f"--extractor={spec}" for spec in self.extractors),
            *(f"--conversation={c}" for c in self.conversations),
            *([f"--documents={self.limit}"] if self.limit is not None else []),
            *(
                [f"--timeout={self.timeout:g}"]
                if any(s.startswith("command:") for s in self.extractors)
                else []
            ),
            *(f"--rule={rule.label}" for rule in self.rules),
            *(
                []
                if self.names.kind == "exact"
                else [f"--name-rule=fuzzy>={self.names.threshold:g}"]
            ),
            f"--resamples={self.resamples}",
            f"--seed={self.seed}",
            *([f"--judge-cache={llm.cache_spec}"] if llm.cache_spec is not None else []),
            *(["--strict"] if llm.strict else []),
        ]


def _extraction_bench(
    truth_specs: tuple[str, ...], settings: _ExtractionSettings, out_dir: Path, quiet: bool
) -> None:
    """Every extractor on every ground truth, then every file at once: the reports, the
    outputs and the extraction leaderboard. Bad input (any ground truth or spec) stops
    before any extractor runs; an extractor that fails is a failed row."""
    from recallbench.extraction._bench import Board as ExtractionBoard
    from recallbench.extraction._bench import leaderboard_texts, render_board
    from recallbench.extraction._report import ground_truth_info

    llm = settings.llm
    if "llm" not in settings.extractors and (llm.cache_spec is not None or llm.strict):
        raise ConfigError("--judge-cache and --strict apply to --extractor llm only")
    if settings.conversations and not any(s.startswith(LOCOMO_PREFIX) for s in truth_specs):
        raise ConfigError(f"--conversation applies to --extraction {LOCOMO_PREFIX}PATH only")
    writable_folder(out_dir, "--out")
    truths = _truths(truth_specs, settings)
    folders = _unique_folders(settings.extractors, "--extractor")
    if "llm" in settings.extractors:
        check_llm(llm)
    made, failed_to_start = _resolved(settings)
    console = make_console(quiet)
    files: dict[Path, str] = {}
    boards = []
    for truth_folder, truth in truths.items():
        entries = []
        for spec in settings.extractors:
            folder = f"{truth_folder}/{folders[spec]}"
            error = failed_to_start.get(spec)
            entry = (
                _failed(spec, folder, error)
                if error is not None
                else _run(truth, spec, made.get(spec), settings, console, out_dir / folder, files)
            )
            entries.append(entry)
        board = ExtractionBoard(
            ground_truth_info(truth),
            truth_folder,
            tuple(rule.label for rule in settings.rules),
            entries,
            resamples=settings.resamples,
            seed=settings.seed,
        )
        board.rank()
        render_board(board, console)
        boards.append(board)
    context = _context(
        [
            *(f"--extraction={spec}" for spec in truth_specs),
            *settings.arguments(),
            f"--out={out_dir}",
        ]
    )
    for name, text in leaderboard_texts(boards, context).items():
        files[out_dir / name] = text
    write_files(files, out_dir)
    shown = [path for path in files if path.parent == out_dir]
    console.print(
        f"wrote {len(files) - len(shown)} files (extraction.json, extraction.md and "
        f"output.json of each extractor) under {out_dir}, "
        + ", ".join(str(path) for path in shown),
        highlight=False,
    )


def _truths(
    specs: Sequence[str], settings: _ExtractionSettings
) -> dict[str, ExtractionGroundTruth]:
    """Folder name -> ground truth, every one loaded (and cut to --documents) before any
    extractor runs; two with one folder name are refused."""
    truths: dict[str, ExtractionGroundTruth] = {}
    named: dict[str, str] = {}
    for spec in specs:
        locomo = spec.startswith(LOCOMO_PREFIX)
        truth = load_truth(spec, settings.conversations if locomo else (), "--extraction")
        if settings.limit is not None:
            truth = first_documents(truth, settings.limit)
        folder = safe_name(truth.name)
        if folder in truths:
            raise ConfigError(
                f"--extraction {spec}: its ground truth is named {truth.name!r}, as that of "
                f"--extraction {named[folder]}: their reports would share OUT/{folder}/"
            )
        truths[folder] = truth
        named[folder] = spec
    return truths


def _unique_folders(specs: Sequence[str], option: str) -> dict[str, str]:
    """Spec -> its folder name, refusing two specs that would share one."""
    folders: dict[str, str] = {}
    for spec in specs:
        folder = safe_name(spec)
        clash = next((other for other, name in folders.items() if name == folder), None)
        if clash is not None:
            raise ConfigError(f"{option} {spec} and {clash}: both would write to {folder}/")
        folders[spec] = folder
    return folders


def _resolved(settings: _ExtractionSettings) -> tuple[dict[str, Extractor], dict[str, str]]:
    """Every extractor but llm (made per ground truth, with its cache), resolved before any
    runs: an unknown spec is bad input (exit 2); one that fails as it starts (a class whose
    constructor raises) is a failed row on every ground truth."""
    from recallbench.extraction._extractors import resolve_extractor
    from recallbench.runner import SystemFailedError

    made: dict[str, Extractor] = {}
    failed: dict[str, str] = {}
    for spec in settings.extractors:
        if spec == "llm":
            continue
        try:
            made[spec] = resolve_extractor(spec, timeout=settings.timeout)
        except SystemFailedError as error:
            failed[spec] = str(error)
    return made, failed


def _failed(spec: str, folder: str, error: str) -> Entry:
    from recallbench.extraction._bench import Entry

    return Entry(spec, folder, error=error)


def _run(
    truth: ExtractionGroundTruth,
    spec: str,
    extractor: Extractor | None,
    settings: _ExtractionSettings,
    console: Console,
    folder: Path,
    files: dict[Path, str],
) -> Entry:
    """One extractor on one ground truth, scored as extract scores it; its files added to
    ``files``. A SystemFailedError (exit 3 for extract) is the entry's error; any other
    error (bad input, a --strict cache miss) stops the bench with nothing written."""
    from recallbench.extraction._bench import Entry
    from recallbench.runner import SystemFailedError

    relative = f"{folder.parent.name}/{folder.name}"
    try:
        output = extracted(
            truth, spec, settings.llm, console, timeout=settings.timeout, extractor=extractor
        )
    except SystemFailedError as error:
        return Entry(spec, relative, error=str(error))
    report = scored_report(
        truth, output, settings.rules, settings.resamples, settings.seed, settings.names
    )
    files.update(report_files(report, output, folder))
    files[folder / "output.json"] = output.model_dump_json(indent=2) + "\n"
    from recallbench.extraction._report import extractor_note

    return Entry(spec, relative, report=report, note=extractor_note(output))
