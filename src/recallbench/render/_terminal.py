"""A report in the terminal: its summary tables and lines."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from recallbench.render._markdown import (
    bounds,
    channel_cells,
    fmt,
    interval_n,
    interval_notes,
    pct,
    signed,
    unmatched_summary,
)
from recallbench.render._session import session_summary
from recallbench.report._channels import ChannelAnalysis
from recallbench.report._model import Group, Interval, Report, Stability
from recallbench.report._returned import depth_note

CHANGED_SHOWN = 10


def render_terminal(report: Report, console: Console) -> None:
    """Print the mean of every measure, the breakdown by category, counts and latency."""
    measures = [m.name for m in report.measures]
    counts = report.counts
    console.print(
        f"[bold]{report.system.system} on {report.dataset.name}[/bold] "
        f"({report.dataset.version}, sha256 {report.dataset.sha256[:12]})"
    )
    if report.system.replayed_from:
        console.print(
            f"replayed from {report.system.replayed_from}: answers and latencies as recorded "
            "with the live system",
            highlight=False,
        )
    if report.k_searched is not None:
        console.print(depth_note(report.system.k, report.k_searched), highlight=False)
    _summary(report, measures, console)
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False)
    groups = report.breakdowns.get("category", [])
    if groups:
        _by_category(groups, measures, console)
    console.print(
        f"queries {counts.queries} · evaluated {counts.evaluated} · "
        f"no relevant judgments {counts.no_relevant} (not in the means) · "
        f"failed {counts.failed} · missing {counts.missing}"
        + (f" · restarts {report.system.restarts}" if report.system.restarts else "")
    )
    if (unmatched := unmatched_summary(report)) is not None:
        console.print(escape(unmatched), highlight=False)
    if not report.system_scores:
        console.print("the system returned no scores: results evaluated in the order returned")
    if report.latency_ms is not None:
        lat = report.latency_ms
        console.print(
            f"latency ms: p50 {lat.p50:.2f} · p95 {lat.p95:.2f} · p99 {lat.p99:.2f} · "
            f"max {lat.max:.2f}"
        )
    if report.stability is not None:
        console.print(stability_line(report.stability), highlight=False)
    if report.session_lift is not None:
        console.print(session_summary(report.session_lift), highlight=False)
    if report.channels is not None:
        _channels(report.channels, console)


def _summary(report: Report, measures: list[str], console: Console) -> None:
    """Each measure's mean with its n and bootstrap interval, then how they were made."""
    summary = Table()
    summary.add_column("measure")
    if report.bootstrap is None:  # a report made before intervals
        summary.add_column(f"mean (n={report.counts.evaluated})", justify="right")
        for measure in measures:
            summary.add_row(measure, fmt(report.means.get(measure)))
        console.print(summary)
        return
    summary.add_column("n", justify="right")
    summary.add_column("mean", justify="right")
    summary.add_column(f"{report.bootstrap.level:.0%} interval", justify="right")
    for measure in measures:
        interval = report.intervals.get(measure)
        n = interval_n(interval)
        summary.add_row(measure, n, fmt(report.means.get(measure)), bounds(interval))
    console.print(summary)
    for note in interval_notes(report.bootstrap, report.intervals):
        console.print(f"[dim]{note}[/dim]", highlight=False)


def _by_category(groups: list[Group], measures: list[str], console: Console) -> None:
    """Means by category, each over its interval in short form (``.51–.90``)."""
    # borderless, padded on the left only, so that eight measures with their intervals and
    # the category names fit in 100 columns
    by_category = Table(
        title="by category",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 0, 0, 1),
        pad_edge=False,
    )
    by_category.add_column("category", no_wrap=True)
    by_category.add_column("n", justify="right", no_wrap=True)
    for measure in measures:
        by_category.add_column(measure, justify="right", overflow="fold", min_width=5)
    for group in groups:
        small = any(i.small for i in group.intervals.values())
        by_category.add_row(
            group.name,
            f"{group.n}{'*' if small else ''}",
            *(fmt(group.means.get(m), 3) + _short(group.intervals.get(m)) for m in measures),
        )
    console.print(by_category)


def _short(interval: Interval | None) -> str:
    """A second line ``.51–.90`` (two decimals, no leading zero, 1.00 as ``1``, dimmed), so
    that eight measures fit in 100 columns; nothing without an interval."""
    if interval is None or interval.low is None or interval.high is None:
        return ""

    def short(value: float) -> str:
        text = f"{value:.2f}"
        if text in ("1.00", "0.00", "-0.00"):
            return text[: text.index(".")].replace("-0", "0")
        return text.replace("0.", ".", 1) if text.startswith(("0.", "-0.")) else text

    return f"\n[dim]{short(interval.low)}–{short(interval.high)}[/dim]"


def _channels(analysis: ChannelAnalysis, console: Console) -> None:
    """One row per channel: its share of the top k, of the relevant ones, and reordering."""
    table = Table(
        title=f"channels (top {analysis.k}, {analysis.results} results)",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("channel", no_wrap=True)
    for column in ("share", "of relevant", "unique", "unique rel", "reordered", "Δ rank"):
        table.add_column(column, justify="right")
    for c in analysis.channels:
        table.add_row(c.name, *channel_cells(c))
    console.print(table)
    expansion = analysis.expansion
    if expansion is not None:
        console.print(
            f"query expansion: {expansion.queries} queries · Jaccard@{analysis.k} "
            f"{expansion.jaccard:.3f} · top-1 changed {pct(expansion.top1_changed_rate)} · "
            f"Δ recall@{analysis.k} {signed(expansion.recall_change)} · "
            f"Δ RR {signed(expansion.reciprocal_rank_change)}",
            highlight=False,
        )


def stability_line(stability: Stability) -> str:
    """One line: how often the N answers to a query were identical."""
    head = f"stability over {stability.repeats} runs: "
    if stability.rate is None:
        line = head + "– (no query answered without error in every run)"
    else:
        line = (
            head + f"{stability.rate:.1%} ({stability.stable} of {stability.queries} "
            "queries identical"
        )
        if stability.changed:
            shown = ", ".join(stability.changed[:CHANGED_SHOWN])
            more = len(stability.changed) - CHANGED_SHOWN
            line += f"; changed: {shown}" + (f" and {more} more" if more > 0 else "")
        line += ")"
    if stability.failed_in_some:
        line += f"; {stability.failed_in_some} failed in some runs only"
    return line
