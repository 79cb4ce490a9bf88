"""A comparison for people: terminal tables and Markdown (comparison.md)."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from recallbench.compare._inputs import Compared
from recallbench.compare._model import (
    Comparison,
    GroupComparison,
    PairedComparison,
    RankDifferences,
)
from recallbench.render._comparison_stacked import fits, print_blocks, print_group_tables
from recallbench.render._markdown import signed
from recallbench.report._escape import md_code, md_table, md_text
from recallbench.report._what_changed import QueryChange, WhatChanged
from recallbench.stats._multiple import CORRECTION_NAMES

MOST_CHANGED_SHOWN = 5
WHAT_CHANGED_SHOWN = 10
"""Queries listed per side (worse, better) in comparison.md's "what changed"."""
TERMINAL_MEASURES = 4
"""Breakdown tables in the terminal show the first measures (comparison.md has them all)."""
STYLES = {"better": "green", "worse": "red", "no significant difference": "", "not tested": "dim"}


def plain(value: float | None, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def pvalue(value: float | None, digits: int = 4) -> str:
    if value is None:
        return "–"
    smallest = 10.0**-digits
    return f"<{smallest:.{digits}f}" if value < smallest else f"{value:.{digits}f}"


def stars(p: float | None) -> str:
    """Significance marks from the adjusted randomisation p-value."""
    if p is None:
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def interval(row: PairedComparison, digits: int = 4) -> str:
    if row.ci is None:
        return "–"
    return f"[{row.ci.low:+.{digits}f}, {row.ci.high:+.{digits}f}]"


NOT_AVAILABLE = "n/a"
"""d_z, MDE or p t when they are undefined (reason in the JSON's ``not_available``)."""


def raw_adjusted(raw: float | None, adjusted: float | None, digits: int = 4) -> str:
    """``raw / adjusted``: the correction's effect in plain sight."""
    if raw is None and adjusted is None:
        return "–"
    return f"{pvalue(raw, digits)}/{pvalue(adjusted, digits)}"


def _main_cells(row: PairedComparison, digits: int = 4, compact: bool = False) -> list[str]:
    """Cells of the main table; ``compact`` (the terminal, 120 columns) shows the raw and
    the adjusted p of the verdict's test in two columns, and the adjusted p of t and
    Wilcoxon (the legend says so)."""
    adjusted = row.p_adjusted
    missing = NOT_AVAILABLE if row.not_available else "–"

    def both(raw: float | None, fixed: float | None) -> str:
        return pvalue(fixed, digits) if compact else raw_adjusted(raw, fixed, digits)

    return [
        row.measure,
        str(row.n),
        plain(row.mean_baseline, digits),
        plain(row.mean_system, digits),
        f"{signed(row.delta, digits)} {stars(adjusted['randomisation'])}".rstrip(),
        interval(row, digits),
        *(
            (pvalue(row.p_randomisation, digits), pvalue(adjusted["randomisation"], digits))
            if compact
            else (raw_adjusted(row.p_randomisation, adjusted["randomisation"], digits),)
        ),
        both(row.p_t, adjusted["t"]) if row.p_t is not None else missing,
        both(row.p_wilcoxon, adjusted["wilcoxon"]),
        missing if row.effect_size is None else signed(row.effect_size, 2),
        f"{row.wins}/{row.ties}/{row.losses}",
        missing if row.mde is None else plain(row.mde, 3),
    ]


def main_header(rows: Sequence[PairedComparison], compact: bool = False) -> list[str]:
    """Column names; the interval's level is the family's (simultaneous when corrected)."""
    tests = ("p t", "p W") if compact else ("p t raw/adj.", "p W raw/adj.")
    randomisation = ("p rand.", "adj.") if compact else ("p rand. raw/adj.",)
    level = next((row.ci_level for row in rows if row.ci_level is not None), None)
    shown = "CI" if level is None else f"{level * 100:.4g}% CI"
    return [
        "measure",
        "n",
        "baseline",
        "system",
        "Δ",
        shown,
        *randomisation,
        *tests,
        "d_z",
        "W/T/L",
        "MDE",
    ]


def _by_system(rows: Sequence[PairedComparison]) -> dict[str, list[PairedComparison]]:
    grouped: dict[str, list[PairedComparison]] = {}
    for row in rows:
        grouped.setdefault(row.system, []).append(row)
    return grouped


def summary_lines(comparison: Comparison) -> list[str]:
    """One sentence per system that a reviewer can act on."""
    lines = []
    systems = dict.fromkeys(row.system for row in comparison.comparisons)
    for system in systems:
        rows = [row for row in comparison.comparisons if row.system == system]
        parts = []
        for verdict in ("better", "worse"):
            chosen = [row for row in rows if row.verdict == verdict]
            if chosen:
                shown = ", ".join(
                    f"{row.measure} ({signed(row.delta)}, {interval(row)})" for row in chosen
                )
                parts.append(f"{verdict} on {shown}")
        unsure = [row for row in rows if row.verdict == "no significant difference"]
        if unsure:
            parts.append(
                "no significant difference on "
                + ", ".join(_unsure(row, comparison.settings.alpha) for row in unsure)
            )
        untested = [row for row in rows if row.verdict == "not tested"]
        if untested:
            parts.append("not tested on " + ", ".join(map(_untested, untested)))
        lines.append(f"{system} vs {comparison.baseline}: " + "; ".join(parts) + ".")
    for compared in comparison.systems:
        if compared.label != comparison.baseline and compared.label not in systems:
            lines.append(
                f"{compared.label} vs {comparison.baseline}: no query is paired on any "
                "measure, so nothing can be concluded."
            )
    return lines


def _untested(row: PairedComparison) -> str:
    """Why there is no test: one query has no spread to tell a difference from noise."""
    return (
        f"{row.measure} ({signed(row.delta)} on {row.n} paired "
        f"{'query' if row.n == 1 else 'queries'}: one query cannot tell a difference from "
        "noise, so nothing can be concluded)"
    )


def _unsure(row: PairedComparison, alpha: float) -> str:
    """What a non-significant result can and cannot say."""
    if row.ties == row.n:
        return f"{row.measure} (the same on all {row.n} queries)"
    if row.p_floor is not None and row.p_floor >= alpha:
        return (
            f"{row.measure} ({signed(row.delta)}; {row.wins + row.losses} queries differ, "
            f"too few to ever be significant: the smallest possible p is {row.p_floor:.4g})"
        )
    detectable = "" if row.mde is None else f"; detectable at n={row.n}: {row.mde:.3f}"
    return f"{row.measure} ({signed(row.delta)}{detectable})"


def _legend(comparison: Comparison, compact: bool = False) -> str:
    s = comparison.settings
    p_words = (
        f"p rand. / adj.: raw / {CORRECTION_NAMES[s.correction]}-adjusted over the table;"
        " p t, p W: adjusted —"
        if compact
        else f"p: raw / {CORRECTION_NAMES[s.correction]}-adjusted over the table —"
    )
    return " ".join(
        [
            "n: paired queries the measure counts (e.g. those with relevant judgments).",
            "Δ = system − baseline.",
            _interval_words(comparison),
            f"paired bootstrap ({s.interval}, {s.resamples:,} resamples, seed {s.seed}).",
            p_words,
            "randomisation test (marks from the adjusted p: * <0.05, ** <0.01, *** <0.001),",
            "paired t, Wilcoxon (exact at small n, ties included).",
            "Holm can reject where a Bonferroni-level interval still covers 0: it is the",
            "more powerful of the two." if s.correction == "holm" else "",
            "d_z = mean/sd of the differences (n/a: fewer than 2 queries, or no spread).",
            "W/T/L: queries better/equal/worse than the baseline.",
            f"MDE: Δ the t-test detects with power {s.power} at {_mde_alpha(comparison)}.",
        ]
    )


def _interval_words(comparison: Comparison) -> str:
    s = comparison.settings
    level = next((r.ci_level for r in comparison.comparisons if r.ci_level is not None), None)
    shown = "CI" if level is None else f"{level * 100:.4g}% CI"
    if s.correction == "none":
        return f"{shown} (per comparison, not adjusted):"
    if s.correction == "bh":
        return f"{shown} (false-coverage-rate level, Benjamini-Yekutieli, to match BH):"
    return (
        f"{shown} (simultaneous over the table: Bonferroni level, conservative for "
        f"{CORRECTION_NAMES[s.correction]}):"
    )


def _mde_alpha(comparison: Comparison) -> str:
    s = comparison.settings
    tested = sum(1 for r in comparison.comparisons if r.p_randomisation is not None)
    if s.correction == "none" or tested <= 1:
        return f"α {s.alpha}"
    return f"α {s.alpha}/{tested} (the corrected family's Bonferroni bound)"


def _header(comparison: Comparison) -> str:
    ref = comparison.dataset
    q = comparison.queries
    dropped = f", {len(q.dropped)} dropped (missing from some runs)" if q.dropped else ""
    return (
        f"compared with {comparison.baseline} on {ref.name} {ref.version} "
        f"(sha256 {ref.sha256[:12]}): {q.paired} of {q.dataset} queries paired{dropped}"
    )


def _rank_row(diff: RankDifferences) -> list[str]:
    share = {
        name: f"{count} ({count / max(diff.queries, 1):.0%})"
        for name, count in diff.classes.items()
    }
    return [
        diff.system,
        str(diff.k),
        *(share.get(name, "0") for name in ("identical", "minor", "major", "incompatible")),
        plain(diff.mean_kendall_tau, 3),
        plain(diff.mean_jaccard, 3),
        str(diff.top1_changed),
    ]


RANK_HEADER = [
    "system",
    "k",
    "identical",
    "minor",
    "major",
    "incompatible",
    "mean τ",
    "mean Jaccard",
    "top-1 changed",
]


def _group_rows(
    rows: Sequence[GroupComparison], measures: Sequence[str]
) -> tuple[list[str], list[list[str]]]:
    header = ["group", "system", "n", *(f"Δ {m}" for m in measures)]
    keyed = {(r.group, r.system, r.measure): r for r in rows}
    out = []
    for group, system in dict.fromkeys((r.group, r.system) for r in rows):
        cells = [keyed.get((group, system, m)) for m in measures]
        n = max((c.n for c in cells if c is not None), default=0)
        out.append(
            [
                group,
                system,
                str(n),
                *(
                    "–"
                    if c is None
                    else f"{signed(c.delta, 3)} {stars(c.p_adjusted['randomisation'])}".rstrip()
                    for c in cells
                ),
            ]
        )
    return header, out


def render_comparison(comparison: Comparison, console: Console) -> None:
    """Main table, verdicts in words, rank differences, breakdowns, warnings. A table
    wider than the console (80 columns, say) is shown stacked instead: one block per
    measure and system, one narrow table per measure of a breakdown."""
    console.print(f"[bold]{escape(_header(comparison))}[/bold]")
    for system, rows in _by_system(comparison.comparisons).items():
        table = Table(
            title=f"{system} vs {comparison.baseline}",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            collapse_padding=True,
            show_edge=False,  # the two edge columns are what 120 columns lack
        )
        for index, name in enumerate(main_header(rows, compact=True)):
            table.add_column(name, justify="left" if index == 0 else "right", no_wrap=True)
        cells = [_main_cells(row, 3, compact=True) for row in rows]
        for row, row_cells in zip(rows, cells, strict=True):
            table.add_row(*map(escape, row_cells), style=STYLES[row.verdict])
        if fits(console, table):
            console.print(table)
        else:
            print_blocks(
                console,
                f"{system} vs {comparison.baseline}",
                main_header(rows, compact=True),
                cells,
                [STYLES[row.verdict] for row in rows],
                [row.verdict for row in rows],
            )
    console.print(escape(_legend(comparison, compact=True)), style="dim", highlight=False)
    for line in summary_lines(comparison):
        console.print(escape(line), highlight=False)
    measures = [m.name for m in comparison.measures][:TERMINAL_MEASURES]
    for grouping in ("category", "intent"):
        groups = [r for r in comparison.breakdowns if r.grouping == grouping]
        if not groups:
            continue
        header, cells = _group_rows(groups, measures)
        more = len(comparison.measures) - len(measures)
        title = f"by {grouping}" + (f" (first {len(measures)} measures)" if more else "")
        by_group = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
        for index, name in enumerate(header):
            by_group.add_column(name, justify="left" if index < 2 else "right", no_wrap=True)
        for cell_row in cells:
            by_group.add_row(*map(escape, cell_row))
        if fits(console, by_group):
            console.print(by_group)
        else:
            print_group_tables(console, title, header, cells)
    if comparison.rank_differences:
        ranks = Table(title="rank differences", box=box.SIMPLE_HEAD, pad_edge=False)
        for index, name in enumerate(RANK_HEADER):
            ranks.add_column(name, justify="left" if index == 0 else "right")
        for diff in comparison.rank_differences:
            ranks.add_row(*map(escape, _rank_row(diff)))
        if fits(console, ranks):
            console.print(ranks)
        else:
            rank_rows = [_rank_row(diff) for diff in comparison.rank_differences]
            print_blocks(console, "rank differences", RANK_HEADER, rank_rows)
        for diff in comparison.rank_differences:
            changed = [c for c in diff.most_changed if c.rank_class != "identical"]
            if changed:
                shown = ", ".join(
                    f"{c.query_id} (τ {c.kendall_tau:+.2f}, J {c.jaccard:.2f})"
                    for c in changed[:MOST_CHANGED_SHOWN]
                )
                console.print(escape(f"most changed in {diff.system}: {shown}"), highlight=False)
    for warning in comparison.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False)


