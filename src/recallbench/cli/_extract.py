"""`recallbench extract`: score what a system extracts from documents (events, entities,
observations, graph connections) against ground truth, under each matching rule."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from recallbench.cli._errors import reports_errors
from recallbench.cli._options import out_option, quiet_option
from recallbench.cli._run import make_console
from recallbench.cli._run_io import writable_folder, written
from recallbench.core import ConfigError

if TYPE_CHECKING:
    from rich.console import Console

    from recallbench.extraction import ExtractionGroundTruth, ExtractionOutput
    from recallbench.extraction._report import ExtractionReport

LOCOMO_PREFIX = "locomo-events:"
DEFAULT_RULES = ("exact", "jaccard>=0.5", "containment>=0.7", "fuzzy>=85")
"""The deterministic rules scored when no --rule is given."""
SHOWN_CHANGES = 5
BUNDLED = ("meeting-sample",)
"""Ground truth shipped in recallbench.extraction's data folder, loadable by name."""


@click.command(
    epilog=f"""\b
Examples:
  recallbench extract --ground-truth locomo-events:data/locomo --conversation conv-30
  recallbench extract --ground-truth locomo-events:data/locomo10.json --rule jaccard>=0.6
  recallbench extract --ground-truth gold.json --output extracted.json --rule exact
  recallbench extract --ground-truth meeting-sample
  recallbench extract --ground-truth gold.json --save-output out/baseline.json --out out/

\b
Ground truth: a recallbench.extraction/v1 file, {LOCOMO_PREFIX}PATH (LoCoMo's
locomo10.json or its folder: sessions as documents, their annotated events and
observations), or a bundled corpus by name (meeting-sample). Output: the built-in
deterministic extractor (baseline), or a recallbench.extraction-output/v1 file. Rules:
exact (after normalisation), jaccard>=T, containment>=T, fuzzy>=T (0-100), embedding>=T
(the built-in dense model).

\b
Exit codes: 0 scored; 2 bad input or usage (nothing is written); 130 interrupted.
"""
)
@click.option(
    "--ground-truth",
    "truth_spec",
    required=True,
    metavar="FILE|locomo-events:PATH|NAME",
    help="Extraction ground truth: a recallbench.extraction/v1 file, locomo-events:PATH, "
    "or a bundled corpus (meeting-sample).",
)
@click.option(
    "--conversation",
    "conversations",
    multiple=True,
    metavar="ID",
    help="With locomo-events: keep only this conversation (repeatable; e.g. conv-30).",
)
@click.option(
    "--extractor",
    type=click.Choice(["baseline"]),
    help="Extract with a built-in extractor (default: baseline, unless --output is given).",
)
@click.option(
    "--output",
    "output_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Score this recallbench.extraction-output/v1 file instead of extracting.",
)
@click.option(
    "--rule",
    "rule_texts",
    multiple=True,
    metavar="RULE",
    help="Matching rule (repeatable; one table each). Default: " + ", ".join(DEFAULT_RULES) + ".",
)
@click.option(
    "--resamples",
    type=click.IntRange(min=10),
    default=1000,
    show_default=True,
    help="Bootstrap resamples of the documents for the intervals.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
@click.option(
    "--save-output",
    "save_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the scored output (a recallbench.extraction-output/v1 file) here.",
)
@out_option("Folder for extraction.json and extraction.md.", Path("out"))
@quiet_option
@reports_errors
def extract(
    truth_spec: str,
    conversations: tuple[str, ...],
    extractor: str | None,
    output_path: Path | None,
    rule_texts: tuple[str, ...],
    resamples: int,
    seed: int,
    save_path: Path | None,
    out_dir: Path,
    quiet: bool,
) -> None:
    """Score a system's extraction (events, entities, observations, connections) against
    ground truth: precision, recall and F1 with 95% bootstrap intervals, per matching rule."""
    from recallbench.extraction import MatchRule, score_extraction
    from recallbench.extraction._report import build_report, render_markdown

    if extractor is not None and output_path is not None:
        raise ConfigError("--extractor and --output exclude each other: extract, or score a file")
    rules = [MatchRule.parse(text) for text in rule_texts or DEFAULT_RULES]
    labels = [rule.label for rule in rules]
    if len(set(labels)) < len(labels):
        raise ConfigError(f"--rule: a rule is given twice ({', '.join(labels)})")
    writable_folder(out_dir, "--out")
    if save_path is not None:
        writable_folder(save_path.parent, "--save-output")
    truth = _ground_truth(truth_spec, conversations)
    output = _output(truth, output_path)
    results = [
        score_extraction(truth, output, rule, resamples=resamples, seed=seed) for rule in rules
    ]
    report = build_report(truth, output, results)
    files = {
        out_dir / "extraction.json": report.model_dump_json(indent=2) + "\n",
        out_dir / "extraction.md": render_markdown(report),
    }
    if save_path is not None:
        files[save_path] = output.model_dump_json(indent=2) + "\n"
    console = make_console(quiet)
    _render(report, console)
    _write(files, out_dir)
    console.print("wrote " + ", ".join(str(path) for path in files), highlight=False)


def _ground_truth(spec: str, conversations: tuple[str, ...]) -> ExtractionGroundTruth:
    from recallbench.extraction import load_ground_truth, load_locomo_extraction

    if spec.startswith(LOCOMO_PREFIX):
        path = Path(spec.removeprefix(LOCOMO_PREFIX))
        if not path.exists():
            raise ConfigError(f"--ground-truth {spec}: {path}: no such file or folder")
        return load_locomo_extraction(path, list(conversations) or None)
    if conversations:
        raise ConfigError(f"--conversation applies to {LOCOMO_PREFIX}PATH only")
    if spec in BUNDLED and not Path(spec).exists():
        return load_ground_truth(Path(__file__).parents[1] / "extraction" / "data" / f"{spec}.json")
    prefix, colon, _ = spec.partition(":")
    if colon and prefix.isidentifier() and not Path(spec).exists():
        raise ConfigError(
            f"--ground-truth {spec}: unknown format {prefix!r} "
            f"(use a recallbench.extraction/v1 file or {LOCOMO_PREFIX}PATH)"
        )
    return load_ground_truth(Path(spec))


def _output(truth: ExtractionGroundTruth, path: Path | None) -> ExtractionOutput:
    from recallbench.extraction import BaselineExtractor, load_output

    if path is None:
        return BaselineExtractor().extract(truth.documents)
    return load_output(path)


def _write(files: dict[Path, str], out_dir: Path) -> None:
    from recallbench.core._files import atomic_write_texts

    try:
        for path in files:
            path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_texts(files)
    except OSError as error:
        raise written("--out", out_dir, error) from None


def _render(report: ExtractionReport, console: Console) -> None:
    from rich.markup import escape
    from rich.table import Table

    from recallbench.extraction._report import GROUPS, interval, level_label, number

    truth, output = report.ground_truth, report.output
    console.print(
        f"[bold]{escape(output.system)}[/bold] on [bold]{escape(truth.name)}[/bold]: "
        f"{truth.documents} documents, {truth.graph_cases} graph cases. "
        "Macro = mean over documents (seeds), the headline; micro pools the counts.",
        highlight=False,
    )
    for scores in report.results:
        level = level_label(scores)
        table = Table(title=f"rule: {scores.rule}", title_justify="left", title_style="bold")
        table.add_column("measure")
        table.add_column("n", justify="right")
        table.add_column("macro", justify="right")
        table.add_column(f"{level} interval")
        table.add_column("micro", justify="right")
        table.add_column(f"{level} interval")
        for heading, names in GROUPS:
            for index, name in enumerate(names):
                a = scores.aggregate(name)
                if index == 0 and heading and table.row_count:
                    table.add_section()
                table.add_row(
                    name,
                    str(a.units),
                    number(a.macro),
                    interval(a.macro_interval),
                    number(a.micro),
                    interval(a.micro_interval),
                )
        console.print(table)
        for name, why in report.undefined.get(scores.rule, {}).items():
            console.print(f"  – {name}: {escape(why)}", highlight=False)
        if scores.missing_documents:
            console.print(
                f"  {len(scores.missing_documents)} documents missing from the output "
                f"(scored as nothing extracted): {', '.join(scores.missing_documents[:3])}...",
                highlight=False,
            )
    _render_changes(report, console)


def _render_changes(report: ExtractionReport, console: Console) -> None:
    from rich.markup import escape

    from recallbench.extraction._report import loader_changes

    if report.ground_truth.loader is None:
        return
    changes = loader_changes(report)
    console.print(f"loader changes: {len(changes)}", highlight=False)
    for change in changes[:SHOWN_CHANGES]:
        line = f"{change.get('subject')}: {change.get('action')}, {change.get('reason')}"
        console.print("  " + escape(line), highlight=False)
    if len(changes) > SHOWN_CHANGES:
        console.print(f"  ... (all {len(changes)} in extraction.json)", highlight=False)
