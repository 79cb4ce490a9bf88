"""Cluster bootstrap intervals of statistics over nested units.

Units (documents, sessions, queries) often come in clusters (the sessions of one
conversation, the queries of one user) whose units are alike: a conversation's sessions
share speakers, topics and length, so a system that does badly on one of them tends to do
badly on the others. A bootstrap that resamples units as if they were independent then
understates the spread of a mean over units: with m units per cluster and intra-cluster
correlation rho the variance of the mean is larger by the design effect ``1 + (m - 1) rho``
(Kish, Survey Sampling, 1965), and an interval that ignores it covers the truth far less
often than it says.

The cluster bootstrap (Davison & Hinkley's first-stage resampling of hierarchical data)
resamples what is independent, the clusters: each resample draws the G clusters G times
with replacement and keeps every unit of a drawn cluster, so a unit's weight is the number
of times its cluster was drawn. A statistic is a function of those weights over units (a
weighted mean of per-unit values, a ratio of pooled counts); the interval is taken from its
values over the resamples. With every unit its own cluster it is the ordinary bootstrap of
units.

With few clusters the cluster bootstrap, like every cluster-robust method, is too narrow:
its variance carries the factor (G - 1) / G and its quantiles are normal-like where a t with
G - 1 degrees of freedom would fit, so with 10 clusters a nominal 95% interval covers about
90% (Cameron, Gelbach & Miller 2008; benchmarks/cluster_bootstrap_coverage.py measures it).
It is still far closer to 95% than the unit bootstrap of clustered data.

Davison, A. C. & Hinkley, D. V. (1997). Bootstrap Methods and their Application, sec. 3.8
(hierarchical data). Cambridge University Press.
Field, C. A. & Welsh, A. H. (2007). Bootstrapping clustered data. JRSS-B 69(3), 369-390.
Efron, B. (1987). Better bootstrap confidence intervals. JASA 82(397), 171-185.
Cameron, A. C., Gelbach, J. B. & Miller, D. L. (2008). Bootstrap-based improvements for
inference with clustered errors. Review of Economics and Statistics 90(3), 414-427.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterator, Sequence

import numpy as np
from numpy.typing import NDArray

from recallbench.stats import _resampling
from recallbench.stats._resampling import (
    TIE_TOLERANCE,
    FloatArray,
    IntervalMethod,
    seeded_streams,
)

Statistic = Callable[[FloatArray], FloatArray]
"""Maps a (k, n_units) matrix of unit weights to the k values of the statistic; NaN where
the statistic is undefined for a row (a resample that drew no unit it needs)."""

IntArray = NDArray[np.intp]


def cluster_codes(labels: Sequence[Hashable]) -> tuple[IntArray, int]:
    """Each unit's cluster as an index 0..G-1, clusters numbered by first appearance, and G.

    Labels are compared as dictionary keys: any hashable value (ints, strings, None, tuples)
    names a cluster, and labels that are equal as keys (1, 1.0 and True) name the same one.
    """
    index: dict[Hashable, int] = {}
    codes = np.fromiter(
        (index.setdefault(label, len(index)) for label in labels),
        dtype=np.intp,
        count=len(labels),
    )
    return codes, len(index)


def _weight_blocks(
    codes: IntArray, groups: int, resamples: int, rng: np.random.Generator
) -> Iterator[FloatArray]:
    """The resamples' unit weights, a block of rows at a time (at most ``BLOCK_CELLS``
    weights per block). With ``codes = 0..n-1`` the draws are those of
    :func:`recallbench.stats._resampling.bootstrap_means` from the same generator."""
    n = codes.size
    for size in _resampling._blocks(resamples, n):
        if groups == 0:
            yield np.zeros((size, n))
            continue
        draws = rng.integers(0, groups, size=(size, groups))
        draws += np.arange(size)[:, None] * groups
        counts = np.bincount(draws.ravel(), minlength=size * groups).reshape(size, groups)
        weights = counts.astype(np.float64)
        # every unit its own cluster: numbered by first appearance, codes are 0..n-1
        yield weights if groups == n else weights[:, codes]


def cluster_weights(
    labels: Sequence[Hashable], resamples: int, rng: np.random.Generator
) -> FloatArray:
    """Unit weights of ``resamples`` cluster bootstrap resamples (resamples x units).

    ``labels[i]`` is unit i's cluster. Each resample draws G times with replacement from the
    G distinct clusters (numbered by first appearance, see :func:`cluster_codes`); with
    ``c_g`` the number of times cluster g was drawn, ``(c_1..c_G) ~ Multinomial(G, 1/G)``,
    unit i's weight is ``c_g(i)``. A row sums to ``sum_g c_g n_g`` (the units drawn; n_units
    when the clusters have equal sizes) and every weight has expectation 1. The same
    generator state gives the same weights; with every unit its own cluster (whatever the
    labels) they are the counts :func:`recallbench.stats._resampling.bootstrap_means` draws.

    Davison & Hinkley (1997), sec. 3.8, first-stage resampling; Field & Welsh (2007).
    """
    codes, groups = cluster_codes(labels)
    blocks = list(_weight_blocks(codes, groups, resamples, rng))
    if not blocks:
        return np.zeros((0, codes.size))
    return np.concatenate(blocks)


def _evaluate(statistic: Statistic, weights: FloatArray) -> FloatArray:
    """The statistic of each row of weights; 0/0 and x/0 (undefined rows) without warnings."""
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.asarray(statistic(weights), dtype=np.float64)
    if values.shape != (weights.shape[0],):
        raise ValueError(
            f"the statistic must give one value per row of weights: {weights.shape[0]} rows "
            f"gave shape {values.shape}"
        )
    return values


def _jackknife(statistic: Statistic, codes: IntArray, groups: int) -> FloatArray:
    """The statistic with each cluster left out in turn (weights 1, 0 on its units)."""
    n = codes.size
    values = np.empty(groups)
    rows = max(1, _resampling.BLOCK_CELLS // max(n, 1))
    for start in range(0, groups, rows):
        left_out = np.arange(start, min(start + rows, groups))
        weights = (codes[None, :] != left_out[:, None]).astype(np.float64)
        values[start : start + left_out.size] = _evaluate(statistic, weights)
    return values


def cluster_acceleration(statistic: Statistic, labels: Sequence[Hashable]) -> float:
    """The BCa acceleration from the leave-one-cluster-out jackknife.

    With ``t_(g)`` the statistic with cluster g's units weighted 0 and the rest 1 and
    ``t_(.)`` their mean: ``a = sum_g (t_(.) - t_(g))^3 / (6 (sum_g (t_(.) - t_(g))^2)^1.5)``
    (Efron 1987; Davison & Hinkley 1997, sec. 5.3, with clusters as the jackknife's
    units). Leave-outs where the statistic is undefined (NaN) are skipped; 0
    when fewer than 2 are defined or they do not differ.
    """
    codes, groups = cluster_codes(labels)
    values = _jackknife(statistic, codes, groups)
    return _acceleration(values)


def _acceleration(jackknife: FloatArray) -> float:
    values = jackknife[np.isfinite(jackknife)]
    if values.size < 2:
        return 0.0
    spread = values.mean() - values
    squares = float((spread**2).sum())
    if squares == 0.0:
        return 0.0
    return float((spread**3).sum()) / (6.0 * squares * math.sqrt(squares))


def cluster_interval(
    statistic: Statistic,
    labels: Sequence[Hashable],
    resamples: int,
    level: float,
    method: IntervalMethod,
    seed: int,
) -> tuple[float, float] | None:
    """The cluster bootstrap interval of ``statistic`` at ``level``: BCa or percentile.

    ``statistic`` maps a (k, n_units) weight matrix W to k values: for per-unit values v the
    weighted mean ``W @ v / W.sum(axis=1)``, for per-unit counts (hits, totals) a ratio of
    pooled counts ``(W @ hits) / (W @ totals)``. The observed value is ``t = statistic(1)``
    (every weight 1); the resamples' weights are :func:`cluster_weights` from the seed's
    bootstrap stream (:func:`recallbench.stats._resampling.seeded_streams`), so a seed gives
    one set of resamples. Resamples where the statistic is undefined (NaN or infinite) are
    dropped, and the B that remain give the interval:

    * percentile: the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the
      resampled values;
    * BCa (Efron 1987): ``z0 = Phi^-1((#{t* < t} + #{t* <= t}) / 2B)`` (ties count half;
      values within ``TIE_TOLERANCE`` of t, relative to the largest |value|, are ties),
      acceleration a from the leave-one-cluster-out jackknife
      (:func:`cluster_acceleration`), and the quantiles
      ``Phi(z0 + (z0 + z_q) / (1 - a (z0 + z_q)))`` for ``z_q = Phi^-1((1 -+ level) / 2)``.
      Where BCa is undefined (every resample on one side of t, so z0 is infinite, or
      ``a (z0 + z_q) >= 1``) it is the percentile interval.

    None with fewer than 2 clusters, when the observed value is undefined, or when no
    resample is defined; ``(t, t)`` when every resample equals t (no spread, e.g. constant
    data). With every unit its own cluster this is the ordinary bootstrap of units.

    Davison & Hinkley (1997), sec. 3.8 and 5.3; Field & Welsh (2007); Efron (1987).
    Cameron, Gelbach & Miller (2008): with few clusters (about 10) a nominal 95% interval
    covers about 90%.
    """
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if method not in ("bca", "percentile"):
        raise ValueError(f"method must be 'bca' or 'percentile', got {method!r}")
    codes, groups = cluster_codes(labels)
    if groups < 2:
        return None
    observed = float(_evaluate(statistic, np.ones((1, codes.size)))[0])
    if not math.isfinite(observed):
        return None
    rng = seeded_streams(seed)[0]
    found = np.concatenate(
        [_evaluate(statistic, w) for w in _weight_blocks(codes, groups, resamples, rng)]
    )
    estimates = found[np.isfinite(found)]
    if estimates.size == 0:
        return None
    tolerance = TIE_TOLERANCE * max(abs(observed), float(np.abs(estimates).max()))
    if np.all(np.abs(estimates - observed) <= tolerance):
        return observed, observed
    tail = (1.0 - level) / 2.0
    quantiles = (tail, 1.0 - tail)
    if method == "bca":
        acceleration = _acceleration(_jackknife(statistic, codes, groups))
        adjusted = _bca_quantiles(estimates, observed, tolerance, acceleration, level)
        if adjusted is not None:
            quantiles = adjusted
    low, high = np.percentile(estimates, [quantiles[0] * 100, quantiles[1] * 100])
    return float(low), float(high)


def _bca_quantiles(
    estimates: FloatArray, observed: float, tolerance: float, acceleration: float, level: float
) -> tuple[float, float] | None:
    """The BCa levels of the quantiles (Efron 1987), or None where they are undefined."""
    from scipy.special import ndtr, ndtri

    below = int((estimates < observed - tolerance).sum())
    at_most = int((estimates <= observed + tolerance).sum())
    share = (below + at_most) / (2 * estimates.size)
    if not 0.0 < share < 1.0:
        return None
    z0 = float(ndtri(share))
    out = []
    for q in ((1.0 - level) / 2.0, (1.0 + level) / 2.0):
        shifted = z0 + float(ndtri(q))
        denominator = 1.0 - acceleration * shifted
        if denominator <= 0.0:
            return None
        out.append(float(ndtr(z0 + shifted / denominator)))
    return out[0], out[1]
