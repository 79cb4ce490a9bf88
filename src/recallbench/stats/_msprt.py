"""Mixture SPRT: always-valid p-values and confidence intervals for a paired mean difference.

Each query gives a paired difference ``d_i = treatment_i - control_i`` with mean ``theta``.
Johari, Koomen, Pekelis & Walsh (2017/2022) test ``H0: theta = theta0`` with the mixture
likelihood ratio of Robbins (1970): the Gaussian likelihood ratio of ``theta`` against
``theta0`` averaged over a normal mixing distribution ``theta ~ N(theta0, tau^2)``. With
``n`` differences of mean ``dbar_n`` and variance ``sigma^2`` the integral is closed form:

    Lambda_n(theta0) = sqrt(sigma^2 / (sigma^2 + n tau^2))
                       * exp( n^2 tau^2 (dbar_n - theta0)^2 / (2 sigma^2 (sigma^2 + n tau^2)) ).

``Lambda_n`` is a nonnegative martingale under H0 with ``Lambda_0 = 1``, so by Ville's
inequality ``P(exists n: Lambda_n >= 1 / alpha) <= alpha``. Hence the always-valid p-value

    p_0 = 1,   p_n = min(p_{n-1}, 1 / Lambda_n(theta0)),

satisfies ``P(p_T <= alpha) <= alpha`` at *any* stopping time ``T``: the test may be checked
after every query and stopped whenever ``p_n <= alpha`` without inflating the type I error.
Inverting it gives the always-valid confidence interval ``CI_n = intersection over k <= n
of {theta: Lambda_k(theta) < 1 / alpha}`` with, at each ``k``, the interval
``dbar_k ± h_k`` where

    h_k = sqrt(sigma^2 V_k / (k^2 tau^2) * ln(V_k / (sigma^2 alpha^2))),  V_k = sigma^2 + k tau^2,

and ``P(exists n: theta not in CI_n) <= alpha``. ``theta0 not in CI_n`` exactly when
``p_n <= alpha`` (both come from the same ``Lambda_k``).

Variance. With ``sigma`` given the guarantee is exact for Gaussian differences and, because
``Lambda_n`` is a normal mixture of the supermartingales ``exp(lambda S_n - n lambda^2
sigma^2 / 2)``, also for any ``sigma``-sub-Gaussian differences; values in ``[a, b]`` are
``(b - a) / 2``-sub-Gaussian (Hoeffding's lemma), so ``sigma = 1`` is always valid for
differences of measures in [0, 1]. Then the interval is the two-sided normal-mixture
confidence sequence of Howard, Ramdas, McAuliffe & Sekhon (2021): on the sum scale with
``rho = sigma^2 / tau^2``, ``S_n ± sigma sqrt((n + rho) ln((n + rho) / (rho alpha^2)))``.
With ``sigma=None`` the running sample variance is plugged in (as Johari et al. do for
unknown variances); validity is then asymptotic, and ``min_samples`` keeps the noisy
estimates of the first few queries from deciding. The plug-in is much more powerful when the
differences are far from the bound (sd 0.3 instead of 1).

Mixing variance. ``tau`` sets which effects the test is quickest for: Johari et al. show the
mixture is near-optimal for effects of the order of ``tau`` and recommend matching ``tau^2``
to the spread of effects seen in past experiments. :data:`DEFAULT_TAU` = 0.1 is this
project's choice for differences of retrieval measures in [0, 1] (MRR, nDCG, recall), where
effects worth detecting are 0.02-0.2; it is not a value from the paper.

References:
    Johari, R., Koomen, P., Pekelis, L. & Walsh, D. (2017). Peeking at A/B tests: why it
    matters, and what to do about it. KDD 2017, 1517-1525. And (2022) Always valid inference:
    continuous monitoring of A/B tests. Operations Research 70(3), 1806-1821. The mSPRT,
    the always-valid p-value and confidence interval.
    Robbins, H. (1970). Statistical methods related to the law of the iterated logarithm.
    Ann. Math. Statist. 41(5), 1397-1409. Mixture likelihood ratios.
    Howard, S. R., Ramdas, A., McAuliffe, J. & Sekhon, J. (2021). Time-uniform, nonparametric,
    nonasymptotic confidence sequences. Ann. Statist. 49(2), 1055-1080. The normal-mixture
    boundary for sub-Gaussian observations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from recallbench.core._errors import ConfigError
from recallbench.stats._sprt import Decision, is_int

FloatArray = NDArray[np.float64]

Values = Sequence[float] | NDArray[np.floating[Any]] | NDArray[np.integer[Any]]

DEFAULT_TAU: Final = 0.1
"""Standard deviation of the normal mixing distribution (see the module docstring)."""

DEFAULT_MSPRT_MIN_SAMPLES: Final = 30
"""Queries before the plug-in variance is trusted; with ``sigma`` given, 1 suffices.

