"""Several systems on one dataset: a leaderboard (terminal, Markdown, JSON).

Systems are listed best first by the first measure; each carries its rank range on that
measure (``"1–2"``: the data cannot order those systems, see :mod:`._ranks`) and the 95%
bootstrap interval of every mean its report holds (``Report.intervals``; an interval over
fewer than ``Report.bootstrap.small_n`` queries is marked ``*``: it tends to under-cover).

leaderboard.json, version 2 (``"format": "recallbench.leaderboard/v2"``):

- ``dataset``: the dataset's reference (name, version, sha256, loader).
- ``ranking``: how the ranks were made: ``measure`` (the first measure), ``alpha``,
  ``correction`` ("holm"), ``test``, ``resamples``, ``seed``, ``method`` (in words) and
  ``pairs``: every pair of systems with ``n`` paired queries, ``delta`` (first - second),
  raw ``p``, Holm ``p_adjusted`` and ``better`` (the significantly better one, or null).
- ``interval``: how the intervals were made, in words (the reports' ``bootstrap``).
- ``systems``, best first, each with ``system``, ``rank`` (``low``, ``high``, ``label``),
  ``means``, ``intervals`` (measure -> ``n``, ``low``, ``high``, ``small``, ``reason``, as
  in report.json; ``low`` and ``high`` null where there is none), ``counts``,
  ``latency_ms``, ``scores`` (whether the system returned scores) and ``report`` (its
  report.json, relative to the leaderboard).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from recallbench.core._files import atomic_write_text
from recallbench.report._escape import md_text
from recallbench.report._markdown import fmt
from recallbench.report._model import Report
from recallbench.report._ranks import Ranking, rank_reports
from recallbench.stats._paired import PairedSettings

LEADERBOARD_FORMAT = "recallbench.leaderboard/v2"


def safe_name(name: str) -> str:
    """A system name usable as a folder name."""
    return re.sub(r"[^\w.\-]+", "_", name) or "system"


def best_first(reports: Sequence[Report]) -> list[Report]:
    """Best first by the first measure (in its direction; missing values last), then by
    system name."""
    info = reports[0].measures[0]
    sign = -1.0 if info.higher_is_better else 1.0

    def key(report: Report) -> tuple[float, str]:
        value = report.means.get(info.name)
        return (sign * value if value is not None else float("inf"), report.system.system)

    return sorted(reports, key=key)


def interval_method(report: Report) -> str:
    if report.bootstrap is None:
        return "no intervals (reports made before intervals were added)"
    return report.bootstrap.description


@dataclass(frozen=True)
class Standings:
    """Reports best first and their rank ranges on the first measure."""

    reports: list[Report]
    ranking: Ranking

    @property
    def measures(self) -> list[str]:
        return [m.name for m in self.reports[0].measures]

    def interval(self, report: Report, measure: str) -> str:
        """``low–high`` of the mean's interval, ``*`` when over few queries, ``–`` if none."""
        found = report.intervals.get(measure)
        if found is None or found.low is None or found.high is None:
            return "–"
        return f"{fmt(found.low)}–{fmt(found.high)}" + ("*" if found.small else "")

    def system_json(self, report: Report) -> dict[str, object]:
        """The fields every leaderboard gives a system (rank, means, intervals)."""
        name = report.system.system
        standing = next(s for s in self.ranking.standings if s.system == name)
        return {
            "system": name,
            "rank": {"low": standing.low, "high": standing.high, "label": standing.label},
            "means": report.means,
            "intervals": {m: i.model_dump() for m, i in report.intervals.items()},
        }

    def about_json(self) -> dict[str, object]:
        return {
            "format": LEADERBOARD_FORMAT,
            "ranking": self.ranking.to_json(),
            "interval": interval_method(self.reports[0]),
        }


def standings(reports: Sequence[Report], settings: PairedSettings | None = None) -> Standings:
    """Order, rank and interval ``reports`` (one per system, on one dataset)."""
    settings = settings or PairedSettings()
    ordered = best_first(reports)
    return Standings(ordered, rank_reports(ordered, settings=settings))


def _rows(board: Standings) -> tuple[list[str], list[list[str]]]:
    measures = board.measures
    header = ["rank", "system", measures[0], "95% CI", *measures[1:]]
    header += ["p50 ms", "failed", "scores"]
    rows = [
        [
            board.ranking.label(report.system.system),
            report.system.system,
            fmt(report.means.get(measures[0])),
            board.interval(report, measures[0]),
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
    from recallbench.report._html import render_leaderboard_html  # _html imports this module

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
    document = {
        **board.about_json(),
        "dataset": first.dataset.model_dump(mode="json"),
        "systems": [
            {
                **board.system_json(r),
                "counts": r.counts.model_dump(),
                "latency_ms": r.latency_ms.model_dump() if r.latency_ms else None,
                "scores": r.system_scores,
                "report": f"{safe_name(r.system.system)}/report.json",
            }
            for r in board.reports
        ],
    }
    written = {
        folder / "leaderboard.md": "\n".join(lines) + "\n",
        folder / "leaderboard.json": json.dumps(document, indent=2) + "\n",
        folder / "leaderboard.html": render_leaderboard_html([(board, "")]),
    }
    for path, text in written.items():
        atomic_write_text(path, text)
    return list(written)
