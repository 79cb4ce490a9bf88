"""The regression verdict: a drop beyond the limit of the measure's kind fails when the
paired test says the current run is worse than the same baseline the drop is measured
against; when the test says it may be noise it warns, and when the test cannot speak at all
(too few differing queries) the gate says it cannot judge.

Drop. Relative, in the measure's direction: ``(B - C) / |B|`` when higher is better,
``(C - B) / |B|`` when lower is better (latency, tokens, noise), with C the report's mean
and B the baseline's: a committed file's mean, or the mean of the last ``window`` accepted
runs' means. From a baseline of 0 a change is infinitely large (+inf worse, -inf better).

Noise guard. The baseline's per-query values are the per-query mean over the very runs
whose means make B (:func:`recallbench.gates.pooled_values`); when those runs scored the
same queries, the mean of the per-query values is B itself, so the test and the drop look
at one baseline. A query that some of the runs scored and others did not has no baseline
value; it leaves the test (the verdict counts it), as does a query scored on one side only.
With d_i = C_i - B_i (B_i - C_i when lower is better), negative meaning worse, the test is
the one-sided paired sign-flip randomisation test of "the current run is worse":

    p = #{s in {-1, +1}^n : sum_i s_i |d_i| <= sum_i d_i} / 2^n

over the n queries with d_i != 0, exact when 2^n is small, else by ``resamples`` random
assignments (:func:`recallbench.stats._one_sided.worse_pvalue`; Good, P. (2000).
Permutation Tests, 2nd ed., Springer). The check fails when the drop exceeds the limit AND
p <= alpha; it warns "may be noise" when the drop exceeds the limit and p > alpha.

Why one-sided, and why against the pooled baseline: a gate asks only whether the run got
worse; a two-sided test also "finds" improvements, and a test against the newest run alone
answers a question about another baseline than the drop's (a run better than a low newest
run on every query failed; a copy of that low run, far under the mean, passed as noise).
A run better than the baseline on every query has p = 1 and never fails the guard.

Why not a non-inferiority test with the limit as margin (Wellek, S. (2010). Testing
Statistical Hypotheses of Equivalence and Noninferiority, 2nd ed., ch. 2): it would fail
only when the drop is shown to exceed the limit, so on a small dataset a 40% drop against
a 15% limit would mostly pass. The observed drop is the effect size the team chose; the
test only has to rule out chance.

Minimum n. The smallest p with n differing queries is 1/2^n, so below
``minimum_differing(alpha)`` (5 for alpha = 0.05) no drop can be significant: calling
such a drop noise would let any collapse on a small dataset through. The check then warns
that it cannot judge the drop (``undecided``), fails under --strict, and ``--accept``
keeps such a run out of the baseline (it would drag the rolling mean down and hide the next
drop). One paired query is this case too.

Without the guard (``significance = false``) a drop beyond the limit fails. A baseline on
another dataset version has no paired queries, and a drop against it fails: the numbers
are not comparable, and a stale committed baseline must be accepted again.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from recallbench.gates._baseline import Baseline
from recallbench.gates._checks import Check, Status, fmt
from recallbench.gates._config import Gates, Regression
from recallbench.report import Report
from recallbench.stats import minimum_differing, smallest_p, worse_pvalue


def relative_drop(baseline: float, current: float, higher_is_better: bool) -> float:
    """``(B - C) / |B|`` (``(C - B) / |B|`` when lower is better); ±inf from B = 0."""
    worse = baseline - current if higher_is_better else current - baseline
    if baseline == 0:
        return math.inf if worse > 0 else -math.inf if worse < 0 else 0.0
    return worse / abs(baseline)


def _kind(measure: str, gates: Gates, report: Report) -> str:
    """The threshold's kind, else ``judge`` for a run measured with a judge's labels (the
    wider judge limit), else the measure's own."""
    from recallbench.measures import parse_measure

    threshold = gates.measures.get(measure)
    if threshold is not None and threshold.kind is not None:
        return threshold.kind
    if report.labels.get("llm"):
        return "judge"
    return parse_measure(measure).kind


