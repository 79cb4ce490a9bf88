"""The agent-memory section of report.md: targets of the evaluation design, and what each
query missed (must-surface memories, members of a decision chain)."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

from recallbench.report._escape import md_code, md_text
from recallbench.report._model import Interval, Report

TARGETS: dict[str, tuple[str, Callable[[float, float], bool], float]] = {
    "must_surface": (">=", operator.ge, 1.0),
    "cold_start_ratio": (">=", operator.ge, 0.70),
    "chain_completeness": (">", operator.gt, 0.60),
}
"""Measure family -> the design's target for it."""

DETAIL_TITLES = {
    "must_surface": "Must-surface memories missed",
    "chain_completeness": "Decision-chain members missing",
}


@dataclass(frozen=True, slots=True)
class Target:
    """One measure of the report that the design sets a target for, met or missed."""

    measure: str
    value: float | None
    interval: str
    """Its interval as text, or why it has none."""
    target: str
    """``>= 0.7``"""
    verdict: str
    """``met``, ``missed`` or ``–`` (no value)."""


def targets(report: Report) -> list[Target]:
    """The report's measures with a target (report.md and report.html show the same)."""
    found = []
    for info in report.measures:
        family = info.name.partition("@")[0]
        if family in TARGETS:
            sign, test, target = TARGETS[family]
            value = report.means.get(info.name)
            verdict = "–" if value is None else ("met" if test(value, target) else "missed")
            interval = _bounds(report.intervals.get(info.name))
            found.append(Target(info.name, value, interval, f"{sign} {target:g}", verdict))
    return found


def agent_memory_markdown(report: Report) -> list[str]:
    """Targets met or missed, then per query the memories missed; nothing when the report
    has no agent-memory measure with a target or details."""
    targeted = [
        f"| {t.measure} | {'–' if t.value is None else f'{t.value:.4f}'} | {t.interval} "
        f"| {t.target} | {t.verdict} |"
        for t in targets(report)
    ]
    if not targeted and not report.details:
        return []
    lines = ["", "## Agent memory", ""]
    if targeted:
        lines += [
            "| measure | value | 95% interval | target | |",
            "|---|---|---|---|---|",
            *targeted,
        ]
    texts = {query.id: query.text for query in report.queries}
    for measure, per_query in report.details.items():
        title = DETAIL_TITLES.get(measure.partition("@")[0], "Details")
        lines += ["", f"### {title} ({measure}): {len(per_query)} queries", ""]
        lines += [
            f"- {md_code(query)} {md_text(texts.get(query, '')[:80])}: "
            + ", ".join(md_code(i) for i in items)
            for query, items in per_query.items()
        ]
    return lines


def _bounds(interval: Interval | None) -> str:
    """The value's interval, or why it has none (a ratio of means has no per-query values)."""
    if interval is None:
        return "–"
    if interval.low is None or interval.high is None:
        return f"none: {interval.reason}" if interval.reason else "–"
    return f"{interval.low:.4f}–{interval.high:.4f}" + (" *" if interval.small else "")
