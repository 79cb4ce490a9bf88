"""Views of a leaderboard (several systems on one dataset): the terminal table, the
Markdown table and its method lines, and the writing of leaderboard.md, leaderboard.json and
leaderboard.html. The standings they show are :mod:`recallbench.report._leaderboard`'s."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from recallbench.core._files import atomic_write_text
from recallbench.render._html import render_leaderboard_html
from recallbench.render._markdown import fmt
from recallbench.report._escape import md_text
from recallbench.report._leaderboard import Standings, interval_method, leaderboard_json
from recallbench.report._model import Report


def interval_cell(report: Report, measure: str) -> str:
    """``low–high`` of the mean's interval, ``*`` when over few queries, ``–`` if none."""
    found = report.intervals.get(measure)
    if found is None or found.low is None or found.high is None:
        return "–"
    return f"{fmt(found.low)}–{fmt(found.high)}" + ("*" if found.small else "")


def _rows(board: Standings) -> tuple[list[str], list[list[str]]]:
    measures = board.measures
    header = ["rank", "system", measures[0], "95% CI", *measures[1:]]
    header += ["p50 ms", "failed", "scores"]
    rows = [
        [
            board.ranking.label(report.system.system),
            report.system.system,
            fmt(report.means.get(measures[0])),
            interval_cell(report, measures[0]),
            *(fmt(report.means.get(m)) for m in measures[1:]),
            f"{report.latency_ms.p50:.2f}" if report.latency_ms else "–",
            str(report.counts.failed),
            "yes" if report.system_scores else "no",
        ]
        for report in board.reports
    ]
    return header, rows


TERMINAL_MEASURES = 5
"""The terminal shows the first measures only (the Markdown and JSON have them all), fewer
when the terminal is too narrow for them."""


def _terminal_columns(header: list[str], rows: list[list[str]], width: int) -> list[int]:
    """Indices of the columns to show: rank, system, the first measure and its interval,
    as many further measures as fit in ``width`` (at most TERMINAL_MEASURES in all), then
    latency, failures and scores."""
    extra = len(header) - 7  # rank, system, first measure, interval; p50, failed, scores
    tail = list(range(len(header) - 3, len(header)))
    for count in range(min(extra, TERMINAL_MEASURES - 1), -1, -1):
        shown = [0, 1, 2, 3, *range(4, 4 + count), *tail]
        cells = [max(len(header[i]), *(len(row[i]) for row in rows)) for i in shown]
        if sum(cells) + 3 * len(shown) + 1 <= width:  # a space each side, one border
            return shown
    return shown


def render_leaderboard(board: Standings, console: Console) -> None:
    header, rows = _rows(board)
    shown = _terminal_columns(header, rows, console.width)
    first = board.reports[0]
    title = f"leaderboard on {first.dataset.name} (n={first.counts.evaluated})"
    table = Table(title=title, caption=_caption(board), caption_justify="left")
    for index in shown:
        if index == 1:
            table.add_column(header[index], overflow="fold", min_width=8)
        else:
            table.add_column(header[index], justify="right", no_wrap=True)
    for row in rows:
        table.add_row(*(row[index] for index in shown))
    console.print(table)
    left = len(board.measures) - sum(1 for i in shown if 2 <= i < len(header) - 3 and i != 3)
    if left:
        console.print(f"{left} more measures in leaderboard.md and leaderboard.json")


def _caption(board: Standings) -> str:
    ranking = board.ranking
    return (
        f"rank: by {ranking.measure}; systems sharing a range ('1–2') are not significantly "
        f"different (paired randomisation tests, Holm over all pairs, alpha {ranking.alpha}). "
        "95% CI: bootstrap interval of the mean (*: few queries, it tends to under-cover)."
    )


def markdown_table(board: Standings) -> list[str]:
    header, rows = _rows(board)
    return [
        "| " + " | ".join(map(md_text, header)) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(map(md_text, row)) + " |" for row in rows),
    ]


def method_lines(board: Standings) -> list[str]:
    """How the ranks and intervals were made, for the Markdown."""
    return [
        f"- **rank**: {board.ranking.method()}.",
        f"- **95% CI**: {interval_method(board.reports[0])}"
        + (" `*`: fewer queries than the report's small_n, the interval tends to under-cover."),
    ]


def write_leaderboard(folder: Path, board: Standings) -> list[Path]:
    """leaderboard.md, leaderboard.json and leaderboard.html beside the systems' own
    folders (the page links to each system's report.html)."""
    first = board.reports[0]
    lines = [
        f"# Leaderboard: {md_text(first.dataset.name)} {md_text(first.dataset.version)}",
        "",
        f"Means over the same queries; best first by {board.measures[0]}, which ranks.",
        "",
        *markdown_table(board),
        "",
        *method_lines(board),
    ]
    written = {
        folder / "leaderboard.md": "\n".join(lines) + "\n",
        folder / "leaderboard.json": json.dumps(leaderboard_json(board), indent=2) + "\n",
        folder / "leaderboard.html": render_leaderboard_html([(board, "")]),
    }
    for path, text in written.items():
        atomic_write_text(path, text)
    return list(written)
