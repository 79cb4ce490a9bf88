"""The PPI means of a calibration: per system, prediction-powered means of the measure
from a seeded sample of queries treated as the only ones people labelled, beside the
classical mean of that sample, the judge-only mean and the mean under every person's label."""

from __future__ import annotations

import numpy as np

from recallbench.core import ConfigError
from recallbench.judges._calibrate_model import (
    CalibrationWarning,
    Estimate,
    PPIResult,
    SystemMeans,
)
from recallbench.judges._calibrate_scores import BoolArray, _Scores
from recallbench.judges._ppi import MeanEstimate, classical_mean, ppi_mean

MIN_HUMAN_SAMPLE = 20
"""Fewest queries labelled by people for the mean intervals to be near their nominal level.
Below it a warning says so: the normal interval, its variance dividing by n, is too narrow
on few values (``benchmarks/ppi_coverage.py``, 20,000 simulated samples per cell: the 95%
intervals held the true mean 0.88-0.94 of the time at 10 labelled queries, PPI++ lowest,
0.79-0.92 at 5, 0.92-0.95 at 20)."""
COVERAGE_AT_10 = "0.88-0.94"
"""The coverage of the 95% intervals at 10 labelled queries, as measured above."""


def _estimate(found: MeanEstimate, method: str | None = None) -> Estimate:
    return Estimate(
        estimate=found.estimate,
        low=found.low,
        high=found.high,
        standard_error=found.standard_error,
        method=method or found.method,
        labelled=found.labelled,
        unlabelled=found.unlabelled,
        weight=found.weight,
    )


def labelled_sample(queries: int, size: int, seed: int) -> BoolArray:
    """Which of ``queries`` are treated as labelled by people: ``size`` drawn without
    replacement with ``seed`` (the same draw for every system)."""
    chosen = np.zeros(queries, dtype=bool)
    chosen[np.random.default_rng(seed).choice(queries, size=size, replace=False)] = True
    return chosen


def _ppi(
    scores: _Scores,
    human_sample: int | None,
    seed: int,
    level: float,
    notes: list[str],
    warnings: list[CalibrationWarning],
) -> PPIResult | None:
    """Prediction-powered means of the measure per system.

    The n sampled queries play the labelled set (Y: the measure under people's labels,
    f(X): under the judge's); the other N queries the unlabelled set (f(X~): the judge's
    labels only). theta_PP = mean(f(X~)) - mean(f(X) - Y) with the interval
    theta_PP ± z sqrt(var(f~)/N + var(f - Y)/n) (Angelopoulos et al. 2023, Science 382);
    PPI++ weighs the judge by a tuned lambda in [0, 1] (Angelopoulos, Duchi & Zrnic 2024,
    arXiv:2311.01453). Labelled and unlabelled queries are disjoint, as the method needs.
    With every query labelled there is nothing unlabelled to add: PPI is the classical
    mean, and only that is reported."""
    total = len(scores.query_ids)
    if total < 2:
        notes.append(f"{total} queries with {scores.measure} defined: no PPI means.")
        return None
    size = total if human_sample is None else human_sample
    if size < 2:
        raise ConfigError(f"--human-sample must be at least 2 queries, got {size}")
    note = None
    if size > total:
        note = f"--human-sample {size} is more than the {total} queries: all are labelled."
        size = total
    labelled = labelled_sample(total, size, seed)
    if size == total:
        note = (note + " " if note else "") + (
            "Every query is labelled by people, so PPI has no unlabelled queries to borrow "
            "from and equals the classical mean (same estimate, same coverage); give "
            "--human-sample N below the query count to see the judge's correction at work."
        )
    elif total - size < 2:
        note = f"{total - size} unlabelled query: PPI needs at least 2."
    if size < MIN_HUMAN_SAMPLE:
        asked = f" (--human-sample {human_sample})" if human_sample is not None else ""
        warnings.append(
            CalibrationWarning(
                code="small-human-sample",
                message=(
                    f"only {size} queries labelled by people{asked}: with fewer than "
                    f"{MIN_HUMAN_SAMPLE}, the {level:.0%} intervals of the classical mean, "
                    f"PPI and PPI++ hold the true mean less often than {level:.0%} (95% "
                    f"intervals in simulation: {COVERAGE_AT_10} of the time at 10 labelled "
                    "queries, PPI++ lowest; benchmarks/ppi_coverage.py): they are too "
                    f"narrow on so few people's labels. Label at least {MIN_HUMAN_SAMPLE} "
                    "queries."
                ),
            )
        )
    systems = []
    for index, name in enumerate(scores.systems):
        y_all, f_all = scores.human[index], scores.judge[index]
        y, f, f_tilde = y_all[labelled], f_all[labelled], f_all[~labelled]
        usable = f_tilde.size >= 2
        systems.append(
            SystemMeans(
                system=name,
                target=_estimate(classical_mean(y_all, level), "people, every query"),
                classical=_estimate(classical_mean(y, level), "classical (people, sample)"),
                judge_only=_estimate(classical_mean(f_all, level), "judge only"),
                ppi=_estimate(ppi_mean(y, f, f_tilde, level)) if usable else None,
                ppi_tuned=_estimate(ppi_mean(y, f, f_tilde, level, tuned=True)) if usable else None,
            )
        )
    ids = [query_id for query_id, chosen in zip(scores.query_ids, labelled, strict=True) if chosen]
    return PPIResult(
        measure=scores.measure,
        queries=total,
        labelled=size,
        unlabelled=total - size,
        seed=seed,
        labelled_queries=ids,
        note=note,
        systems=systems,
    )