def render_comparison_markdown(comparison: Comparison, compared: Sequence[Compared] = ()) -> str:
    """comparison.md: the same content as the terminal, with every method in words; with
    the compared systems' per-query values (``compared``), what changed query by query."""
    lines = [
        f"# Comparison: {md_text(comparison.baseline)} as baseline",
        "",
        md_text(_header(comparison) + "."),
        "",
    ]
    lines += [f"- {md_text(line)}" for line in summary_lines(comparison)]
    for system, rows in _by_system(comparison.comparisons).items():
        lines += ["", f"## {md_text(system)} vs {md_text(comparison.baseline)}", ""]
        lines += md_table(main_header(rows), (_main_cells(row) for row in rows))
    lines += ["", md_text(_legend(comparison))]
    measures = [m.name for m in comparison.measures]
    for grouping in ("category", "intent"):
        groups = [r for r in comparison.breakdowns if r.grouping == grouping]
        if groups:
            header, cells = _group_rows(groups, measures)
            lines += ["", f"## By {grouping}", "", *md_table(header, cells)]
            lines += ["", "Marks from the adjusted randomisation p-value within this breakdown."]
    if comparison.rank_differences:
        lines += ["", "## Rank differences", ""]
        lines += md_table(RANK_HEADER, (_rank_row(d) for d in comparison.rank_differences))
        for diff in comparison.rank_differences:
            lines += ["", md_text(f"Most changed queries of {diff.system} (k={diff.k}):"), ""]
            lines += md_table(
                ["query", "τ", "Jaccard", "top-1 changed", "positions changed", "class", "text"],
                (
                    [
                        c.query_id,
                        f"{c.kendall_tau:+.3f}",
                        f"{c.jaccard:.3f}",
                        "yes" if c.top1_changed else "no",
                        str(c.position_changes),
                        c.rank_class,
                        c.text[:80],
                    ]
                    for c in diff.most_changed
                ),
            )
    lines += what_changed_markdown(comparison, compared)
    if comparison.warnings:
        lines += ["", "## Warnings", "", *(f"- {md_text(w)}" for w in comparison.warnings)]
    lines += ["", "## Methods", "", *(f"- **{k}**: {v}" for k, v in comparison.methods.items())]
    return "\n".join(lines) + "\n"


