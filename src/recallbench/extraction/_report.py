"""The report of an extraction benchmark (``recallbench.extraction-report/v1``): one system's
output scored against one ground truth under each selected matching rule, with why each
undefined measure is undefined, and the ground truth's loader changes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final, Literal

from pydantic import JsonValue

from recallbench._version import __version__
from recallbench.core._model import Record
from recallbench.extraction._formats import ExtractionGroundTruth, ExtractionOutput
from recallbench.extraction._measures import MEASURES, ExtractionScores, unannotated
from recallbench.report._escape import md_text

if TYPE_CHECKING:
    from rich.console import Console

REPORT_FORMAT: Final = "recallbench.extraction-report/v1"
SHOWN_CHANGES: Final = 5
"""Loader changes listed in the terminal (all of them are in extraction.json)."""

GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("events", ("event_precision", "event_recall", "event_f1")),
    ("", ("category_accuracy", "actor_accuracy")),
    ("entities", ("entity_precision", "entity_recall", "entity_f1", "type_accuracy")),
    ("deduplication", ("dedup_bcubed_precision", "dedup_bcubed_recall", "dedup_bcubed_f1")),
    ("observations", ("observation_precision", "observation_coverage", "observation_f1")),
    (
        "connections",
        ("connection_precision", "connection_recall", "connection_fpr", "hop_accuracy"),
    ),
)
"""The measures in the order tables show them, under a heading."""

_WHY: dict[str, tuple[str, str]] = {
    "event_precision": ("events_extracted", "no events extracted"),
    "event_recall": ("events_expected", "the ground truth expects no events"),
    "event_f1": ("events_expected", "no events expected or extracted"),
    "category_accuracy": ("categories_judged", "no matched event has an expected category"),
    "actor_accuracy": ("actors_judged", "no matched event has an expected actor"),
    "entity_precision": ("entities_extracted", "no entities extracted"),
    "entity_recall": ("entities_expected", "the ground truth expects no entities"),
    "entity_f1": ("entities_expected", "no entities expected or extracted"),
    "type_accuracy": ("types_judged", "no entity matched"),
    "dedup_bcubed_precision": ("bcubed_items", "no mention in both gold and system clusters"),
    "dedup_bcubed_recall": ("bcubed_items", "no mention in both gold and system clusters"),
    "dedup_bcubed_f1": ("bcubed_items", "no mention in both gold and system clusters"),
    "observation_precision": ("observations_stored", "nothing stored as a fact"),
    "observation_coverage": ("observations_expected", "the ground truth expects no observations"),
    "observation_f1": ("observations_expected", "no observations expected or stored"),
    "connection_precision": ("connections_extracted", "the expansions returned no connections"),
    "connection_recall": ("connections_expected", "the graph cases expect no connections"),
    "connection_fpr": ("not_connected_expected", "no expected-not-connected documents"),
    "hop_accuracy": ("connections_matched", "no connection matched"),
}


_ENTITY_MEASURES = frozenset(
    {"entity_recall", "type_accuracy", "dedup_bcubed_precision", "dedup_bcubed_recall"}
    | {"dedup_bcubed_f1"}
)


class GroundTruthInfo(Record):
    """Which ground truth was scored."""

    name: str
    version: str
    sha256: str
    """Of the validated ground truth's canonical JSON: the same data, the same hash."""
    documents: int
    graph_cases: int
    loader: dict[str, JsonValue] | None = None
    """The loader's rules and changes (``metadata["loader"]``), for a third-party source."""


class OutputInfo(Record):
    """Which system output was scored."""

    system: str
    sha256: str
    documents: int
    metadata: dict[str, JsonValue]


class ExtractionReport(Record):
    """A ``recallbench.extraction-report/v1`` file."""

    format: Literal["recallbench.extraction-report/v1"] = REPORT_FORMAT
    created_at: datetime
    recallbench_version: str
    ground_truth: GroundTruthInfo
    output: OutputInfo
    rules: tuple[str, ...]
    """The matching rules, in the order given; ``results`` follows it."""
    results: tuple[ExtractionScores, ...]
    undefined: dict[str, dict[str, str]]
    """Rule -> measure -> why it is undefined on this data (no unit defines it)."""


def _sha256(record: Record) -> str:
    return hashlib.sha256(record.model_dump_json().encode()).hexdigest()


