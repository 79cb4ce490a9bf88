"""Leaderboards of several systems on several datasets: each dataset's board (its reports
best first, with rank ranges and intervals, see :mod:`._leaderboard`), the measures that no
longer separate the systems, the means without flagged questions (LoCoMo's adversarial
ones), and the boards' JSON. The views (Markdown, HTML) are in :mod:`recallbench.render`.

leaderboard.json: ``context`` (command, version, date, machine) and ``datasets``, one per
board, each with the fields of a single leaderboard (``format``, ``ranking``, ``interval``,
``dataset``; per system ``rank``, ``means``, ``intervals``, ``counts``, ``latency_ms``) plus
``measures`` (name, definition, direction), ``saturated``, ``warnings`` and per system
``without`` (the ranking measure's mean without each flagged tag's questions) and
``by_category`` (n and means per category)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from recallbench.core import Dataset
from recallbench.report._leaderboard import Standings, standings
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


def bench_json(boards: Sequence[Board], context: Mapping[str, str]) -> dict[str, object]:
    """leaderboard.json of all the boards (see the module's docstring)."""
    return {"context": dict(context), "datasets": [board_json(b) for b in boards]}
