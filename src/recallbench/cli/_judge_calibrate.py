"""`recallbench judge calibrate`: how well does the judge agree with people?"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from recallbench.cli._console import make_console
from recallbench.cli._errors import reports_errors, warn
from recallbench.cli._judge import UNRELIABLE_RULE, exit_unreliable, progress_bar, read_runs
from recallbench.cli._options import (
    config_option,
    out_option,
    quiet_option,
    store_option,
    with_judge_cache_options,
)
from recallbench.cli._run import _one_dataset
from recallbench.cli._run_io import writable_folder, written
from recallbench.core import ConfigError
from recallbench.core._files import atomic_write_texts
from recallbench.datasets import load_dataset
from recallbench.gates import load_config
from recallbench.judges._calibrate import LEVEL, RESAMPLES
from recallbench.judges._calibrate import (
    calibrate as calibrate_judge,
)
from recallbench.judges._calibrate_model import JudgeInfo
from recallbench.judges._calibrate_pairs import human_pairs, judge_inputs
from recallbench.judges._calibrate_ppi import MIN_HUMAN_SAMPLE
from recallbench.judges._calibrate_render import calibration_files, render_calibration
from recallbench.judges._setup import (
    JudgeSetup,
    call_params,
    judge_all,
    open_cache,
    require_judge,
)
from recallbench.judges._task_kinds import RelevanceTask
from recallbench.measures import parse_measure

DEFAULT_MEASURE = "ndcg@10"


@click.command(
    epilog="""\b
Examples:
  recallbench judge calibrate
  recallbench judge calibrate --judge-cache judgments.jsonl --out out/calibration
  recallbench judge calibrate --judge-cache judgments.jsonl --strict   # CI: replay only
  recallbench run --system builtin-lexical --system builtin-hybrid --system builtin-dense
  recallbench judge calibrate out/builtin-lexical out/builtin-hybrid out/builtin-dense \\
      -m ndcg@10 --human-sample 40
  recallbench judge calibrate --dataset my-golden.json --config recallbench.toml

\b
The judge is the [judge] table of the configuration (see `recallbench judge --help`).
People's labels are the dataset's qrels; pairs labelled by an LLM are left out.

\b
Warnings (terminal, calibration.json and calibration.md): fewer than 20 queries labelled
  by people (the intervals of the means hold the true mean less often than 95%);
  Kendall's tau above 0 with quadratic kappa below 0.4 (tau compares only the systems'
  order, which a judge that inverts grades can keep). Warnings do not change the exit code.

\b
Exit codes: 0 calibrated; 2 bad input or usage, or --strict found a judgment missing
  from the cache; 130 interrupted;
"""
    + UNRELIABLE_RULE
    + """
  Every judgment failing is the extreme case: kappa cannot be computed.