Simulated (5,000 null streams of 500, checked after every difference, alpha 0.05, tau 0.1):
Gaussian differences sd 0.3 give false-positive rates 0.29 / 0.065 / 0.045 / 0.038 / 0.029
for min_samples 2 / 10 / 20 / 30 / 50; reciprocal-rank differences with 27% ties 0.040 at 10
and 0.034 at 30. Power for a 0.05 effect (sd 0.3, 500 queries) is 0.81 / 0.80 / 0.80 at
10 / 30 / 50, so 30 costs little."""


@dataclass(frozen=True, slots=True)
class MsprtSettings:
    """Level, mixture, variance and limits of the mixture SPRT.

    ``alpha``: the type I error over the whole (unbounded) monitoring. ``tau``: mixing standard
    deviation (``tau^2`` is the mixture variance). ``sigma``: the standard deviation of the
    differences if known, or a sub-Gaussian bound (1 for differences of [0, 1] measures);
    ``None`` plugs in the running sample standard deviation. ``null``: ``theta0``.
    ``min_samples``: no p-value below 1 (and an unbounded interval) before this many
    differences. ``max_samples``: :class:`MixtureSPRT` stops as ``"inconclusive"`` there.
    """

    alpha: float = 0.05
    tau: float = DEFAULT_TAU
    sigma: float | None = None
    null: float = 0.0
    min_samples: int = DEFAULT_MSPRT_MIN_SAMPLES
    max_samples: int | None = None

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ConfigError(f"mSPRT alpha must be between 0 and 1, got {self.alpha}")
        if not (math.isfinite(self.tau) and self.tau > 0.0):
            raise ConfigError(f"mSPRT tau must be a positive number, got {self.tau}")
        if self.sigma is not None and not (math.isfinite(self.sigma) and self.sigma > 0.0):
            raise ConfigError(f"mSPRT sigma must be None or a positive number, got {self.sigma}")
        if not math.isfinite(self.null):
            raise ConfigError(f"mSPRT null must be a finite number, got {self.null}")
        low = 1 if self.sigma is not None else 2
        if not is_int(self.min_samples) or self.min_samples < low:
            raise ConfigError(
                f"mSPRT min_samples must be an integer >= {low}, got {self.min_samples}"
            )
        if self.max_samples is not None and (
            not is_int(self.max_samples) or self.max_samples < self.min_samples
        ):
            raise ConfigError(
                f"mSPRT max_samples must be None or an integer >= min_samples"
                f" ({self.min_samples}), got {self.max_samples}"
            )


def mixture_likelihood_ratio(
    n: FloatArray | float,
    mean: FloatArray | float,
    variance: FloatArray | float,
    tau: float,
    null: float = 0.0,
) -> FloatArray:
    """``Lambda_n(theta0)`` of the module docstring, elementwise; 0 where ``variance`` is 0.

    Computed as ``exp(log Lambda)``; overflows to ``inf`` for overwhelming evidence.
    """
    n_, m, v = (np.asarray(x, dtype=np.float64) for x in (n, mean, variance))
    t2 = tau * tau
    spread = v + n_ * t2
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        exponent = n_ * n_ * t2 * (m - null) ** 2 / (2.0 * v * spread)
        out = np.exp(0.5 * np.log(v / spread) + exponent)
    return np.where(v > 0.0, out, 0.0)


def half_width(
    n: FloatArray | float, variance: FloatArray | float, tau: float, alpha: float
) -> FloatArray:
    """``h_n`` of the module docstring: ``{theta: Lambda_n(theta) < 1/alpha} = dbar_n ± h_n``."""
    n_, v = np.asarray(n, dtype=np.float64), np.asarray(variance, dtype=np.float64)
    t2 = tau * tau
    spread = v + n_ * t2
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.sqrt(v * spread / (n_ * n_ * t2) * np.log(spread / (v * alpha * alpha)))
    return np.where(n_ > 0, out, np.inf)


@dataclass(frozen=True, slots=True)
class MsprtPath:
    """The mSPRT after each observation: ``pvalues[..., i]`` and ``lower/upper[..., i]`` hold
    the always-valid p-value and interval after ``i + 1`` differences."""

    pvalues: FloatArray
    lower: FloatArray
    upper: FloatArray


def msprt_path(differences: Values, settings: MsprtSettings | None = None) -> MsprtPath:
    """Always-valid p-values and intervals after every difference.

    ``differences``: 1-d (one stream) or 2-d (streams × observations, for simulation); the
    running quantities are taken along the last axis. Before ``min_samples`` and wherever the
    (plug-in) variance is 0, ``Lambda`` counts as 0 (the p-value stays, the interval is not
    narrowed): a constant stream carries no estimate of its noise.
    """
    settings = settings if settings is not None else MsprtSettings()
    data = finite_differences(differences)
    length = data.shape[-1]
    n = np.arange(1, length + 1, dtype=np.float64)
    total = np.cumsum(data, axis=-1)
    mean = total / n
    if settings.sigma is not None:
        variance = np.full_like(mean, settings.sigma**2)
    else:
        # Running unbiased variance from centred sums (Welford-equivalent, stable enough for
        # values in a bounded range); n = 1 has no estimate.
        squares = np.cumsum(data * data, axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            variance = np.maximum(squares - n * mean * mean, 0.0) / (n - 1.0)
        variance[..., 0] = 0.0
        # rounding noise in a constant stream must not become a tiny positive variance
        variance = np.where(variance > 1e-12 * np.maximum(mean * mean, 1e-12), variance, 0.0)
    usable = (n >= settings.min_samples) & (variance > 0.0)
    ratio = np.where(
        usable, mixture_likelihood_ratio(n, mean, variance, settings.tau, settings.null), 0.0
    )
    with np.errstate(divide="ignore"):
        pvalues = np.minimum.accumulate(np.minimum(1.0, 1.0 / ratio), axis=-1)
    width = np.where(usable, half_width(n, variance, settings.tau, settings.alpha), np.inf)
    lower = np.maximum.accumulate(np.where(usable, mean - width, -np.inf), axis=-1)
    upper = np.minimum.accumulate(np.where(usable, mean + width, np.inf), axis=-1)
    # an empty running intersection (the data contradict every theta; probability <= alpha
    # with sigma known) is reported as a point, its midpoint
    crossed = lower > upper
    if crossed.any():
        with np.errstate(invalid="ignore"):  # inf - inf where not crossed, discarded
            mid = 0.5 * (lower + upper)
        lower = np.where(crossed, mid, lower)
        upper = np.where(crossed, mid, upper)
    return MsprtPath(pvalues=pvalues, lower=lower, upper=upper)


def first_rejections(
    differences: Values, settings: MsprtSettings | None = None
) -> NDArray[np.int64]:
    """Per stream (row), the number of differences at which ``p_n <= alpha`` first, or 0."""
    settings = settings if settings is not None else MsprtSettings()
    path = msprt_path(differences, settings)
    rejected = np.atleast_2d(path.pvalues) <= settings.alpha
    first = np.argmax(rejected, axis=-1) + 1
    return np.where(rejected.any(axis=-1), first, 0).astype(np.int64)


class MixtureSPRT:
    """The mSPRT as a running test over a stream of paired differences.

    Keeps every difference (the plug-in variance and the running intersection need the
    path; the arrays are small next to the logs that produce them). :meth:`update` returns the
    decision: ``"accept_treatment"`` when ``p <= alpha`` and the interval lies above
    ``null``, ``"accept_control"`` when it lies below, ``"inconclusive"`` at ``max_samples``,
    else ``"continue"``. Once decided, later differences are ignored.
    """

    __slots__ = ("_decision", "_path", "_settings", "_values")

    def __init__(self, settings: MsprtSettings | None = None) -> None:
        self._settings = settings if settings is not None else MsprtSettings()
        self._values: list[float] = []
        self._decision: Decision = "continue"
        self._path: MsprtPath | None = None

    @property
    def settings(self) -> MsprtSettings:
        return self._settings

    @property
    def decision(self) -> Decision:
        return self._decision

    @property
    def n(self) -> int:
        """Differences used (up to and including the one that decided)."""
        return len(self._values)

    @property
    def pvalue(self) -> float:
        """The always-valid p-value now (1 before any evidence)."""
        return float(self._path.pvalues[-1]) if self._path is not None else 1.0

    @property
    def interval(self) -> tuple[float, float]:
        """The always-valid ``1 - alpha`` confidence interval for the mean difference now."""
        if self._path is None:
            return (-math.inf, math.inf)
        return (float(self._path.lower[-1]), float(self._path.upper[-1]))

    def update(self, differences: float | Values) -> Decision:
        """Observe ``differences`` in order; return the decision after them."""
        if self._decision != "continue":
            return self._decision
        new = finite_differences(np.atleast_1d(np.asarray(differences, dtype=np.float64)))
        if new.ndim != 1:
            raise ConfigError(f"differences must be one number or a 1-d sequence: {new.shape}")
        settings = self._settings
        start = len(self._values)
        if settings.max_samples is not None:
            new = new[: settings.max_samples - start]
        if new.size == 0:
            return self._decision
        path = msprt_path(np.concatenate((np.array(self._values), new)), settings)
        stop = path.pvalues[start:] <= settings.alpha
        if settings.max_samples is not None:
            stop |= np.arange(start + 1, start + new.size + 1) >= settings.max_samples
        last = int(np.argmax(stop)) if stop.any() else new.size - 1
        end = start + last + 1
        self._values.extend(float(x) for x in new[: last + 1])
        self._path = MsprtPath(path.pvalues[:end], path.lower[:end], path.upper[:end])
        if path.pvalues[end - 1] <= settings.alpha:
            low, high = self.interval
            self._decision = "accept_treatment" if low > settings.null else "accept_control"
            if not (low > settings.null or high < settings.null):
                self._decision = "inconclusive"  # only through rounding at the boundary
        elif settings.max_samples is not None and end >= settings.max_samples:
            self._decision = "inconclusive"
        return self._decision

    def __repr__(self) -> str:
        low, high = self.interval
        return (
            f"MixtureSPRT(decision={self._decision!r}, n={self.n}, p={self.pvalue:.4g},"
            f" interval=({low:.4g}, {high:.4g}))"
        )


def finite_differences(values: Values) -> FloatArray:
    """``values`` as a 1-d or 2-d float array; ConfigError for anything else, or a NaN or
    infinite value (shared with the bounded confidence sequences)."""
    try:
        data = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"differences must be numbers: {error}") from None
    if data.ndim not in (1, 2):
        raise ConfigError(f"differences must be 1-d or 2-d, got shape {data.shape}")
    if not np.isfinite(data).all():
        raise ConfigError("differences must be finite numbers")
    return data
