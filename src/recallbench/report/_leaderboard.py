"""Several systems on one dataset: the standings of a leaderboard and its JSON.

Systems are listed best first by the first measure; each carries its rank range on that
measure (``"1–2"``: the data cannot order those systems, see :mod:`._ranks`) and the 95%
bootstrap interval of every mean its report holds (``Report.intervals``; an interval over
fewer than ``Report.bootstrap.small_n`` queries is marked ``*``: it tends to under-cover).
The views (terminal, Markdown, HTML) are in :mod:`recallbench.render`.

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

import re
from collections.abc import Sequence
from dataclasses import dataclass

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


def leaderboard_json(board: Standings) -> dict[str, object]:
    """leaderboard.json (see the module's docstring): each system's report.json is
    ``<safe_name(system)>/report.json`` beside it."""
    first = board.reports[0]
    return {
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