def paired_differences(
    report: Report, baseline: Baseline, measure: str, higher_is_better: bool
) -> tuple[np.ndarray, int]:
    """Per-query differences, negative where the current run is worse than the baseline's
    per-query value, and the number of queries scored on one side only (left out)."""
    current = {query.id: query.values.get(measure) for query in report.queries}
    differences: list[float] = []
    one_side = 0
    for query in dict.fromkeys([*current, *baseline.values]):
        now, before = current.get(query), baseline.values.get(query, {}).get(measure)
        if now is None and before is None:
            continue
        if now is None or before is None:
            one_side += 1
            continue
        differences.append(now - before if higher_is_better else before - now)
    return np.array(differences, dtype=np.float64), one_side


def _change(drop: float) -> str:
    if math.isinf(drop):
        return f"{'worse' if drop > 0 else 'better'} than a baseline of 0"
    return f"{'drop' if drop > 0 else 'change'} {drop:+.1%}"


def regression_checks(report: Report, baseline: Baseline, gates: Gates) -> Iterator[Check]:
    settings = gates.regression
    limits = {"graded": settings.drop, "exact": settings.exact, "judge": settings.judge}
    same_data = baseline.dataset_sha256 == report.dataset.sha256
    for info in report.measures:
        measure = info.name
        before, now = baseline.means.get(measure), report.means.get(measure)
        if before is None or now is None:
            missing = (
                f"the baseline has no value of {measure}"
                if before is None
                else f"the report has no value of {measure} (baseline {fmt(before)})"
            )
            yield Check("regression", f"{measure} vs baseline", "warn", f"{missing}: not compared")
            continue
        kind = _kind(measure, gates, report)
        limit = limits[kind]
        drop = relative_drop(before, now, info.higher_is_better)
        numbers = (
            f"{measure} {fmt(now)} vs baseline {fmt(before)}: {_change(drop)} "
            f"(allowed {limit:.0%}, {kind})"
        )
        name = f"{measure} drop <= {limit:.0%}"
        if drop <= limit:
            yield Check("regression", name, "pass", numbers, drop, limit)
        elif not settings.significance:
            yield Check("regression", name, "fail", numbers, drop, limit)
        elif not same_data:
            yield Check(
                "regression",
                name,
                "fail",
                numbers + "; the baseline is on another dataset version: no paired test "
                "(accept a baseline on this version)",
                drop,
                limit,
            )
        else:
            status, words, undecided = _noise_guard(
                report, baseline, measure, info.higher_is_better, drop, settings
            )
            yield Check(
                "regression", name, status, f"{numbers}; {words}", drop, limit, undecided=undecided
            )


def _noise_guard(
    report: Report,
    baseline: Baseline,
    measure: str,
    higher_is_better: bool,
    drop: float,
    settings: Regression,
) -> tuple[Status, str, bool]:
    """The verdict on a drop beyond its limit: significant (fail), may be noise (warn) or
    cannot judge (warn, undecided), in words."""
    differences, one_side = paired_differences(report, baseline, measure, higher_is_better)
    test = worse_pvalue(differences, settings.resamples, settings.seed)
    left_out = ""
    if one_side:
        partial = baseline.partial.get(measure, 0)
        left_out = f"; {one_side} queries scored on one side only left out" + (
            f" ({partial} not scored by every baseline run)" if partial else ""
        )
    if test.worse == 0:  # p = 1: the drop comes from queries the test cannot pair
        return (
            "warn",
            f"worse on none of the {test.differing} differing paired queries{left_out}: "
            "the drop is not in the paired queries",
            False,
        )
    need = minimum_differing(settings.alpha)
    if test.differing < need:
        return (
            "warn",
            f"cannot judge a drop of {_size(drop)} on {test.differing} differing queries: "
            f"the test can never reach alpha={settings.alpha:g} (smallest one-sided p = "
            f"1/2^{test.differing} = {smallest_p(test.differing):.4g}; it needs at least "
            f"{need}{left_out})",
            True,
        )
    how = "exact" if test.exact else f"{settings.resamples:,} resamples"
    evidence = (
        f"worse than {baseline.values_from} on {test.worse} of {test.differing} differing "
        f"queries, one-sided p = {test.p:.4g} ({how}{left_out})"
    )
    if test.p <= settings.alpha:
        return "fail", f"significant: {evidence} <= alpha {settings.alpha:g}", False
    return (
        "warn",
        f"not significant: {evidence} > alpha {settings.alpha:g}: may be noise",
        False,
    )


def _size(drop: float) -> str:
    return "infinite size (from a baseline of 0)" if math.isinf(drop) else f"{drop:.1%}"
