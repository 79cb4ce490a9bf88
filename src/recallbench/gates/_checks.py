"""The checks of a gate against its thresholds: measure means, categories, per-query minimum
recall, latency SLOs, error rate and stability. Each check says pass, warn or fail, with the
numbers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from recallbench.gates._config import Gates, Threshold
from recallbench.report import Report

Status = Literal["pass", "warn", "fail"]
STATUS_ORDER: dict[Status, int] = {"pass": 0, "warn": 1, "fail": 2}
FAILED_QUERIES_SHOWN = 10


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the gate's verdict."""

    group: str
    """What kind of check: threshold, category, min_recall, latency, errors, stability,
    judge, cost, regression, baseline."""
    name: str
    """What it checks, e.g. ``mrr@10 >= 0.6``."""
    status: Status
    message: str
    """The numbers, in words."""
    value: float | None = None
    limit: float | None = None
    undecided: bool = False
    """The check could not decide: a drop beyond the limit on too few differing queries
    for the paired test ever to call it significant. It warns (fails under --strict), and
    such a run does not join the baseline with --accept."""


def fmt(value: float | None, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def threshold_checks(
    group: str, label: str, mean: float | None, threshold: Threshold, higher_is_better: bool
) -> Iterator[Check]:
    """``min`` and ``max`` fail (warn when not blocking); ``target`` warns."""
    hard: Status = "fail" if threshold.blocking else "warn"
    kind = "blocking" if threshold.blocking else "non-blocking"
    if mean is None:
        if threshold.min is not None or threshold.max is not None or threshold.target is not None:
            yield Check(group, label, hard, f"{label}: no value (no query in its population)")
        return
    if threshold.min is not None:
        ok = mean >= threshold.min
        yield Check(
            group,
            f"{label} >= {threshold.min:g}",
            "pass" if ok else hard,
            f"{label} = {fmt(mean)} {'>=' if ok else '<'} minimum {threshold.min:g} ({kind})",
            mean,
            threshold.min,
        )
    if threshold.max is not None:
        ok = mean <= threshold.max
        yield Check(
            group,
            f"{label} <= {threshold.max:g}",
            "pass" if ok else hard,
            f"{label} = {fmt(mean)} {'<=' if ok else '>'} maximum {threshold.max:g} ({kind})",
            mean,
            threshold.max,
        )
    if threshold.target is not None:
        ok = mean >= threshold.target if higher_is_better else mean <= threshold.target
        sign = ">=" if higher_is_better else "<="
        yield Check(
            group,
            f"{label} target {threshold.target:g}",
            "pass" if ok else "warn",
            f"{label} = {fmt(mean)} {'meets' if ok else 'misses'} target {sign} "
            f"{threshold.target:g} (non-blocking)",
            mean,
            threshold.target,
        )


def measure_checks(report: Report, gates: Gates) -> Iterator[Check]:
    directions = {m.name: m.higher_is_better for m in report.measures}
    for measure, threshold in gates.measures.items():
        if measure not in report.means:
            yield Check(
                "threshold",
                measure,
                "fail" if threshold.blocking else "warn",
                f"the report has no {measure} (it has {', '.join(report.means)}); "
                f"run with -m {measure}",
            )
            continue
        yield from threshold_checks(
            "threshold", measure, report.means[measure], threshold, directions[measure]
        )


def category_checks(report: Report, gates: Gates) -> Iterator[Check]:
    groups = {group.name: group for group in report.breakdowns.get("category", [])}
    directions = {m.name: m.higher_is_better for m in report.measures}
    for category, thresholds in gates.categories.items():
        group = groups.get(category)
        for measure, threshold in thresholds.items():
            label = f"{measure} [{category}]"
            if group is None or measure not in group.means:
                missing = "category" if group is None else "measure"
                yield Check(
                    "category",
                    label,
                    "fail" if threshold.blocking else "warn",
                    f"{label}: the report has no such {missing}",
                )
                continue
            yield from threshold_checks(
                "category", label, group.means[measure], threshold, directions[measure]
            )


def min_recall_checks(report: Report, gates: Gates) -> Iterator[Check]:
    """Every query whose dataset entry sets ``min_recall`` reaches it at the chosen measure."""
    bounded = [q for q in report.queries if q.min_recall is not None]
    if not bounded:
        return
    measure = gates.min_recall_measure
    label = f"min_recall ({measure})"
    if measure not in report.means:
        yield Check(
            "min_recall", label, "fail", f"the report has no {measure}; run with -m {measure}"
        )
        return
    below = [
        q
        for q in bounded
        if q.included and q.min_recall is not None and (q.values.get(measure) or 0.0) < q.min_recall
    ]
    scored = sum(1 for q in bounded if q.included)
    shown = ", ".join(
        f"{q.id} {fmt(q.values.get(measure), 2)} < {q.min_recall:g}"
        for q in below[:FAILED_QUERIES_SHOWN]
    )
    more = " ..." if len(below) > FAILED_QUERIES_SHOWN else ""
    yield Check(
        "min_recall",
        label,
        "fail" if below else "pass",
        f"{scored - len(below)} of {scored} queries with a min_recall reach it"
        + (f"; below: {shown}{more}" if below else ""),
        float(len(below)),
        0.0,
    )


def latency_checks(report: Report, gates: Gates) -> Iterator[Check]:
    slo = gates.latency
    wanted = {"p50": slo.p50, "p95": slo.p95, "p99": slo.p99}
    hard: Status = "fail" if slo.blocking else "warn"
    for name, limit in wanted.items():
        if limit is None:
            continue
        label = f"latency {name} <= {limit:g} ms"
        if report.latency_ms is None:
            yield Check("latency", label, hard, "the run recorded no latencies")
            continue
        value = float(getattr(report.latency_ms, name))
        ok = value <= limit
        yield Check(
            "latency",
            label,
            "pass" if ok else hard,
            f"latency {name} = {value:.2f} ms {'<=' if ok else '>'} {limit:g} ms",
            value,
            limit,
        )


def error_checks(report: Report, gates: Gates) -> Iterator[Check]:
    if gates.max_error_rate is None:
        return
    counts = report.counts
    rate = counts.failed / counts.queries if counts.queries else 0.0
    ok = rate <= gates.max_error_rate
    yield Check(
        "errors",
        f"error rate <= {gates.max_error_rate:g}",
        "pass" if ok else "fail",
        f"{counts.failed} of {counts.queries} queries failed ({rate:.2%})",
        rate,
        gates.max_error_rate,
    )


def stability_checks(report: Report, gates: Gates) -> Iterator[Check]:
    if gates.min_stability is None:
        return
    label = f"stability >= {gates.min_stability:g}"
    stability = report.stability
    if stability is None or stability.rate is None:
        yield Check(
            "stability",
            label,
            "warn",
            "not measured: run with `recallbench run --repeat 2` to check it",
        )
        return
    ok = stability.rate >= gates.min_stability
    changed = ", ".join(stability.changed[:FAILED_QUERIES_SHOWN])
    yield Check(
        "stability",
        label,
        "pass" if ok else "fail",
        f"{stability.stable} of {stability.queries} queries ranked the same in "
        f"{stability.repeats} runs ({stability.rate:.1%})"
        + (f"; changed: {changed}" if changed else ""),
        stability.rate,
        gates.min_stability,
    )


def judge_checks(report: Report, gates: Gates) -> Iterator[Check]:
    """A report measured with a judge's labels: the judge's failure rate within its limit
    (above it the measures are unreliable: a warning, so ``--strict`` fails closed)."""
    judge = report.judge
    if judge is None:
        return
    failed = judge.judged - judge.labelled
    yield Check(
        "judge",
        f"judge failures <= {judge.max_failure_rate:g}",
        "warn" if judge.unreliable else "pass",
        f"{judge.model} ({judge.prompt}): {failed} of {judge.judged} judgments failed "
        f"({judge.failure_rate:.1%})"
        + (": the measures that use its labels are unreliable" if judge.unreliable else ""),
        judge.failure_rate,
        judge.max_failure_rate,
    )


def cost_checks(report: Report, gates: Gates) -> Iterator[Check]:
    """``[gates.cost]``: what the judge spent on the labels the run was measured with (a
    report without a judge's labels spent nothing)."""
    cost = gates.cost
    judge = report.judge
    spent = judge.cost_usd if judge is not None else 0.0
    tokens = judge.tokens_in + judge.tokens_out if judge is not None else 0
    queries = report.counts.queries
    hard: Status = "fail" if cost.blocking else "warn"
    wanted: list[tuple[str, float | None, float, str]] = [
        ("judge cost", cost.max_usd, spent, f"${spent:.4f}"),
        (
            "judge cost per query",
            cost.max_usd_per_query,
            spent / queries if queries else 0.0,
            f"${spent / queries if queries else 0.0:.6f} ({queries} queries)",
        ),
        (
            "judge tokens",
            None if cost.max_tokens is None else float(cost.max_tokens),
            tokens,
            f"{tokens:,} tokens",
        ),
    ]
    for name, limit, value, shown in wanted:
        if limit is None:
            continue
        ok = value <= limit
        yield Check(
            "cost",
            f"{name} <= {limit:g}",
            "pass" if ok else hard,
            f"{name} {shown} {'<=' if ok else '>'} {limit:g}"
            + ("" if judge is not None else " (no judge labels)"),
            value,
            limit,
        )


def all_threshold_checks(report: Report, gates: Gates) -> list[Check]:
    return [
        *measure_checks(report, gates),
        *category_checks(report, gates),
        *min_recall_checks(report, gates),
        *latency_checks(report, gates),
        *error_checks(report, gates),
        *stability_checks(report, gates),
        *judge_checks(report, gates),
        *cost_checks(report, gates),
    ]
