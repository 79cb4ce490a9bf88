"""`recallbench compare`: is the difference between systems real, or noise?"""

from __future__ import annotations

from pathlib import Path

import click

from recallbench.cli._console import make_console
from recallbench.cli._errors import reports_errors
from recallbench.cli._options import measures_option, out_option, quiet_option
from recallbench.cli._types import UNIT
from recallbench.compare import MISSING_POLICIES, MissingPolicy, compare_inputs, paired_settings
from recallbench.core._files import atomic_write_text
from recallbench.measures import DEFAULT_MEASURES
from recallbench.render import render_comparison, render_comparison_markdown
from recallbench.render._html import dataset_for_texts, render_comparison_html
from recallbench.stats._multiple import CORRECTIONS, Correction
from recallbench.stats._resampling import IntervalMethod


@click.command(
    epilog="""\b
Examples:
  recallbench run --system builtin-lexical --system builtin-hybrid --out out
  recallbench compare out/builtin-lexical out/builtin-hybrid
  recallbench compare a/report.json b/report.json c/report.json --baseline a-system
  recallbench compare base/run.json new/run.json --dataset locomo:locomo10.json -m ndcg@10
  recallbench compare a b --missing drop --correction bh --out out/compare
  recallbench compare a b --format json > comparison.json
Inputs are report.json or run.json files, or the folders `recallbench run` wrote.
"""
)
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--baseline",
    metavar="NAME",
    help="System (name, label or path) the others are compared with. Default: the first.",
)
@measures_option(
    "Measure to compare (repeatable). Default: the reports' common measures, or "
    f"{' '.join(DEFAULT_MEASURES)} for runs."
)
@click.option(
    "--dataset",
    "dataset_spec",
    help="Dataset to score run.json inputs on (default: the bundled dataset they name).",
)
@click.option(
    "--missing",
    type=click.Choice(MISSING_POLICIES),
    default="error",
    show_default=True,
    help="Queries some inputs lack: an error, dropped everywhere, or scored 0 where missing.",
)
@click.option(
    "--correction",
    type=click.Choice(CORRECTIONS),
    default="holm",
    show_default=True,
    help=(
        "Multiple-comparison correction: Holm-Bonferroni, Benjamini-Hochberg, Westfall-Young "
        "max-T (over the shared resamples) or none. Intervals follow it (simultaneous)."
    ),
)
@click.option(
    "--resamples",
    type=click.IntRange(min=1_000),
    default=10_000,
    show_default=True,
    help="Bootstrap and randomisation resamples.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the resamples.")
@click.option(
    "--interval",
    type=click.Choice(["bca", "percentile"]),
    default="bca",
    show_default=True,
    help="Bootstrap interval: bias-corrected and accelerated, or plain percentile.",
)
@click.option(
    "--alpha",
    type=UNIT,
    default=0.05,
    show_default=True,
    help="Significance level (verdicts, MDE); intervals are at 1 - alpha before correction.",
)
@click.option("--power", type=UNIT, default=0.8, show_default=True, help="Power of the MDE.")
@click.option(
    "--k",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Cutoff of the rank differences.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: tables and verdicts; json: the comparison as comparison.json holds it, on "
    "standard output (what recallbench.compare() returns).",
)
@out_option("Also write comparison.json, comparison.md and comparison.html into this folder.")
@quiet_option
@reports_errors
def compare(
    inputs: tuple[Path, ...],
    baseline: str | None,
    measure_names: tuple[str, ...],
    dataset_spec: str | None,
    missing: MissingPolicy,
    correction: Correction,
    resamples: int,
    seed: int,
    interval: IntervalMethod,
    alpha: float,
    power: float,
    k: int,
    output_format: str,
    out_dir: Path | None,
    quiet: bool,
) -> None:
    """Compare systems with a baseline on the same queries, with paired statistics.

    For every measure and system: the mean difference, a bootstrap confidence interval,
    randomisation, t and Wilcoxon tests corrected for multiple comparisons, the effect
    size, wins/ties/losses and the smallest difference this many queries can detect; then
    the same by category and intent, and how much the rankings themselves changed.
    """
    settings = paired_settings(resamples, seed, interval, alpha, power)
    compared, comparison = compare_inputs(
        inputs,
        measure_names,
        baseline=baseline,
        dataset=dataset_spec,
        missing=missing,
        correction=correction,
        settings=settings,
        k=k,
    )
    if output_format == "json":
        click.echo(comparison.model_dump_json(indent=2))
    console = make_console(quiet or output_format == "json")
    render_comparison(comparison, console)
    if out_dir is not None:
        written = {
            out_dir / "comparison.json": comparison.model_dump_json(indent=2) + "\n",
            out_dir / "comparison.md": render_comparison_markdown(comparison, compared),
            out_dir / "comparison.html": render_comparison_html(
                comparison, compared, dataset_for_texts(comparison.dataset, dataset_spec)
            ),
        }
        for path, text in written.items():
            atomic_write_text(path, text)
        console.print("wrote " + ", ".join(str(path) for path in written))
