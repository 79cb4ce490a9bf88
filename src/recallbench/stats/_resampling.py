"""Paired bootstrap intervals and the paired randomisation test, vectorised over comparisons.

Each row of ``differences`` is one comparison (a system against the baseline on one measure):
the per-query differences d_1..d_n of the same n queries. All rows share the resamples, so
one pass serves every system and measure: a resample is a matrix product of the differences
with a block of resampling weights, computed a block at a time to bound memory.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from recallbench.core._errors import ConfigError

FloatArray = NDArray[np.float64]
IntervalMethod = Literal["bca", "percentile"]
INTERVAL_NAMES = {"bca": "BCa", "percentile": "percentile"}

BLOCK_CELLS = 4_000_000
"""Resampling weights generated at a time (resamples x queries): 32 MB of float64."""

TIE_TOLERANCE = 1e-9
"""Resampled sums within this fraction of sum(|d|) of the observed one count as ties (>=):
the same sum reached through another order of additions differs in its last bits."""


def _blocks(resamples: int, n: int) -> Iterator[int]:
    size = max(1, BLOCK_CELLS // max(n, 1))
    for start in range(0, resamples, size):
        yield min(size, resamples - start)


def bootstrap_means(
    differences: FloatArray, resamples: int, rng: np.random.Generator
) -> FloatArray:
    """Means of ``resamples`` paired bootstrap resamples of every row (rows x resamples).

    A resample draws n queries with replacement (the same draw for every row, keeping each
    query's differences together: the paired bootstrap); its mean is the count-weighted
    mean ``sum_i c_i d_i / n`` with multinomial counts c.

    Efron, B. & Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 6 and 16.
    """
    n = differences.shape[1]
    blocks = (_counts(rng, size, n) for size in _blocks(resamples, n))
    return _weighted_means(differences, resamples, blocks)


def _counts(rng: np.random.Generator, size: int, n: int) -> FloatArray:
    """A block of ``size`` resamples' counts of each of n queries, transposed (n x size)."""
    draws = rng.integers(0, n, size=(size, n))
    draws += np.arange(size)[:, None] * n
    counts = np.bincount(draws.ravel(), minlength=size * n).reshape(size, n)
    return counts.T.astype(np.float64)


def _weighted_means(
    differences: FloatArray, resamples: int, blocks: Iterable[FloatArray]
) -> FloatArray:
    rows, n = differences.shape
    means = np.empty((rows, resamples))
    done = 0
    for block in blocks:  # drawn one at a time: memory for one block
        size = block.shape[1]
        means[:, done : done + size] = differences @ block / n
        done += size
    return means


def _frozen(blocks: Iterable[FloatArray]) -> tuple[FloatArray, ...]:
    """Blocks kept for later calls, made read-only so that no caller changes them."""
    kept = tuple(blocks)
    for block in kept:
        block.setflags(write=False)
    return kept


@functools.lru_cache(maxsize=4)
def _seeded_counts(seed: int, n: int, resamples: int) -> tuple[FloatArray, ...]:
    """The blocks :func:`bootstrap_means` draws from the seed's fresh bootstrap stream."""
    rng = seeded_streams(seed)[0]
    return _frozen(_counts(rng, size, n) for size in _blocks(resamples, n))


def seeded_bootstrap_means(differences: FloatArray, resamples: int, seed: int) -> FloatArray:
    """:func:`bootstrap_means` with the seed's fresh bootstrap stream, the same numbers. The
    draws of one block (at most BLOCK_CELLS weights) are kept for the next call with the
    same n: `history` resamples twenty series of the same queries, and drawing was a third
    of its time."""
    n = differences.shape[1]
    if resamples * n > BLOCK_CELLS:  # too many to keep
        return bootstrap_means(differences, resamples, seeded_streams(seed)[0])
    return _weighted_means(differences, resamples, _seeded_counts(seed, n, resamples))


def seeded_streams(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    """Bootstrap and randomisation generators: independent streams of one seed, the same
    for `compare`, run reports and `history`, so one seed gives one set of resamples."""
    bootstrap, randomisation = np.random.SeedSequence(seed).spawn(2)
    return np.random.default_rng(bootstrap), np.random.default_rng(randomisation)


def bootstrap_interval(
    values: FloatArray,
    resamples: int,
    level: float,
    method: IntervalMethod,
    rng: np.random.Generator,
) -> tuple[FloatArray, FloatArray]:
    """The bootstrap interval of the mean of every row of ``values`` (rows x n), the rows
    sharing their resamples: BCa (Efron 1987) or percentile."""
    estimates = bootstrap_means(values, resamples, rng)
    if method == "bca":
        return bca_interval(values, estimates, level)
    return percentile_interval(estimates, level)


def mean_intervals(
    samples: Sequence[FloatArray],
    resamples: int,
    level: float,
    method: IntervalMethod,
    seed: int,
) -> list[tuple[float, float] | None]:
    """The bootstrap interval of the mean of each sample; None for fewer than 2 values.
    Samples of equal length share one set of resamples, from the seed's bootstrap stream."""
    out: list[tuple[float, float] | None] = [None] * len(samples)
    by_length: dict[int, list[int]] = {}
    for index, sample in enumerate(samples):
        by_length.setdefault(sample.size, []).append(index)
    for n, indices in by_length.items():
        if n < 2:
            continue
        values = np.array([samples[i] for i in indices], dtype=np.float64).reshape(-1, n)
        estimates = seeded_bootstrap_means(values, resamples, seed)
        if method == "bca":
            low, high = bca_interval(values, estimates, level)
        else:
            low, high = percentile_interval(estimates, level)
        for row, index in enumerate(indices):
            out[index] = (float(low[row]), float(high[row]))
    return out


def percentile_interval(estimates: FloatArray, level: float) -> tuple[FloatArray, FloatArray]:
    """The ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of each row's resamples."""
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(estimates, [tail, 100 - tail], axis=1)
    return low, high


def bca_interval(
    differences: FloatArray, estimates: FloatArray, level: float
) -> tuple[FloatArray, FloatArray]:
    """Bias-corrected and accelerated bootstrap interval of the mean of each row.

    ``z0 = Phi^-1(share of resampled means below the observed mean)`` (ties count half),
    acceleration from the jackknife means ``m_(i) = (sum d - d_i) / (n - 1)``:
    ``a = sum (m - m_(i))^3 / (6 (sum (m - m_(i))^2)^(3/2))``; the interval is the
    ``Phi(z0 + (z0 + z_q) / (1 - a (z0 + z_q)))`` quantiles of the resamples for
    ``q = (1 -+ level) / 2``. Rows whose differences do not vary get the point itself.

    Efron, B. (1987). Better bootstrap confidence intervals. JASA 82(397), 171-185;
    DiCiccio, T. & Efron, B. (1996). Bootstrap confidence intervals. Stat. Sci. 11(3).
    """
    from scipy.special import ndtr, ndtri

    n = differences.shape[1]
    observed = differences.mean(axis=1)
    below = (estimates < observed[:, None]).sum(axis=1)
    at_most = (estimates <= observed[:, None]).sum(axis=1)
    z0 = ndtri((below + at_most) / (2 * estimates.shape[1]))
    jackknife = (differences.sum(axis=1, keepdims=True) - differences) / max(n - 1, 1)
    spread = jackknife.mean(axis=1, keepdims=True) - jackknife
    with np.errstate(divide="ignore", invalid="ignore"):
        acceleration = (spread**3).sum(axis=1) / (6 * ((spread**2).sum(axis=1)) ** 1.5)
        quantiles = []
        for z_q in ndtri(np.array([(1 - level) / 2, (1 + level) / 2])):
            quantiles.append(ndtr(z0 + (z0 + z_q) / (1 - acceleration * (z0 + z_q))))
    point = (np.ptp(differences, axis=1) == 0) | ~np.isfinite(quantiles[0] + quantiles[1])
    low, high = (_row_percentiles(estimates, np.where(point, 0.5, q) * 100) for q in quantiles)
    low[point] = high[point] = observed[point]
    return low, high


def _row_percentiles(estimates: FloatArray, percents: FloatArray) -> FloatArray:
    """``np.percentile(estimates[row], percents[row])`` of every row at once, the same
    numbers: numpy's linear method (the order statistics either side of ``(n - 1) q``,
    interpolated as its ``_lerp``), in place of a call per row, which took most of the
    time of `history`'s 2,400 intervals."""
    n = estimates.shape[1]
    ordered = np.sort(estimates, axis=1)
    virtual = (n - 1) * np.true_divide(percents, 100)
    floor = np.floor(virtual)
    below = np.clip(floor, 0, n - 1).astype(np.intp)
    above = np.clip(floor + 1, 0, n - 1).astype(np.intp)
    below[virtual >= n - 1] = n - 1
    rows = np.arange(estimates.shape[0])
    a, b = ordered[rows, below], ordered[rows, above]
    gamma = virtual - floor
    diff = b - a
    out: FloatArray = a + diff * gamma
    late = gamma >= 0.5
    out[late] = (b - diff * (1 - gamma))[late]
    out[np.isnan(ordered[:, -1])] = np.nan  # as np.percentile: a row with NaN gives NaN
    return out


def randomisation_pvalues(
    differences: FloatArray, resamples: int, rng: np.random.Generator
) -> tuple[FloatArray, bool]:
    """Two-sided paired randomisation test of a zero mean difference, for every row.

    Under the null hypothesis each query's two values are exchangeable, so the sign of each
    difference is a fair coin. With b the number of sign assignments whose |sum| is at least
    the observed |sum|: exact (all 2^n assignments, ``p = b / 2^n``) when 2^n <= resamples,
    otherwise ``p = (b + 1) / (resamples + 1)`` over random assignments (the observed one
    counted once, so p is never 0). Returns the p-values and whether they are exact.

    Fisher, R. A. (1935). The Design of Experiments, sec. 21; Smucker, M., Allan, J. &
    Carterette, B. (2007). A comparison of statistical significance tests for information
    retrieval evaluation. CIKM; Phipson, B. & Smyth, G. (2010). Permutation p-values should
    never be zero. Stat. Appl. Genet. Mol. Biol. 9(1).
    """
    rows, n = differences.shape
    observed = np.abs(differences.sum(axis=1))
    threshold = observed - TIE_TOLERANCE * np.abs(differences).sum(axis=1)
    exact = n <= 62 and 2**n <= resamples
    at_least = np.zeros(rows, dtype=np.int64)
    if exact:
        patterns = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
        flipped = differences @ (1.0 - 2.0 * patterns).T
        at_least += (np.abs(flipped) >= threshold[:, None]).sum(axis=1)
        return at_least / 2**n, True
    return _randomised(differences, (_flips(rng, size, n) for size in _blocks(resamples, n)))


def _flips(rng: np.random.Generator, size: int, n: int) -> FloatArray:
    """A block of ``size`` random sign assignments of n differences: 1 flips, transposed."""
    packed = math.ceil(n / 8)
    bits = np.unpackbits(rng.integers(0, 256, size=(size, packed), dtype=np.uint8), axis=1, count=n)
    return bits.T.astype(np.float64)


def _randomised(differences: FloatArray, blocks: Iterable[FloatArray]) -> tuple[FloatArray, bool]:
    rows = differences.shape[0]
    observed = np.abs(differences.sum(axis=1))
    threshold = observed - TIE_TOLERANCE * np.abs(differences).sum(axis=1)
    total = differences.sum(axis=1, keepdims=True)
    at_least = np.zeros(rows, dtype=np.int64)
    resamples = 0
    for block in blocks:
        # flipping the signs of the chosen d_i subtracts twice their sum
        flipped = total - 2.0 * (differences @ block)
        at_least += (np.abs(flipped) >= threshold[:, None]).sum(axis=1)
        resamples += block.shape[1]
    return (at_least + 1) / (resamples + 1), False


@functools.lru_cache(maxsize=4)
def _seeded_flips(seed: int, n: int, resamples: int) -> tuple[FloatArray, ...]:
    """The blocks :func:`randomisation_pvalues` draws from the seed's fresh stream."""
    rng = seeded_streams(seed)[1]
    return _frozen(_flips(rng, size, n) for size in _blocks(resamples, n))


def seeded_randomisation_pvalues(
    differences: FloatArray, resamples: int, seed: int
) -> tuple[FloatArray, bool]:
    """:func:`randomisation_pvalues` with the seed's fresh randomisation stream, the same
    numbers; one block of sign flips is kept for the next call with the same n (see
    :func:`seeded_bootstrap_means`)."""
    n = differences.shape[1]
    if (n <= 62 and 2**n <= resamples) or resamples * n > BLOCK_CELLS:
        return randomisation_pvalues(differences, resamples, seeded_streams(seed)[1])
    return _randomised(differences, _seeded_flips(seed, n, resamples))


def check_resamples(resamples: int, level: float) -> None:
    if resamples < 1_000:
        raise ConfigError(f"resamples must be at least 1,000, got {resamples:,}")
    if not 0.5 <= level < 1.0:
        raise ConfigError(f"confidence level must be in [0.5, 1), got {level}")
