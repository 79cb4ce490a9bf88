"""The calibration in the terminal and as Markdown and JSON files: the same sections,
each naming the judge, the intervals and what was left out, and the same warnings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from recallbench.judges._agreement import GRADES
from recallbench.judges._calibrate_model import Calibration, Coverage, Estimate, Ranking

if TYPE_CHECKING:
    from rich.console import Console

SOURCES = (
    "Cohen, J. (1960). A coefficient of agreement for nominal scales. Educ. Psychol. Meas. "
    "20(1), 37-46.",
    "Cohen, J. (1968). Weighted kappa. Psychol. Bull. 70(4), 213-220.",
    "Kendall, M. G. (1945). The treatment of ties in ranking problems. Biometrika 33(3), 239-251.",
    "Angelopoulos, A. N., Bates, S., Fannjiang, C., Jordan, M. I. & Zrnic, T. (2023). "
    "Prediction-powered inference. Science 382(6671), 669-674.",
    "Angelopoulos, A. N., Duchi, J. C. & Zrnic, T. (2024). PPI++: Efficient "
    "prediction-powered inference. arXiv:2311.01453.",
    "Landis, J. R. & Koch, G. G. (1977). The measurement of observer agreement for "
    "categorical data. Biometrics 33(1), 159-174.",
)


@dataclass(frozen=True, slots=True)
class _Section:
    """One table, as both renderers show it (the first column is left-aligned)."""

    title: str
    header: list[str]
    rows: list[list[str]]
    caption: str = ""


def _num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _interval(low: float | None, high: float | None) -> str:
    return "—" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def _with_interval(estimate: Estimate | None) -> str:
    """A normal interval is symmetric: estimate ± half-width says it in fewer columns."""
    if estimate is None:
        return "—"
    return f"{estimate.estimate:.3f} ± {(estimate.high - estimate.low) / 2:.3f}"


def _failures(coverage: Coverage) -> str:
    if not coverage.failed:
        return "none"
    return ", ".join(f"{reason} {count}" for reason, count in coverage.failed.items())


def _cost(calibration: Calibration) -> str:
    """Spent now (a replayed judgment costs nothing) and recorded (what the judgments cost
    when they were asked), never one passed off as the other."""
    coverage, spent = calibration.coverage, calibration.spent
    tokens = f"{coverage.tokens_in:,} tokens in, {coverage.tokens_out:,} out"
    if coverage.cost_usd is None:
        recorded = f"recorded {tokens} (no price configured)"
    else:
        recorded = f"recorded ${coverage.cost_usd:.4f} ({tokens}, when asked)"
    if spent is None:
        return recorded
    calls = f"{spent.calls:,} calls made, {spent.replayed:,} replayed"
    if spent.cost_usd is None:
        now = f"spent now: {calls}"
    else:
        now = f"spent now ${spent.cost_usd:.4f} ({calls})"
    return f"{now}; {recorded}"


def _tau(r: Ranking) -> str:
    """Kendall's tau with the quadratic kappa beside it, always: tau alone can be 1.0 for a
    judge that inverts grades."""
    left_out = f" ({r.dropped_queries} left out)" if r.dropped_queries else ""
    return (
        f"Kendall's τ-b = {_num(r.tau)} {_interval(r.low, r.high)} over {r.queries} "
        f"queries{left_out}, beside quadratic κ = {_num(r.kappa_quadratic)} "
        f"{_interval(r.kappa_low, r.kappa_high)} on the labelled pairs. τ compares only the "
        "systems' order, which a judge that inverts grades can keep (τ 1.0 at κ −0.75): "
        "read it with κ."
    )


def _headline(calibration: Calibration) -> str:
    coverage = calibration.coverage
    flag = " (unreliable: above the allowed failure rate)" if coverage.unreliable else ""
    return (
        f"{coverage.judged:,} of {coverage.pairs:,} human-labelled pairs judged; failed: "
        f"{_failures(coverage)} ({coverage.failure_rate:.1%}){flag}"
    )


_PPI = ("PPI", "PPI++")


def _sections(c: Calibration) -> list[_Section]:
    level = f"{c.level:.0%} interval"
    sections = []
    if c.kappas:
        sections.append(
            _Section(
                "Cohen's κ: people against the judge",
                ["labels", "κ", level, "pairs"],
                [
                    [
                        f"binary (grade ≥ {c.relevance_threshold})"
                        if k.labels == "binary"
                        else f"0-3, {k.weighting}",
                        _num(k.value),
                        _interval(k.low, k.high),
                        str(k.pairs),
                    ]
                    for k in c.kappas
                ],
            )
        )
    if c.confusion is not None:
        sections.append(
            _Section(
                "Confusion matrix (rows: people, columns: the judge)",
                ["", *(f"judge {grade}" for grade in GRADES), "total"],
                [
                    [f"people {grade}", *(str(count) for count in row), str(sum(row))]
                    for grade, row in zip(GRADES, c.confusion, strict=True)
                ],
            )
        )
    if c.categories:
        sections.append(
            _Section(
                "Agreement by query category",
                ["category", "pairs", "same grade", "κ quadratic", "κ binary"],
                [
                    [
                        group.category,
                        str(group.pairs),
                        f"{group.agreement:.1%}",
                        _num(group.kappa_quadratic),
                        _num(group.kappa_binary),
                    ]
                    for group in c.categories
                ],
            )
        )
    if c.ranking is not None:
        r = c.ranking
        sections.append(
            _Section(
                f"System ranking by {r.measure}: people's labels against the judge's",
                ["system", "people", "rank", "judge", "rank"],
                [
                    [s.system, _num(s.human), str(s.human_rank), _num(s.judge), str(s.judge_rank)]
                    for s in r.systems
                ],
                _tau(r),
            )
        )
    if c.ppi is not None:
        p = c.ppi
        caption = (
            f"{p.labelled} of {p.queries} queries treated as labelled by people (seed "
            f"{p.seed}), {p.unlabelled} judged only; each cell: estimate ± half the {level}."
        )
        sections.append(
            _Section(
                f"Means of {p.measure}: prediction-powered and classical",
                ["system", "people, all queries", "classical (sample)", "judge only", *_PPI],
                [
                    [
                        m.system,
                        _with_interval(m.target),
                        _with_interval(m.classical),
                        _with_interval(m.judge_only),
                        _with_interval(m.ppi),
                        _with_interval(m.ppi_tuned),
                    ]
                    for m in p.systems
                ],
                caption + (f" {p.note}" if p.note else ""),
            )
        )
    return sections


def _preamble(c: Calibration) -> list[str]:
    lines = [
        f"Judge: {c.judge.label}; "
        + ", ".join(f"{name} {value}" for name, value in c.judge.params.items()),
        f"Dataset: {c.dataset.name} {c.dataset.version} (sha256 {c.dataset.sha256[:12]}), "
        f"relevance threshold {c.relevance_threshold}",
        f"Coverage: {_headline(c)}",
        f"Judge cost: {_cost(c)}",
        f"Intervals: {c.interval_method}",
    ]
    if c.judge.answered_by:
        lines.insert(1, f"Answers carried the model names {', '.join(c.judge.answered_by)}")
    return lines


def render_calibration_markdown(calibration: Calibration) -> str:
    """calibration.md: every number with its judge, interval and caveats."""
    c = calibration
    lines = [f"# Judge calibration: {c.judge.model} on {c.dataset.name}", ""]
    lines += [f"- {line}" for line in _preamble(c)]
    lines += [f"- Made {c.created_at.isoformat(timespec='seconds')}", ""]
    if c.warnings:
        lines += ["## Warnings", ""]
        lines += [f"- **{w.code}**: {w.message}" for w in c.warnings]
        lines.append("")
    for section in _sections(c):
        lines += [f"## {section.title}", ""]
        if section.caption:
            lines += [section.caption, ""]
        lines.append("| " + " | ".join(section.header) + " |")
        lines.append("|" + "|".join("---" for _ in section.header) + "|")
        lines += ["| " + " | ".join(row) + " |" for row in section.rows]
        lines.append("")
    if c.notes:
        lines += ["## Notes", "", *(f"- {note}" for note in c.notes), ""]
    lines += ["## Sources", "", *(f"- {source}" for source in SOURCES), ""]
    return "\n".join(lines)


def render_calibration(calibration: Calibration, console: Console) -> None:
    """The same on a terminal, as rich tables."""
    from rich.markup import escape
    from rich.table import Table

    c = calibration
    console.print(f"[bold]Judge calibration on {escape(c.dataset.name)}[/bold]", highlight=False)
    for line in _preamble(c):
        bad = line.startswith("Coverage") and (c.coverage.unreliable or not c.computable)
        console.print(escape(line), style="bold red" if bad else None, highlight=False)
    for warning in c.warnings:
        console.print(f"warning: {escape(warning.message)}", style="bold yellow", highlight=False)
    for section in _sections(c):
        console.print(f"[bold]{escape(section.title)}[/bold]", highlight=False)
        if section.caption:  # a line of its own: a table caption wraps at the table's width
            console.print(escape(section.caption), highlight=False)
        table = Table()
        for index, header in enumerate(section.header):
            table.add_column(header, justify="left" if index == 0 else "right")
        for row in section.rows:
            table.add_row(*(escape(cell) for cell in row))
        console.print(table)
    for note in c.notes:
        console.print(f"note: {escape(note)}", highlight=False)


def calibration_files(calibration: Calibration) -> dict[str, str]:
    """calibration.json and calibration.md, rendered (written together by the caller)."""
    return {
        "calibration.json": calibration.model_dump_json(indent=2) + "\n",
        "calibration.md": render_calibration_markdown(calibration),
    }
