"""The regression verdict: a relative drop against the baseline beyond the threshold of the
measure's kind fails, unless the paired test says it may be noise (then it warns).

Relative drop, in the measure's direction: ``(baseline - current) / baseline`` when higher
is better, ``(current - baseline) / baseline`` when lower is better (infinite from a
baseline of 0). The paired test is the two-sided randomisation test of
:func:`recallbench.stats.randomisation_pvalues` over the queries both runs scored, so small
datasets, whose means move by chance, do not flap.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from recallbench.gates._baseline import Baseline
from recallbench.gates._checks import Check, fmt
from recallbench.gates._config import Gates
from recallbench.report import Report
from recallbench.stats import randomisation_pvalues


def relative_drop(baseline: float, current: float, higher_is_better: bool) -> float:
    worse = baseline - current if higher_is_better else current - baseline
    if baseline == 0:
        return math.inf if worse > 0 else 0.0
    return worse / abs(baseline)


def _kind(measure: str, gates: Gates) -> str:
    from recallbench.measures import parse_measure

    threshold = gates.measures.get(measure)
    if threshold is not None and threshold.kind is not None:
        return threshold.kind
    return parse_measure(measure).kind


def paired_p(
    report: Report, baseline: Baseline, measure: str, resamples: int, seed: int
) -> tuple[float | None, int]:
    """Randomisation p-value of current vs baseline per-query values, and the pairs used."""
    pairs = [
        (before, now)
        for query in report.queries
        if (now := query.values.get(measure)) is not None
        and (before := baseline.values.get(query.id, {}).get(measure)) is not None
    ]
    if len(pairs) < 2:
        return None, len(pairs)
    values = np.array(pairs, dtype=np.float64)
    differences = (values[:, 1] - values[:, 0])[None, :]
    p, _ = randomisation_pvalues(differences, resamples, np.random.default_rng(seed))
    return float(p[0]), len(pairs)


def regression_checks(report: Report, baseline: Baseline, gates: Gates) -> Iterator[Check]:
    settings = gates.regression
    limits = {"graded": settings.drop, "exact": settings.exact, "judge": settings.judge}
    same_data = baseline.dataset_sha256 == report.dataset.sha256
    for info in report.measures:
        measure = info.name
        before, now = baseline.means.get(measure), report.means.get(measure)
        if before is None or now is None:
            continue
        kind = _kind(measure, gates)
        limit = limits[kind]
        drop = relative_drop(before, now, info.higher_is_better)
        numbers = (
            f"{measure} {fmt(now)} vs baseline {fmt(before)}: "
            f"{'drop' if drop > 0 else 'change'} {drop:+.1%} (allowed {limit:.0%}, {kind})"
        )
        name = f"{measure} drop <= {limit:.0%}"
        if drop <= limit:
            yield Check("regression", name, "pass", numbers, drop, limit)
            continue
        if not settings.significance:
            yield Check("regression", name, "fail", numbers, drop, limit)
            continue
        if not same_data:
            yield Check(
                "regression",
                name,
                "fail",
                numbers + "; the baseline is on another dataset version: no paired test",
                drop,
                limit,
            )
            continue
        p, n = paired_p(report, baseline, measure, settings.resamples, settings.seed)
        if p is None:
            yield Check(
                "regression",
                name,
                "fail",
                numbers + "; too few paired queries to test",
                drop,
                limit,
            )
        elif p < settings.alpha:
            yield Check(
                "regression",
                name,
                "fail",
                numbers + f"; significant against {baseline.values_from} (p = {p:.4f}, n = {n})",
                drop,
                limit,
            )
        else:
            yield Check(
                "regression",
                name,
                "warn",
                numbers + f"; not significant against {baseline.values_from} (p = {p:.4f}, n = {n} "
                f">= alpha {settings.alpha:g}): may be noise",
                drop,
                limit,
            )
