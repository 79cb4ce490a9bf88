"""Views of the leaderboards of several systems on several datasets: each board's Markdown
section (overall, with and without flagged questions, per category, warnings), and the
writing of leaderboard.md, leaderboard.json and leaderboard.html for all the boards. The
boards themselves are :mod:`recallbench.report._bench`'s."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from recallbench.core._files import atomic_write_text
from recallbench.render._html import render_leaderboard_html
from recallbench.render._leaderboard import markdown_table, method_lines
from recallbench.render._markdown import fmt
from recallbench.report._bench import SATURATED, Board, bench_json, mean_without, saturated
from recallbench.report._escape import md_code, md_table, md_text
from recallbench.report._leaderboard import safe_name
from recallbench.report._model import Report


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
            *md_table(
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
        lines += md_table(
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


def write_bench(folder: Path, boards: Sequence[Board], context: Mapping[str, str]) -> list[Path]:
    """leaderboard.md, leaderboard.json and leaderboard.html for all the boards;
    ``context`` (machine, command, version...) heads the Markdown and the page."""
    lines = ["# recallbench leaderboard", ""]
    lines += [f"- {md_text(key)}: {md_text(value)}" for key, value in context.items()]
    lines += [""]
    for board in boards:
        lines += board_markdown(board)
    written = {
        folder / "leaderboard.md": "\n".join(lines),
        folder / "leaderboard.json": json.dumps(bench_json(boards, context), indent=2) + "\n",
        folder / "leaderboard.html": render_leaderboard_html(
            [(b.standings, f"{safe_name(b.dataset.name)}/") for b in boards], context
        ),
    }
    for path, text in written.items():
        atomic_write_text(path, text)
    return list(written)
