"""The QA report in the terminal and as Markdown: the same tables, the rules beside them."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from recallbench.qa._report import Mean, QAReport
from recallbench.report._escape import md_text

COLUMNS = {
    "j_strict": "J strict",
    "j_lenient": "J lenient",
    "f1": "F1",
    "bleu1": "BLEU-1",
    "evidence_recall": "evidence recall",
}
POPULATION_TITLES = {
    "answerable": "answerable questions only (LoCoMo categories 1-4, as mem0 reports)",
    "all": "every question (unanswerable ones correct when the answer declines)",
}


def _mean(mean: Mean) -> str:
    if mean.mean is None:
        return "–"
    if mean.low is None or mean.high is None:
        return f"{mean.mean:.3f}"
    return f"{mean.mean:.3f} [{mean.low:.3f}, {mean.high:.3f}]"


def _value(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _system(name: str, k: int | None) -> str:
    return name if k is None else f"{name} (top {k})"


def _tables(report: QAReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of every table, shared by both renderers."""
    tables = []
    for population, title in POPULATION_TITLES.items():
        rows = [
            [_system(s.system, s.k), str(s.populations[population]["j_strict"].n)]
            + [_mean(s.populations[population][m]) for m in COLUMNS]
            for s in report.systems
        ]
        tables.append((f"{title}; 95% BCa intervals", ["system", "n", *COLUMNS.values()], rows))
    rows = [
        [_system(s.system, s.k), row.category, str(row.category_id or "–"), str(row.n)]
        + [_value(row.means[m]) for m in COLUMNS]
        for s in report.systems
        for row in s.categories
    ]
    tables.append(("by category", ["system", "category", "id", "n", *COLUMNS.values()], rows))
    adversarial = [
        [
            _system(s.system, s.k),
            str(s.adversarial.n),
            _value(s.adversarial.abstained),
            f"{_value(s.adversarial.trap_taken)} of {s.adversarial.trap_questions}"
            + (
                f" ({s.adversarial.trap_unjudged} unjudged, 0.5 each)"
                if s.adversarial.trap_unjudged
                else ""
            ),
        ]
        for s in report.systems
        if s.adversarial is not None
    ]
    if adversarial:
        tables.append(
            (
                "unanswerable questions: declined, and trap answer taken",
                ["system", "n", "declined", "trap taken"],
                adversarial,
            )
        )
    calls = [
        [
            c.task,
            c.prompt,
            c.model,
            str(c.calls),
            str(c.replayed),
            f"{sum(c.failed.values())} ({c.failure_rate:.1%}"
            + (", UNRELIABLE)" if c.unreliable else ")"),
            f"{c.tokens_in + c.tokens_out:,}",
            f"${c.cost_usd:.4f}",
        ]
        for c in report.calls
    ]
    tables.append(
        (
            "model calls",
            ["task", "prompt", "model", "asked", "replayed", "failed", "tokens", "cost"],
            calls,
        )
    )
    return tables


def _preamble(report: QAReport) -> list[str]:
    categories = ", ".join(f"{key} {name}" for key, name in report.category_map.items())
    lines = [
        f"reader: {report.reader}; judge: {report.judge}",
        *(f"{name}: {rule}" for name, rule in report.rules.items()),
    ]
    if categories:
        lines.append(f"category map: {categories}")
    if report.agreement is not None and report.agreement.share is not None:
        agreement = report.agreement
        lines.append(
            f"agreement with {agreement.previous}: {agreement.same} of {agreement.compared} "
            f"strict verdicts the same ({agreement.share:.1%})"
        )
    return lines


def render_terminal(report: QAReport, console: Console) -> None:
    console.print(
        f"[bold]QA on {report.dataset.name}[/bold] ({report.dataset.version}, sha256 "
        f"{report.dataset.sha256[:12]})"
    )
    for line in _preamble(report):
        console.print(line, highlight=False)
    for title, header, rows in _tables(report):
        table = Table(title=title)
        for index, name in enumerate(header):
            table.add_column(name, justify="left" if index < 2 else "right")
        for row in rows:
            table.add_row(*row)
        console.print(table)


def render_markdown(report: QAReport) -> str:
    lines = [
        f"# QA on {md_text(report.dataset.name)} {md_text(report.dataset.version)}",
        "",
        *(f"- {md_text(line)}" for line in _preamble(report)),
        f"- intervals: {md_text(report.intervals)}",
        "",
    ]
    for title, header, rows in _tables(report):
        lines += [f"## {title[0].upper()}{title[1:]}", ""]
        lines.append("| " + " | ".join(map(md_text, header)) + " |")
        lines.append("|" + "---|" * len(header))
        lines += ["| " + " | ".join(map(md_text, row)) + " |" for row in rows]
        lines.append("")
    return "\n".join(lines)