def undefined_reasons(truth: ExtractionGroundTruth, scores: ExtractionScores) -> dict[str, str]:
    """Measure -> why no document (seed) defines it, for every measure with no value."""
    reasons: dict[str, str] = {}
    missing = unannotated(truth)
    matched = sum(d.counts.get("events_matched", 0.0) for d in scores.documents)
    for aggregate in scores.aggregates:
        if aggregate.macro is not None:
            continue
        name = aggregate.measure
        unit, _ = MEASURES[name]
        part = next((part for part, names in missing.items() if name in names), None)
        if part is not None:
            reasons[name] = (
                f"the ground truth annotates no {part} (every extracted one would count as wrong)"
            )
        elif unit == "seed" and not truth.graph:
            reasons[name] = "the ground truth has no graph cases"
        elif name == "category_accuracy" and not any(
            e.category is not None for d in truth.documents for e in d.events
        ):
            reasons[name] = "the ground truth gives no event categories"
        elif name in ("category_accuracy", "actor_accuracy") and not matched:
            reasons[name] = "no event matched under this rule"
        elif name in _ENTITY_MEASURES and not any(d.entities for d in truth.documents):
            reasons[name] = "the ground truth annotates no entities"
        else:
            reasons[name] = _WHY[name][1]
    return reasons


def build_report(
    truth: ExtractionGroundTruth,
    output: ExtractionOutput,
    results: Sequence[ExtractionScores],
) -> ExtractionReport:
    return ExtractionReport(
        created_at=datetime.now(UTC),
        recallbench_version=__version__,
        ground_truth=ground_truth_info(truth),
        output=OutputInfo(
            system=output.system,
            sha256=_sha256(output),
            documents=len(output.documents),
            metadata=output.metadata,
        ),
        rules=tuple(scores.rule for scores in results),
        results=tuple(results),
        undefined={scores.rule: undefined_reasons(truth, scores) for scores in results},
    )


def loader_changes(report: ExtractionReport) -> list[dict[str, JsonValue]]:
    """The changes the ground truth's loader recorded (none for a hand-written file)."""
    changes = (report.ground_truth.loader or {}).get("changes")
    return [c for c in changes if isinstance(c, dict)] if isinstance(changes, list) else []


def number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def interval(value: tuple[float, float] | None) -> str:
    return "–" if value is None else f"[{value[0]:.3f}, {value[1]:.3f}]"


def level_label(scores: ExtractionScores) -> str:
    level = float(scores.interval.get("level", 0.95))
    return f"{level * 100:g}%"


def resampling_note(scores: ExtractionScores) -> str:
    """What the intervals resample, in a sentence."""
    unit = str(scores.interval.get("resampled", "document"))
    clusters = scores.interval.get("clusters", "?")
    if unit == "document":
        return f"Intervals resample the {clusters} documents (each its own unit)."
    return (
        f"Intervals resample the {clusters} {unit}s, each with all its documents "
        f"(a cluster bootstrap: the documents of one {unit} are not independent)."
    )


def render_markdown(report: ExtractionReport) -> str:
    """The report as Markdown: one table per rule, notes on undefined measures."""
    truth, output = report.ground_truth, report.output
    lines = [
        f"# Extraction: {md_text(output.system)} on {md_text(truth.name)}",
        "",
        f"recallbench {report.recallbench_version}, "
        f"{report.created_at.isoformat(timespec='seconds')}. "
        f"{truth.documents} documents, {truth.graph_cases} graph cases. "
        "Macro (mean over documents or seeds) is the headline; micro pools the counts.",
        "",
    ]
    if report.results:
        lines += [resampling_note(report.results[0]), ""]
    for scores in report.results:
        level = level_label(scores)
        method = scores.interval.get("method", "bca")
        lines += [f"## Rule: {md_text(scores.rule)}", ""]
        if scores.gameable is not None:
            lines += [
                f"**Gameable** ({md_text(scores.gameable)}): kept to compare with published "
                "numbers; do not rank systems by it.",
                "",
            ]
        lines += [
            f"Names: {md_text(scores.name_rule)}.",
            "",
            f"| measure | n | macro | {level} interval ({method}) | micro | "
            f"{level} interval (percentile) |",
            "|---|---:|---:|---|---:|---|",
        ]
        for _, names in GROUPS:
            for name in names:
                a = scores.aggregate(name)
                lines.append(
                    f"| {name} | {a.units} | {number(a.macro)} | {interval(a.macro_interval)} "
                    f"| {number(a.micro)} | {interval(a.micro_interval)} |"
                )
        notes = report.undefined.get(scores.rule, {})
        if notes:
            lines.append("")
            lines += [f"- {name} –: {md_text(why)}" for name, why in notes.items()]
        if scores.missing_documents:
            lines += ["", f"Documents the output lacks: {len(scores.missing_documents)}."]
        lines.append("")
    changes = loader_changes(report)
    if report.ground_truth.loader is not None:
        lines += [f"## Loader changes: {len(changes)}", ""]
        lines += [
            "- " + md_text(f"{c.get('subject')}: {c.get('action')}, {c.get('reason')}")
            for c in changes
        ]
        lines.append("")
    return "\n".join(lines)


