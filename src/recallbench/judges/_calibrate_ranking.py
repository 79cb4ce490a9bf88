"""The systems' ranking in a calibration: Kendall's tau-b between their order under
people's labels and under the judge's, always with the quadratic kappa beside it."""

from __future__ import annotations

import numpy as np

from recallbench.judges._agreement import tau_interval
from recallbench.judges._calibrate_model import (
    CalibrationWarning,
    KappaResult,
    Ranking,
    SystemScore,
)
from recallbench.judges._calibrate_scores import FloatArray, _Scores

KAPPA_BESIDE_TAU = 0.4
"""Quadratic kappa below which a positive tau gets a warning: up to 0.40 is "fair" agreement
at best on Landis & Koch's (1977) scale, too little to trust the judge's labels whatever
the systems' order."""


def _ranks(means: FloatArray) -> list[int]:
    """Competition ranks, 1 for the highest mean (ties share the better rank)."""
    return [1 + int(np.sum(means > value)) for value in means]


def _ranking(
    scores: _Scores,
    kappa: KappaResult,
    resamples: int,
    seed: int,
    level: float,
    notes: list[str],
    warnings: list[CalibrationWarning],
) -> Ranking | None:
    """Kendall's tau-b between the systems' mean scores under the two labellings, with the
    quadratic ``kappa`` beside it.

    tau_b = (C - D) / sqrt((n0 - t_h)(n0 - t_j)) over the n0 = m(m-1)/2 pairs of the m
    systems: C pairs ordered alike under both labellings, D ordered oppositely, t_h and t_j
    pairs tied under one. Interval: the queries resampled together for every system and
    both labellings (Kendall 1945; :func:`recallbench.judges.tau_interval`).

    tau says nothing about the labels themselves: a judge that inverts grades (3 <-> 0,
    2 <-> 1) keeps the order of systems that differ in how many middle-grade memories they
    find, so tau can be 1.0 at a quadratic kappa of -0.75. A positive tau beside a kappa
    below :data:`KAPPA_BESIDE_TAU` is a warning."""
    if len(scores.systems) < 2:
        notes.append("one run given: a ranking (tau) needs at least two systems.")
        return None
    if len(scores.query_ids) < 2:
        notes.append(
            f"{len(scores.query_ids)} queries have {scores.measure} defined under both "
            "labellings for every system: no ranking (tau)."
        )
        return None
    found = tau_interval(scores.human, scores.judge, resamples, seed, level)
    human, judge = scores.human.mean(axis=1), scores.judge.mean(axis=1)
    systems = [
        SystemScore(system=name, human=float(h), judge=float(j), human_rank=hr, judge_rank=jr)
        for name, h, j, hr, jr in zip(
            scores.systems, human, judge, _ranks(human), _ranks(judge), strict=True
        )
    ]
    if scores.dropped:
        notes.append(
            f"{scores.dropped} queries are left out of the ranking and PPI: {scores.measure} "
            "is undefined for them under one labelling (no relevant memory)."
        )
    tau = found.tau.value
    if tau is not None and tau > 0 and (kappa.value is None or kappa.value < KAPPA_BESIDE_TAU):
        shown = "undefined" if kappa.value is None else f"{kappa.value:.3f}"
        warnings.append(
            CalibrationWarning(
                code="tau-without-agreement",
                message=(
                    f"Kendall's tau-b between the system rankings is {tau:.3f}, but the "
                    f"judge's grades agree little with people's (quadratic kappa {shown}, "
                    f"below {KAPPA_BESIDE_TAU}): tau compares only the order of the systems' "
                    "means, which a judge that inverts grades can keep (tau 1.0 at kappa "
                    "-0.75). Do not read tau as agreement; read kappa."
                ),
            )
        )
    return Ranking(
        measure=scores.measure,
        queries=len(scores.query_ids),
        dropped_queries=scores.dropped,
        tau=tau,
        low=found.interval.low,
        high=found.interval.high,
        undefined=found.tau.undefined,
        undefined_resamples=found.interval.undefined_resamples,
        kappa_quadratic=kappa.value,
        kappa_low=kappa.low,
        kappa_high=kappa.high,
        systems=systems,
    )
