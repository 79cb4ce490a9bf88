"""Paired comparison of two systems' per-query values: every statistic a reviewer needs.

For each comparison (a system against the baseline on one measure, over the same n queries)
with differences ``d_i = system_i - baseline_i``: the mean difference, a bootstrap interval,
the randomisation, t and Wilcoxon tests, the effect size d_z, wins / ties / losses and the
minimum detectable effect. Comparisons with the same number of queries are computed together.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from recallbench.core._errors import ConfigError
from recallbench.stats._power import minimum_detectable_effect
from recallbench.stats._resampling import (
    INTERVAL_NAMES,
    IntervalMethod,
    bootstrap_interval,
    check_resamples,
    mean_intervals,
    randomisation_pvalues,
    seeded_streams,
)
from recallbench.stats._wilcoxon import WILCOXON_EXACT, wilcoxon_pvalue

FloatArray = NDArray[np.float64]

TIE = 1e-12
"""Per-query differences smaller than this are ties (the same value computed twice)."""

CONSTANT = 1e-9
"""Differences whose standard deviation is below this fraction of their largest |d| do not
vary: what spread there is comes from floating-point rounding (0.3 - 0.2 vs 0.1), and
dividing by it gives an effect size of 1e15. Real variation in a measure over queries is
many orders of magnitude larger."""


@dataclass(frozen=True, slots=True)
class PairedSettings:
    resamples: int = 10_000
    seed: int = 0
    level: float = 0.95
    interval: IntervalMethod = "bca"
    alpha: float = 0.05
    power: float = 0.8

    def __post_init__(self) -> None:
        check_resamples(self.resamples, self.level)

    def describe(self) -> dict[str, str]:
        """The methods in words, for the output."""
        return {
            "difference": "mean over the paired queries of (system - baseline)",
            "interval": (
                f"{self.level:.0%} paired bootstrap {INTERVAL_NAMES[self.interval]} interval, "
                f"{self.resamples:,} resamples, seed {self.seed} (Efron 1987)"
            ),
            "randomisation": (
                "two-sided paired randomisation test of the mean difference (random sign "
                f"flips, {self.resamples:,} resamples, p = (b+1)/(n+1); exact enumeration "
                "when 2^n is smaller) (Fisher 1935; Smucker et al. 2007)"
            ),
            "t": "two-sided paired t-test (scipy.stats.ttest_1samp on the differences)",
            "wilcoxon": (
                "two-sided Wilcoxon signed-rank test, zero differences dropped, mid-ranks for "
                f"ties; exact (every sign assignment) up to {WILCOXON_EXACT} non-zero "
                "differences, ties included, else the normal approximation with tie "
                "correction (Wilcoxon 1945; Pratt 1959)"
            ),
            "effect_size": (
                "d_z = mean / standard deviation of the differences (Cohen 1988); not "
                "available with fewer than 2 queries or differences that do not vary"
            ),
            "mde": (
                f"minimum detectable effect: the mean difference the paired t-test detects "
                f"with power {self.power} at alpha {self.alpha} given this n and the "
                "differences' standard deviation"
            ),
        }


@dataclass(frozen=True, slots=True)
class PairedResult:
    """One comparison; differences are system minus baseline."""

    n: int
    mean_baseline: float
    mean_system: float
    delta: float
    ci_low: float | None
    ci_high: float | None
    p_randomisation: float | None
    exact: bool
    p_t: float | None
    p_wilcoxon: float | None
    effect_size: float | None
    wins: int
    ties: int
    losses: int
    mde: float | None
    degenerate: str | None = None
    """Why the t-test, d_z and the MDE are not available (None: they are)."""


def paired_results(
    baseline: Sequence[FloatArray],
    system: Sequence[FloatArray],
    higher_is_better: Sequence[bool],
    settings: PairedSettings | None = None,
    with_mde: bool = True,
) -> list[PairedResult]:
    """Compare ``system[i]`` with ``baseline[i]`` (the same queries, in the same order).

    Wins count queries where the system is better (higher, or lower for a measure where
    lower is better). Comparisons of equal length share the bootstrap and randomisation
    resamples, drawn from generators seeded by ``settings.seed``, so the output does not
    depend on how many comparisons are made together. ``with_mde=False`` skips the minimum
    detectable effect (a root search per comparison: slow for hundreds of small groups).
    """
    settings = settings or PairedSettings()
    results: list[PairedResult | None] = [None] * len(baseline)
    by_length: dict[int, list[int]] = {}
    for index, (base, other) in enumerate(zip(baseline, system, strict=True)):
        if base.shape != other.shape:
            raise ValueError(f"comparison {index}: {base.shape} baseline vs {other.shape} values")
        _check_finite(index, base, other)
        by_length.setdefault(base.size, []).append(index)
    for n, indices in by_length.items():
        if n == 0:  # no query in the population: nothing to compare
            for index in indices:
                results[index] = _empty()
            continue
        base = np.array([baseline[i] for i in indices], dtype=np.float64).reshape(-1, n)
        other = np.array([system[i] for i in indices], dtype=np.float64).reshape(-1, n)
        better = np.array([higher_is_better[i] for i in indices])
        for index, result in zip(
            indices, _same_length(base, other, better, settings, with_mde), strict=True
        ):
            results[index] = result
    return [result for result in results if result is not None]


def paired_intervals(
    baseline: Sequence[FloatArray], system: Sequence[FloatArray], settings: PairedSettings
) -> list[tuple[float, float] | None]:
    """The bootstrap intervals of :func:`paired_results` alone, at ``settings.level``.

    The same seeded resamples, so only the level differs: for a level that depends on the
    p-values (Benjamini-Yekutieli's false-coverage intervals after Benjamini-Hochberg).
    """
    differences = [s - b for b, s in zip(baseline, system, strict=True)]
    return mean_intervals(
        differences, settings.resamples, settings.level, settings.interval, settings.seed
    )


def _same_length(
    base: FloatArray,
    other: FloatArray,
    higher_is_better: NDArray[np.bool_],
    s: PairedSettings,
    with_mde: bool,
) -> list[PairedResult]:
    rows, n = base.shape
    differences = other - base
    bootstrap_rng, randomisation_rng = seeded_streams(s.seed)
    low: FloatArray | None = None
    high: FloatArray | None = None
    p_random: FloatArray | None = None
    exact = False
    if n >= 2:
        low, high = bootstrap_interval(differences, s.resamples, s.level, s.interval, bootstrap_rng)
        p_random, exact = randomisation_pvalues(differences, s.resamples, randomisation_rng)
    sd = differences.std(axis=1, ddof=1) if n >= 2 else np.full(rows, np.nan)
    reasons = [_degenerate(differences[row], float(sd[row])) for row in range(rows)]
    p_t, p_w = _classical_tests(differences, reasons)
    signed = np.where(higher_is_better[:, None], differences, -differences)
    results = []
    for row in range(rows):
        delta = float(differences[row].mean())
        spread = float(sd[row])
        defined = reasons[row] is None
        results.append(
            PairedResult(
                n=n,
                mean_baseline=float(base[row].mean()),
                mean_system=float(other[row].mean()),
                delta=delta,
                ci_low=None if low is None else float(low[row]),
                ci_high=None if high is None else float(high[row]),
                p_randomisation=None if p_random is None else float(p_random[row]),
                exact=exact,
                p_t=p_t[row],
                p_wilcoxon=p_w[row],
                effect_size=delta / spread if defined else None,
                wins=int((signed[row] > TIE).sum()),
                ties=int((np.abs(signed[row]) <= TIE).sum()),
                losses=int((signed[row] < -TIE).sum()),
                mde=(
                    minimum_detectable_effect(n, spread, s.alpha, s.power)
                    if with_mde and defined
                    else None
                ),
                degenerate=reasons[row],
            )
        )
    return results


def _check_finite(index: int, base: FloatArray, other: FloatArray) -> None:
    """NaN or inf would turn every statistic into NaN ("+nan ***"); refuse them."""
    for name, values in (("baseline", base), ("system", other)):
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise ConfigError(
                f"comparison {index}: {name} value {values[bad[0]]} at position {bad[0]} "
                f"({bad.size} not finite); per-query values must be finite numbers"
            )


def _degenerate(d: FloatArray, sd: float) -> str | None:
    """Why d_z, the MDE and the t-test are undefined for ``d``, or None when they are not."""
    if d.size < 2:
        return f"{d.size} paired {'query' if d.size == 1 else 'queries'}: no spread to measure"
    if not sd > CONSTANT * float(np.abs(d).max()):
        return "the differences do not vary (sd ≈ 0), so d_z and the t-test divide by zero"
    return None


def _classical_tests(
    differences: FloatArray, reasons: Sequence[str | None]
) -> tuple[list[float | None], list[float | None]]:
    """Paired t and Wilcoxon p-values per row; None where the test is undefined.

    The t-test needs differences that vary (``reasons[row]`` None); Wilcoxon needs a
    non-zero difference. When every difference is zero both say what is plain: p = 1 (no
    evidence of any difference).
    """
    from scipy import stats

    rows = differences.shape[0]
    p_t: list[float | None] = [None] * rows
    p_w: list[float | None] = [None] * rows
    for row in range(rows):
        d = differences[row]
        if not (np.abs(d) > TIE).any():
            p_t[row] = p_w[row] = 1.0
            continue
        if reasons[row] is None:
            p_t[row] = _finite(stats.ttest_1samp(d, 0.0).pvalue)
        p_w[row] = wilcoxon_pvalue(d)[0]
    return p_t, p_w


def _finite(value: float) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None


def _empty() -> PairedResult:
    nan = math.nan
    return PairedResult(
        0,
        nan,
        nan,
        nan,
        None,
        None,
        None,
        False,
        None,
        None,
        None,
        0,
        0,
        0,
        None,
        "no paired queries",
    )
