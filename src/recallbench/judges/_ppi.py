"""Prediction-powered inference for a mean: a judge's labels on many items, corrected by
people's labels on a few, give an unbiased estimate and a valid interval.

Notation follows the papers: Y are people's values on the n labelled items, f(X) the
judge's values on the same items, f(X~) the judge's values on N further, unlabelled items
drawn from the same population. The labelled and unlabelled items are separate samples;
the judge must be the same judge (model, prompt, settings) on both, otherwise the
correction corrects a different judge.

Variances divide by the sample size (not n - 1), as in the paper's algorithms and in the
authors' ``ppi_py`` package, so the numbers agree with theirs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.special import ndtri

from recallbench.core._errors import ConfigError

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class MeanEstimate:
    """A mean with its normal (CLT) interval at ``level``.

    ``weight`` is the lambda applied to the judge's values: 1 for PPI, the tuned value for
    PPI++, 0 for the classical estimate (people's labels alone)."""

    estimate: float
    low: float
    high: float
    standard_error: float
    level: float
    method: str
    labelled: int
    unlabelled: int
    weight: float


def _values(values: Sequence[float] | FloatArray, name: str) -> FloatArray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ConfigError(f"{name}: expected a flat list of values, got shape {array.shape}")
    if array.size < 2:
        raise ConfigError(
            f"{name}: {array.size} values; an interval needs at least 2 (the variance is "
            "estimated from them)"
        )
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ConfigError(f"{name}[{bad[0]}]: {array[bad[0]]} is not a finite number")
    return array


def _z(level: float) -> float:
    if not 0.0 < level < 1.0:
        raise ConfigError(f"confidence level must be in (0, 1), got {level}")
    return float(ndtri((1.0 + level) / 2.0))


def _interval(
    estimate: float, variance: float, level: float, method: str, n: int, big_n: int, weight: float
) -> MeanEstimate:
    error = math.sqrt(max(variance, 0.0))
    half = _z(level) * error
    return MeanEstimate(
        estimate, estimate - half, estimate + half, error, level, method, n, big_n, weight
    )


def classical_mean(human: Sequence[float] | FloatArray, level: float = 0.95) -> MeanEstimate:
    """The mean of people's labels alone, with the CLT interval ȳ ± z·σ̂_Y/√n (σ̂² dividing by
    n, as :func:`ppi_mean` does, so that PPI with lambda = 0 is exactly this).

    The baseline PPI is compared with: Angelopoulos et al. (2023), Science 382, eq. (1)."""
    y = _values(human, "human labels")
    return _interval(float(y.mean()), float(y.var()) / y.size, level, "classical", y.size, 0, 0.0)


def power_tuning_weight(
    human: FloatArray, judge_labelled: FloatArray, judge_unlabelled: FloatArray
) -> float:
    """PPI++'s variance-minimising weight on the judge, clipped to [0, 1]:

        lambda^ = Cov^(Y, f(X)) / ((1 + n/N) Var^(f))

    the covariance over the n labelled items (dividing by n), the variance of the judge's
    values over all n + N items (dividing by n + N - 1), as in ``ppi_py``. Clipping keeps the
    estimate between the classical one (0) and PPI (1); a judge whose values do not vary
    carries no information and gets 0.

    Angelopoulos, A. N., Duchi, J. C. & Zrnic, T. (2023). PPI++: Efficient
    prediction-powered inference. arXiv:2311.01453, sec. 2 (mean estimation).
    """
    n, big_n = human.size, judge_unlabelled.size
    covariance = float(np.mean((human - human.mean()) * (judge_labelled - judge_labelled.mean())))
    variance = float(np.var(np.concatenate([judge_labelled, judge_unlabelled]), ddof=1))
    if variance <= 0.0:
        return 0.0
    return float(np.clip(covariance / ((1.0 + n / big_n) * variance), 0.0, 1.0))


def ppi_mean(
    human: Sequence[float] | FloatArray,
    judge_labelled: Sequence[float] | FloatArray,
    judge_unlabelled: Sequence[float] | FloatArray,
    level: float = 0.95,
    tuned: bool = False,
) -> MeanEstimate:
    """Prediction-powered estimate of the mean of Y, with its CLT interval.

    PPI (lambda = 1):

        theta^_PP = mean(f(X~)) - mean(f(X) - Y)
        theta^_PP ± z_{(1+level)/2} · sqrt(σ̂²_f / N + σ̂²_{f-Y} / n)

    where σ̂²_f is the variance of f over the N unlabelled items and σ̂²_{f-Y} that of the
    judge's error over the n labelled ones (both dividing by the sample size). The
    rectifier mean(f(X) - Y) removes the judge's bias; the interval is valid whatever the
    judge's quality, and narrower than the classical one when f tracks Y.

    PPI++ (``tuned=True``): theta^_lambda = lambda·mean(f(X~)) + mean(Y - lambda·f(X)), with
    variance lambda²σ̂²_f/N + σ̂²_{Y-lambda f}/n and lambda from :func:`power_tuning_weight`,
    so a poor judge cannot make the interval wider than the classical one (asymptotically).

    Angelopoulos, A. N., Bates, S., Fannjiang, C., Jordan, M. I. & Zrnic, T. (2023).
    Prediction-powered inference. Science 382(6671), 669-674 (mean estimation, Algorithm 1);
    Angelopoulos, A. N., Duchi, J. C. & Zrnic, T. (2023). PPI++. arXiv:2311.01453.
    """
    y = _values(human, "human labels")
    f = _values(judge_labelled, "judge labels on the labelled items")
    f_tilde = _values(judge_unlabelled, "judge labels on the unlabelled items")
    if f.size != y.size:
        raise ConfigError(
            f"{y.size} human labels but {f.size} judge labels on the labelled items: the judge "
            "must label exactly the items people labelled, in the same order"
        )
    weight = power_tuning_weight(y, f, f_tilde) if tuned else 1.0
    rectifier = y - weight * f
    estimate = weight * float(f_tilde.mean()) + float(rectifier.mean())
    variance = weight**2 * float(f_tilde.var()) / f_tilde.size + float(rectifier.var()) / y.size
    method = "PPI++ (power-tuned)" if tuned else "PPI"
    return _interval(estimate, variance, level, method, y.size, f_tilde.size, weight)
