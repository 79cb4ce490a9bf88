"""Several systems on one dataset: a leaderboard (terminal, Markdown, JSON)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from recallbench.core._files import atomic_write_text
from recallbench.report._markdown import fmt
from recallbench.report._model import Report


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


def _rows(reports: Sequence[Report]) -> tuple[list[str], list[list[str]]]:
    measures = [m.name for m in reports[0].measures]
    header = ["system", *measures, "p50 ms", "failed", "scores"]
    rows = [
        [
            report.system.system,
            *(fmt(report.means.get(m)) for m in measures),
            f"{report.latency_ms.p50:.2f}" if report.latency_ms else "–",
            str(report.counts.failed),
            "yes" if report.system_scores else "no",
        ]
        for report in best_first(reports)
    ]
    return header, rows


TERMINAL_MEASURES = 5
"""The terminal shows the first measures only (the Markdown and JSON have them all)."""


def render_leaderboard(reports: Sequence[Report], console: Console) -> None:
    header, rows = _rows(reports)
    measures = len(header) - 4  # system, measures..., p50, failed, scores
    shown = [0, *range(1, 1 + min(measures, TERMINAL_MEASURES)), *range(1 + measures, len(header))]
    title = f"leaderboard on {reports[0].dataset.name} (n={reports[0].counts.evaluated})"
    table = Table(title=title)
    for index in shown:
        if index == 0:
            table.add_column(header[index], no_wrap=True)
        else:
            table.add_column(header[index], justify="right")
    for row in rows:
        table.add_row(*(row[index] for index in shown))
    console.print(table)


def write_leaderboard(folder: Path, reports: Sequence[Report]) -> list[Path]:
    """leaderboard.md and leaderboard.json beside the systems' own folders."""
    header, rows = _rows(reports)
    lines = [
        f"# Leaderboard: {reports[0].dataset.name} {reports[0].dataset.version}",
        "",
        "Means over the same queries; best first by " + header[1] + ".",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    document = {
        "dataset": reports[0].dataset.model_dump(mode="json"),
        "systems": [
            {
                "system": r.system.system,
                "means": r.means,
                "counts": r.counts.model_dump(),
                "latency_ms": r.latency_ms.model_dump() if r.latency_ms else None,
                "scores": r.system_scores,
                "report": f"{safe_name(r.system.system)}/report.json",
            }
            for r in best_first(reports)
        ],
    }
    written = {
        folder / "leaderboard.md": "\n".join(lines) + "\n",
        folder / "leaderboard.json": json.dumps(document, indent=2) + "\n",
    }
    for path, text in written.items():
        atomic_write_text(path, text)
    return list(written)