"""
)
@click.argument(
    "run_paths",
    nargs=-1,
    metavar="[RUN]...",
    type=click.Path(exists=True, path_type=Path),
)
@click.option(
    "--dataset",
    "dataset_spec",
    help="Bundled dataset name, a dataset JSON file, or FORMAT:PATH. Default: the "
    "configuration's, else the bundled agent-memory-sample.",
)
@click.option(
    "-m",
    "--measure",
    "measure_name",
    default=DEFAULT_MEASURE,
    show_default=True,
    metavar="MEASURE",
    help="Measure the runs are ranked by (tau) and estimated with (PPI).",
)
@click.option(
    "--human-sample",
    type=click.IntRange(min=2),
    metavar="N",
    help="PPI: treat a seeded random N of the queries as the only ones people labelled "
    "and correct the judge's means with them. Default: every query (PPI then equals the "
    f"classical mean). Below {MIN_HUMAN_SAMPLE} a warning: the intervals are too narrow.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the bootstrap and of the --human-sample draw.",
)
@click.option(
    "--resamples",
    type=click.IntRange(min=1_000),
    default=RESAMPLES,
    show_default=True,
    help="Bootstrap resamples of each interval.",
)
@out_option("Also write calibration.json and calibration.md into this folder.")
@with_judge_cache_options
@config_option
@store_option
@quiet_option
@reports_errors
def calibrate(
    run_paths: tuple[Path, ...],
    dataset_spec: str | None,
    measure_name: str,
    cache_spec: str | None,
    strict: bool,
    human_sample: int | None,
    seed: int,
    resamples: int,
    out_dir: Path | None,
    config_path: Path | None,
    store_url: str | None,
    quiet: bool,
) -> None:
    """Compare the judge's relevance labels with people's on a dataset's labelled pairs.

    Cohen's kappa (unweighted, linear and quadratic on 0-3; binary at the dataset's
    relevance threshold) with bootstrap intervals, the confusion matrix and agreement per
    query category. Given runs of two or more systems: Kendall's tau between their ranking
    under people's and under the judge's labels; given any runs: prediction-powered means
    of the measure from a human-labelled sample of queries (--human-sample).
    """
    loaded = load_config(config_path)
    config = require_judge(loaded.config.judge, loaded.path)
    dataset = load_dataset(dataset_spec or _one_dataset(loaded.config.datasets))
    measure = parse_measure(measure_name)
    runs = read_runs(run_paths, dataset)
    pairs = human_pairs(dataset)
    if not pairs.pairs:
        raise ConfigError(
            f"{dataset.name}: no pair labelled by people to calibrate against "
            f"({pairs.excluded_llm} LLM labels)"
        )
    if out_dir is not None:
        writable_folder(out_dir, "--out")
    console = make_console(quiet)
    task = RelevanceTask()
    inputs = judge_inputs(dataset, pairs.pairs)
    with open_cache(cache_spec, store_url) as cache:
        setup = JudgeSetup(config, cache)
        with progress_bar(console, f"judging with {config.model}") as progress:
            judged = asyncio.run(judge_all(task, inputs, setup, strict=strict, progress=progress))
        where = cache.where if cache is not None else "no cache"
    judge = JudgeInfo(
        model=config.model,
        provider=config.provider,
        endpoint=config.base_url,
        prompt=f"{task.name} v{task.version}",
        params=call_params(config),
        answered_by=sorted(
            {j.model for j in judged.judgments if j.model and j.model != config.model}
        ),
    )
    result = calibrate_judge(
        dataset,
        pairs,
        judged.judgments,
        judge,
        runs=runs,
        measure=measure,
        human_sample=human_sample,
        seed=seed,
        resamples=resamples,
        level=LEVEL,
        max_failure_rate=config.max_failure_rate,
        # no prices configured: the cost is unknown, not zero
        price=config.cost if config.price_in or config.price_out else None,
        stats=judged.stats,
    )
    render_calibration(result, console)
    stats = judged.stats
    console.print(
        f"judge calls: {stats.called:,} made, {stats.cached:,} replayed ({where})",
        highlight=False,
    )
    if out_dir is not None:
        files = {out_dir / name: text for name, text in calibration_files(result).items()}
        try:
            atomic_write_texts(files)
        except OSError as error:
            raise written("--out", out_dir, error) from None
        console.print("wrote " + ", ".join(str(path) for path in files), highlight=False)
    if quiet:  # the report was not shown: the warnings still are
        for warning in result.warnings:
            warn(f"warning: {warning.message}")
    coverage = result.coverage
    if coverage.unreliable:
        failed = ", ".join(f"{r} {n}" for r, n in coverage.failed.items())
        exit_unreliable(
            "judgments",
            coverage.failure_rate,
            coverage.max_failure_rate,
            f"every one of the {coverage.pairs:,} failed ({failed}): kappa cannot be "
            f"computed; is the judge at {config.base_url or config.model} running?"
            if not result.computable
            else f"failed: {failed}; every number rests on the {coverage.judged:,} of "
            f"{coverage.pairs:,} pairs judged",
        )