def ground_truth_info(truth: ExtractionGroundTruth) -> GroundTruthInfo:
    """Which ground truth a report scores (its name, version, hash and size), for a
    leaderboard row that has no report (every extractor failed on it)."""
    loader = truth.metadata.get("loader")
    return GroundTruthInfo(
        name=truth.name,
        version=truth.version,
        sha256=_sha256(truth),
        documents=len(truth.documents),
        graph_cases=len(truth.graph),
        loader=loader if isinstance(loader, dict) else None,
    )


def extractor_note(output: ExtractionOutput) -> str | None:
    """One line naming an LLM extractor's model, prompt version and failures (None for
    another system): the scores mean nothing without them."""
    meta = output.metadata
    prompt = meta.get("prompt")
    if meta.get("extractor") != "llm" or not isinstance(prompt, dict):
        return None
    reasons = meta.get("failed_by_reason")
    why = ", ".join(f"{n} {r}" for r, n in reasons.items()) if isinstance(reasons, dict) else ""
    note = (
        f"Extractor: LLM {meta.get('model')} ({meta.get('provider')}), prompt "
        f"{prompt.get('task')} v{prompt.get('version')}; {meta.get('failed')} of "
        f"{meta.get('asked')} documents failed{f' ({why})' if why else ''} and count as "
        "nothing extracted."
    )
    if meta.get("unreliable") is True:
        note += f" Unreliable: more than max_failure_rate {meta.get('max_failure_rate')}."
    return note


def render_terminal(report: ExtractionReport, console: Console) -> None:
    """The report in the terminal: a table per rule, what is gameable or undefined, and
    the loader's changes."""
    from rich.markup import escape
    from rich.table import Table

    truth, output = report.ground_truth, report.output
    console.print(
        f"[bold]{escape(output.system)}[/bold] on [bold]{escape(truth.name)}[/bold]: "
        f"{truth.documents} documents, {truth.graph_cases} graph cases. "
        "Macro = mean over documents (seeds), the headline; micro pools the counts.",
        highlight=False,
    )
    if report.results:
        console.print(escape(resampling_note(report.results[0])), highlight=False)
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
        if scores.gameable is not None:
            console.print(
                f"  [bold]gameable[/bold] ({escape(scores.gameable)}): kept to compare with "
                "published numbers; do not rank systems by it",
                highlight=False,
            )
        for name, why in report.undefined.get(scores.rule, {}).items():
            console.print(f"  – {name}: {escape(why)}", highlight=False)
        if scores.missing_documents:
            console.print(
                f"  {len(scores.missing_documents)} documents missing from the output "
                f"(scored as nothing extracted): {', '.join(scores.missing_documents[:3])}...",
                highlight=False,
            )
    render_changes(report, console)


def render_changes(report: ExtractionReport, console: Console) -> None:
    """The ground truth loader's changes, the first few of them."""
    from rich.markup import escape

    if report.ground_truth.loader is None:
        return
    changes = loader_changes(report)
    console.print(f"loader changes: {len(changes)}", highlight=False)
    for change in changes[:SHOWN_CHANGES]:
        line = f"{change.get('subject')}: {change.get('action')}, {change.get('reason')}"
        console.print("  " + escape(line), highlight=False)
    if len(changes) > SHOWN_CHANGES:
        console.print(f"  ... (all {len(changes)} in extraction.json)", highlight=False)
