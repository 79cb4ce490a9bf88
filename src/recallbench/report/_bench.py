"""Leaderboards of several systems on several datasets: overall (with rank ranges and
intervals, see :mod:`._leaderboard`), per category, and with and without flagged questions
(LoCoMo's adversarial ones), as Markdown and JSON.

leaderboard.json: ``context`` (command, version, date, machine) and ``datasets``, one per
board, each with the fields of a single leaderboard (``format``, ``ranking``, ``interval``,
``dataset``; per system ``rank``, ``means``, ``intervals``, ``counts``, ``latency_ms``) plus
``measures`` (name, definition, direction), ``saturated``, ``warnings`` and per system
``without`` (the ranking measure's mean without each flagged tag's questions) and
``by_category`` (n and means per category)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from recallbench.core import Dataset
from recallbench.core._files import atomic_write_text
from recallbench.report._escape import md_code, md_text
from recallbench.report._html import render_leaderboard_html
from recallbench.report._leaderboard import (
    Standings,
    markdown_table,
    method_lines,
    safe_name,
    standings,
)
from recallbench.report._markdown import fmt
from recallbench.report._model import Report

SATURATED = 0.95
"""A measure on which every system scores at least this no longer separates them."""


def saturated(reports: Sequence[Report], threshold: float = SATURATED) -> list[str]:
    """Measures (higher is better) on which every system's mean is >= ``threshold``."""
    found = []
    for info in reports[0].measures if reports else []:
        means = [report.means.get(info.name) for report in reports]
        if info.higher_is_better and all(m is not None and m >= threshold for m in means):
            found.append(info.name)
    return found


def mean_without(report: Report, measure: str, left_out: set[str]) -> float | None:
    """The measure's mean over the queries it counts, leaving out ``left_out``."""
    values = [
        value
        for query in report.queries
        if query.id not in left_out and (value := query.values.get(measure)) is not None
    ]
    return float(np.mean(values)) if values else None


@dataclass(frozen=True)
class Board:
    """One dataset's results: the dataset and each system's report, best first."""

    dataset: Dataset
    reports: Sequence[Report]

    @property
    def primary(self) -> str:
        return self.reports[0].measures[0].name

    @cached_property
    def standings(self) -> Standings:
        """Best first, with rank ranges and intervals (computed once: resampling)."""
        return standings(self.reports)

    def ordered(self) -> list[Report]:
        return self.standings.reports

    def flagged(self) -> dict[str, set[str]]:
        """Tag -> queries carrying it, for the tags a loader flags (adversarial)."""
        tags: dict[str, set[str]] = {}
        for query in self.dataset.queries:
            for tag in query.tags:
                if tag == "adversarial":
                    tags.setdefault(tag, set()).add(query.id)
        return tags

    def categories(self) -> list[str]:
        return sorted({q.category for q in self.dataset.queries if q.category is not None})


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A table of plain-text cells (each escaped: names are data)."""
    return [
        "| " + " | ".join(map(md_text, header)) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(map(md_text, row)) + " |" for row in rows),
    ]


def _group_mean(report: Report, category: str, measure: str) -> float | None:
    for group in report.breakdowns.get("category", []):
        if group.name == category:
            return group.means.get(measure)
    return None


def board_markdown(board: Board) -> list[str]:
    """One dataset's section: overall table, flagged questions, per category, warnings."""
    first = board.reports[0]
    ref = first.dataset
    lines = [
        f"## {md_text(ref.name)}",
        "",
        f"sha256 `{ref.sha256[:16]}…`"
        + (f", loader {md_code(ref.loader)}" if ref.loader else "")
        + f"; {first.counts.queries} questions, {first.counts.evaluated} with a relevant "
        f"memory (the means), {first.counts.no_relevant} without"
        + (f"; {len(board.dataset.units)} units, each a fresh store" if board.dataset.units else "")
        + f"; k = {first.system.k}.",
        "",
    ]
    lines += [*markdown_table(board.standings), "", *method_lines(board.standings)]
    for tag, ids in board.flagged().items():
        lines += [
            "",
            md_text(f"{board.primary} with and without the {len(ids)} {tag} questions:"),
            "",
            *_table(
                ["system", "all", f"without {tag}"],
                [
                    [
                        r.system.system,
                        fmt(r.means.get(board.primary)),
                        fmt(mean_without(r, board.primary, ids)),
                    ]
                    for r in board.ordered()
                ],
            ),
        ]
    categories = board.categories()
    if categories:
        lines += ["", f"{board.primary} by category (n = questions in the mean):", ""]
        counts = {g.name: g.n for g in first.breakdowns.get("category", [])}
        header = ["system", *(f"{c} (n={counts.get(c, 0)})" for c in categories)]
        lines += _table(
            header,
            [
                [r.system.system, *(fmt(_group_mean(r, c, board.primary), 3) for c in categories)]
                for r in board.ordered()
            ],
        )
    notes = [
        *(
            f"every system scores >= {SATURATED} on {m}: it no longer separates them"
            for m in saturated(board.reports)
        ),
        *first.warnings,
    ]
    if notes:
        lines += ["", *(f"- **warning:** {md_text(note)}" for note in notes)]
    return [*lines, ""]


def board_json(board: Board) -> dict[str, object]:
    first = board.reports[0]
    return {
        "dataset": first.dataset.model_dump(mode="json"),
        "measures": [m.model_dump() for m in first.measures],
        "saturated": saturated(board.reports),
        "warnings": first.warnings,
        **board.standings.about_json(),
        "systems": [
            {
                **board.standings.system_json(r),
                "without": {
                    tag: mean_without(r, board.primary, ids) for tag, ids in board.flagged().items()
                },
                "by_category": {
                    g.name: {"n": g.n, "means": g.means} for g in r.breakdowns.get("category", [])
                },
                "counts": r.counts.model_dump(),
                "latency_ms": r.latency_ms.model_dump() if r.latency_ms else None,
            }
            for r in board.ordered()
        ],
    }


def write_bench(folder: Path, boards: Sequence[Board], context: Mapping[str, str]) -> list[Path]:
    """leaderboard.md, leaderboard.json and leaderboard.html for all the boards;
    ``context`` (machine, command, version...) heads the Markdown and the page."""
    lines = ["# recallbench leaderboard", ""]
    lines += [f"- {md_text(key)}: {md_text(value)}" for key, value in context.items()]
    lines += [""]
    for board in boards:
        lines += board_markdown(board)
    document = {"context": dict(context), "datasets": [board_json(b) for b in boards]}
    written = {
        folder / "leaderboard.md": "\n".join(lines),
        folder / "leaderboard.json": json.dumps(document, indent=2) + "\n",
        folder / "leaderboard.html": render_leaderboard_html(
            [(b.standings, f"{safe_name(b.dataset.name)}/") for b in boards], context
        ),
    }
    for path, text in written.items():
        atomic_write_text(path, text)
    return list(written)