def changes_line(changes: WhatChanged) -> str:
    """``of 120 paired queries, 14 got worse, 30 better, 76 unchanged; mean Δ +0.0123``."""
    return (
        f"of {changes.compared} paired queries, {len(changes.worse)} got worse, "
        f"{len(changes.better)} better, {changes.unchanged} unchanged; "
        f"mean Δ {signed(changes.mean_delta)}"
    )


def what_changed_markdown(comparison: Comparison, compared: Sequence[Compared]) -> list[str]:
    """Per system, the queries that got worse and better than the baseline: every measure
    in a line, the first in detail (by category, the largest changes of each side)."""
    from recallbench.render._html import comparison_changes

    baseline = next((c for c in compared if c.label == comparison.baseline), None)
    if baseline is None:
        return []
    texts = {q.id: q.text for q in baseline.report.queries}
    lines: list[str] = []
    for other in compared:
        if other is baseline:
            continue
        per_measure = comparison_changes(comparison, baseline, other)
        first, changes = next(iter(per_measure.items()))
        title = f"What changed: {other.label} vs {comparison.baseline}"
        lines += ["", f"## {md_text(title)}", ""]
        lines.append(
            "Per query, Δ = system − baseline; worse and better in each measure's direction."
        )
        lines += ["", *(f"- {md_text(f'{m}: {changes_line(c)}')}" for m, c in per_measure.items())]
        lines += ["", f"### By category ({md_text(first)})", ""]
        lines += md_table(
            [
                "category",
                "queries",
                "worse",
                "mean Δ of worse",
                "better",
                "mean Δ of better",
                "mean Δ",
            ],
            (
                [
                    c.category,
                    str(c.compared),
                    str(c.worse),
                    signed(c.worse_delta),
                    str(c.better),
                    signed(c.better_delta),
                    signed(c.mean_delta),
                ]
                for c in changes.categories
            ),
        )
        for side, listed in (("worse", changes.worse), ("better", changes.better)):
            lines += ["", f"### Got {side} ({md_text(first)}), largest first", ""]
            lines += _changed_queries(listed, texts) if listed else [f"No query got {side}."]
    return lines


def _changed_queries(listed: Sequence[QueryChange], texts: dict[str, str]) -> list[str]:
    rows = [
        [
            md_code(c.query_id),
            signed(c.delta),
            plain(c.first),
            plain(c.second),
            md_text(", ".join(c.categories)),
            md_text(texts.get(c.query_id, "")[:80]),
        ]
        for c in listed[:WHAT_CHANGED_SHOWN]
    ]
    header = ["query", "Δ", "baseline", "system", "category", "text"]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]
    if len(listed) > WHAT_CHANGED_SHOWN:
        lines += ["", f"… and {len(listed) - WHAT_CHANGED_SHOWN} more."]
    return lines
