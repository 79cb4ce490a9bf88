"""The cluster bootstrap (resample clusters, keep their units) against references built
independently of it: the unit bootstrap it must reduce to, exact enumeration of every draw,
a jackknife acceleration computed by hand, and coverage on simulated nested data.

The singleton-cluster check is exact by construction: with every unit its own cluster, in
order, ``cluster_weights`` draws the same counts from the same generator as
``bootstrap_means``, so the weights and the intervals agree to rounding, not just in
distribution. The enumeration and coverage checks are Monte Carlo, with the tolerance stated
where it is used.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Hashable, Sequence
from fractions import Fraction

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy.special import ndtr, ndtri

from recallbench.stats import _resampling
from recallbench.stats._cluster import (
    cluster_acceleration,
    cluster_codes,
    cluster_interval,
    cluster_weights,
)
from recallbench.stats._resampling import bootstrap_interval, bootstrap_means, seeded_streams

FloatArray = NDArray[np.float64]


def mean_of(values: FloatArray):  # type: ignore[no-untyped-def]
    """The weighted mean of per-unit values, one per row of weights."""
    return lambda weights: weights @ values / weights.sum(axis=1)


def ratio_of(hits: FloatArray, totals: FloatArray):  # type: ignore[no-untyped-def]
    """A ratio of pooled counts (micro-averaged), one per row of weights."""
    return lambda weights: (weights @ hits) / (weights @ totals)


# --- (a) singleton clusters are the unit bootstrap -----------------------------------------


def test_singleton_clusters_draw_exactly_the_unit_bootstraps_counts() -> None:
    """bootstrap_means of the identity matrix returns each resample's counts / n."""
    n, resamples = 37, 2_500
    weights = cluster_weights(list(range(n)), resamples, np.random.default_rng(11))
    counts = bootstrap_means(np.eye(n), resamples, np.random.default_rng(11)) * n
    assert weights.shape == (resamples, n)
    assert np.array_equal(weights, np.rint(counts).T)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_singleton_clusters_give_the_unit_bootstrap_interval(method: str) -> None:
    values = np.random.default_rng(3).beta(0.5, 5.0, 80)
    found = cluster_interval(mean_of(values), list(range(80)), 4_000, 0.95, method, seed=7)  # type: ignore[arg-type]
    low, high = bootstrap_interval(values[None, :], 4_000, 0.95, method, seeded_streams(7)[0])  # type: ignore[arg-type]
    assert found is not None
    assert found == pytest.approx((low[0], high[0]), rel=1e-12)


def test_singleton_clusters_match_the_unit_bootstrap_in_distribution() -> None:
    """Not by construction: unit labels in a shuffled order and another seed, so other
    draws; quantiles of the resampled means agree within Monte Carlo error (20,000
    resamples each: the s.e. of a 5% to 95% quantile is under 0.06 standard errors of the
    mean, the tolerance 0.1 of them)."""
    rng = np.random.default_rng(5)
    values = rng.gamma(0.5, 1.0, 60)
    order = rng.permutation(60)
    labels = [f"u{i}" for i in order]
    weights = cluster_weights(labels, 20_000, np.random.default_rng(1))
    cluster_means = weights @ values / weights.sum(axis=1)
    unit_means = bootstrap_means(values[None, :], 20_000, np.random.default_rng(2))[0]
    probabilities = [5, 25, 50, 75, 95]
    scale = values.std() / math.sqrt(60)
    assert np.percentile(cluster_means, probabilities) == pytest.approx(
        np.percentile(unit_means, probabilities), abs=0.1 * scale
    )


# --- (b) weights ----------------------------------------------------------------------------


def test_equal_clusters_rows_sum_to_the_units_and_units_share_their_clusters_weight() -> None:
    labels = [g for g in range(6) for _ in range(4)]
    weights = cluster_weights(labels, 3_000, np.random.default_rng(0))
    assert weights.shape == (3_000, 24)
    assert np.all(weights.sum(axis=1) == 24)
    per_cluster = weights.reshape(3_000, 6, 4)
    assert np.all(per_cluster == per_cluster[:, :, :1])
    # the cluster counts are Multinomial(6, 1/6): mean 1, variance 5/6
    counts = per_cluster[:, :, 0]
    assert counts.mean() == pytest.approx(1.0, abs=0.03)
    assert counts.var() == pytest.approx(5 / 6, abs=0.05)
    assert set(np.unique(weights)) <= set(range(7))


def test_unequal_clusters_rows_sum_to_the_drawn_units() -> None:
    sizes = [1, 5, 2, 9]
    labels = [g for g, size in enumerate(sizes) for _ in range(size)]
    weights = cluster_weights(labels, 500, np.random.default_rng(4))
    starts = np.cumsum([0, *sizes[:-1]])
    counts = weights[:, starts]
    assert np.all(counts.sum(axis=1) == 4)
    assert np.array_equal(weights.sum(axis=1), counts @ np.array(sizes, dtype=float))
    assert len({tuple(row) for row in weights.sum(axis=1, keepdims=True)}) > 1


def test_odd_labels_in_any_order_number_clusters_by_first_appearance() -> None:
    labels: list[Hashable] = ["conv-b", 7, "conv-b", None, 7, ("x", 1), None, "conv-b"]
    codes, groups = cluster_codes(labels)
    assert groups == 4
    assert codes.tolist() == [0, 1, 0, 2, 1, 3, 2, 0]
    odd = cluster_weights(labels, 200, np.random.default_rng(9))
    plain = cluster_weights(codes.tolist(), 200, np.random.default_rng(9))
    assert np.array_equal(odd, plain)
    # the same clusters under other names and first appearances: the same weights
    renamed = cluster_weights([10, 20, 10, 30, 20, 40, 30, 10], 200, np.random.default_rng(9))
    assert np.array_equal(odd, renamed)


def test_weights_are_deterministic_for_a_generator_and_differ_between_seeds() -> None:
    labels = ["a", "b", "c"] * 5
    first = cluster_weights(labels, 100, np.random.default_rng(1))
    assert np.array_equal(first, cluster_weights(labels, 100, np.random.default_rng(1)))
    assert not np.array_equal(first, cluster_weights(labels, 100, np.random.default_rng(2)))


def test_interval_is_computed_a_block_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """With BLOCK_CELLS small the statistic sees blocks of at most BLOCK_CELLS // n rows,
    and gets every resample."""
    monkeypatch.setattr(_resampling, "BLOCK_CELLS", 100)
    values = np.arange(20, dtype=float)
    labels = [i // 4 for i in range(20)]
    rows: list[int] = []

    def statistic(weights: FloatArray) -> FloatArray:
        rows.append(weights.shape[0])
        result: FloatArray = weights @ values / weights.sum(axis=1)
        return result

    assert cluster_interval(statistic, labels, 1_003, 0.9, "bca", seed=0) is not None
    # observed (1 row), the resamples in blocks of 5, the jackknife (5 rows)
    assert rows[0] == 1 and rows[-1] == 5
    assert max(rows) == 5 and sum(rows[1:-1]) == 1_003
    assert cluster_weights(labels, 1_003, np.random.default_rng(0)).shape == (1_003, 20)


def test_the_interval_uses_the_seeds_bootstrap_stream() -> None:
    rng = np.random.default_rng(8)
    labels = [g for g in range(8) for _ in range(3)]
    values = rng.normal(size=24) + np.repeat(rng.normal(size=8), 3)
    weights = cluster_weights(labels, 2_000, seeded_streams(42)[0])
    expected = np.percentile(weights @ values / weights.sum(axis=1), [5, 95])
    found = cluster_interval(mean_of(values), labels, 2_000, 0.9, "percentile", seed=42)
    assert found == pytest.approx(tuple(expected), rel=1e-12)
    assert found != cluster_interval(mean_of(values), labels, 2_000, 0.9, "percentile", seed=43)


# --- (c) exact enumeration of the G^G draws -------------------------------------------------

SIZES = (1, 2, 3)
HITS = np.array([1.0, 0.0, 2.0, 3.0, 1.0, 0.0])
TOTALS = np.array([3.0, 1.0, 2.0, 4.0, 3.0, 1.0])
LABELS = [g for g, size in enumerate(SIZES) for _ in range(size)]


def _exact_distribution() -> dict[float, Fraction]:
    """Every ordered draw of 3 clusters from 3 (27, equally likely) and its pooled ratio."""
    cluster_hits = [HITS[np.array(LABELS) == g].sum() for g in range(3)]
    cluster_totals = [TOTALS[np.array(LABELS) == g].sum() for g in range(3)]
    out: Counter[float] = Counter()
    for draw in itertools.product(range(3), repeat=3):
        ratio = sum(cluster_hits[g] for g in draw) / sum(cluster_totals[g] for g in draw)
        out[round(ratio, 12)] += 1
    return {value: Fraction(count, 27) for value, count in sorted(out.items())}


def _exact_quantile(distribution: dict[float, Fraction], probability: float) -> float:
    cumulative = Fraction(0)
    for value, mass in distribution.items():
        cumulative += mass
        if cumulative >= probability:
            return value
    raise AssertionError("probabilities sum to 1")


def test_resampled_ratio_matches_exact_enumeration() -> None:
    """Each value's share of 200,000 resamples is within 5 s.e. of its exact probability."""
    exact = _exact_distribution()
    assert len(exact) == 9  # of 10 compositions, only (1, 1, 1) and (0, 0, 3) tie at 1/2
    weights = cluster_weights(LABELS, 200_000, np.random.default_rng(13))
    ratios = np.round((weights @ HITS) / (weights @ TOTALS), 12)
    values, counts = np.unique(ratios, return_counts=True)
    assert set(values.tolist()) == set(exact)
    for value, count in zip(values.tolist(), counts.tolist(), strict=True):
        p = float(exact[value])
        assert count / 200_000 == pytest.approx(p, abs=5 * math.sqrt(p * (1 - p) / 200_000))


@pytest.mark.parametrize("level", [0.5, 0.8, 0.95])
def test_percentile_interval_matches_exact_quantiles(level: float) -> None:
    """The cumulative probabilities are multiples of 1/27, at least 0.25/27 away from the
    interval's tails; with 100,000 resamples the empirical tails are within 0.0015 (1 s.e.)
    of them, so the empirical quantile falls on the exact atom."""
    exact = _exact_distribution()
    tail = (1 - level) / 2
    for probability in (tail, 1 - tail):
        assert abs(probability * 27 - round(probability * 27)) >= 0.25
    found = cluster_interval(ratio_of(HITS, TOTALS), LABELS, 100_000, level, "percentile", seed=3)
    assert found is not None
    assert found[0] == pytest.approx(_exact_quantile(exact, tail), abs=1e-9)
    assert found[1] == pytest.approx(_exact_quantile(exact, 1 - tail), abs=1e-9)


# --- (d) the BCa acceleration by hand -------------------------------------------------------


def test_jackknife_acceleration_against_a_hand_computation() -> None:
    """Clusters A = [1, 2], B = [4], C = [0, 0, 9]; the mean without A is 13/4, without B
    12/5, without C 7/3 (weights 0 on the left-out cluster's units)."""
    values = np.array([1.0, 2.0, 4.0, 0.0, 0.0, 9.0])
    labels = ["A", "A", "B", "C", "C", "C"]
    left_out = [Fraction(13, 4), Fraction(12, 5), Fraction(7, 3)]
    centre = sum(left_out) / 3
    cubes = sum((centre - t) ** 3 for t in left_out)
    squares = sum((centre - t) ** 2 for t in left_out)
    expected = float(cubes) / (6 * float(squares) ** 1.5)
    assert expected == pytest.approx(-0.0667, abs=1e-4)  # the hand arithmetic, rounded
    assert cluster_acceleration(mean_of(values), labels) == pytest.approx(expected, rel=1e-12)


def test_bca_interval_assembles_z0_and_the_acceleration_as_efron_1987() -> None:
    rng = np.random.default_rng(21)
    labels = [g for g in range(7) for _ in range(1 + g % 3)]
    values = rng.beta(0.5, 5.0, len(labels))
    statistic = mean_of(values)
    weights = cluster_weights(labels, 5_000, seeded_streams(4)[0])
    estimates = statistic(weights)
    observed = values.mean()
    z0 = ndtri(((estimates < observed).sum() + (estimates <= observed).sum()) / 10_000)
    a = cluster_acceleration(statistic, labels)
    assert a != 0.0
    levels = [ndtr(z0 + (z0 + z) / (1 - a * (z0 + z))) for z in ndtri([0.05, 0.95])]
    expected = np.percentile(estimates, [100 * q for q in levels])
    found = cluster_interval(statistic, labels, 5_000, 0.9, "bca", seed=4)
    assert found == pytest.approx(tuple(expected), rel=1e-12)
    assert found != cluster_interval(statistic, labels, 5_000, 0.9, "percentile", seed=4)


# --- (e) edge cases -------------------------------------------------------------------------


@pytest.mark.parametrize("labels", [[], ["only"] * 5, [None, None]])
def test_fewer_than_two_clusters_give_none(labels: Sequence[Hashable]) -> None:
    values = np.arange(len(labels), dtype=float)
    assert cluster_interval(mean_of(values), labels, 1_000, 0.95, "bca", seed=0) is None


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_undefined_statistic_gives_none(method: str) -> None:
    values = np.full(12, np.nan)
    labels = [i // 3 for i in range(12)]
    assert cluster_interval(mean_of(values), labels, 1_000, 0.95, method, seed=0) is None  # type: ignore[arg-type]
    zero = np.zeros(12)
    assert cluster_interval(ratio_of(zero, zero), labels, 1_000, 0.95, method, seed=0) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_constant_data_give_the_point(method: str) -> None:
    values = np.full(30, 0.3)
    labels = [i % 6 for i in range(30)]
    found = cluster_interval(mean_of(values), labels, 1_000, 0.95, method, seed=0)  # type: ignore[arg-type]
    assert found is not None
    assert found[0] == found[1] == pytest.approx(0.3, rel=1e-15)


def test_resamples_where_the_statistic_is_undefined_are_dropped() -> None:
    """Only cluster 0 has any totals: resamples that do not draw it are undefined (about
    (2/3)^3 of them) and left out; the interval is the percentiles of the rest."""
    labels = [0, 0, 1, 1, 2, 2]
    hits = np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    totals = np.array([1.0, 2.0, 0.0, 0.0, 0.0, 0.0])
    weights = cluster_weights(labels, 3_000, seeded_streams(1)[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = ratio_of(hits, totals)(weights)
    assert 0.2 < np.isnan(ratios).mean() < 0.4
    # every defined ratio is 1/3: no spread
    found = cluster_interval(ratio_of(hits, totals), labels, 3_000, 0.95, "bca", seed=1)
    assert found == pytest.approx((1 / 3, 1 / 3))
    hits = np.array([1.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    totals = np.array([1.0, 2.0, 0.0, 0.0, 0.0, 0.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = ratio_of(hits, totals)(weights)
    defined = ratios[np.isfinite(ratios)]
    assert defined.size < 3_000
    found = cluster_interval(ratio_of(hits, totals), labels, 3_000, 0.95, "percentile", seed=1)
    assert found == pytest.approx(tuple(np.percentile(defined, [2.5, 97.5])), rel=1e-12)


def test_bad_arguments_are_refused() -> None:
    values = np.arange(6, dtype=float)
    labels = [0, 0, 1, 1, 2, 2]
    with pytest.raises(ValueError, match="one value per row"):
        cluster_interval(lambda w: w @ np.eye(6), labels, 100, 0.95, "bca", seed=0)
    with pytest.raises(ValueError, match="level"):
        cluster_interval(mean_of(values), labels, 100, 1.0, "bca", seed=0)
    with pytest.raises(ValueError, match="method"):
        cluster_interval(mean_of(values), labels, 100, 0.95, "basic", seed=0)  # type: ignore[arg-type]


# --- (f) coverage on nested data ------------------------------------------------------------


def test_cluster_bootstrap_covers_nested_data_where_the_unit_bootstrap_does_not() -> None:
    """10 clusters of 27 units (LoCoMo's shape), intra-cluster correlation 0.3, true mean 0;
    200 simulations, 95% percentile intervals from 500 resamples. The design effect
    1 + 26 * 0.3 = 8.8 makes the unit bootstrap's interval about 3 times too narrow (it
    covers about half the time); the cluster bootstrap covers about 0.9 (10 clusters: a
    little short, Cameron, Gelbach & Miller 2008). The Monte Carlo s.e. is about 0.02-0.035."""
    rng = np.random.default_rng(2024)
    clusters, size, icc, simulations = 10, 27, 0.3, 200
    labels = np.repeat(np.arange(clusters), size).tolist()
    units = list(range(clusters * size))
    unit_held = cluster_held = 0
    unit_width = cluster_width = 0.0
    for seed in range(simulations):
        effects = np.repeat(rng.normal(0.0, math.sqrt(icc), clusters), size)
        values = effects + rng.normal(0.0, math.sqrt(1 - icc), clusters * size)
        for name, grouping in (("unit", units), ("cluster", labels)):
            found = cluster_interval(mean_of(values), grouping, 500, 0.95, "percentile", seed)
            assert found is not None
            held = found[0] <= 0.0 <= found[1]
            if name == "unit":
                unit_held += held
                unit_width += found[1] - found[0]
            else:
                cluster_held += held
                cluster_width += found[1] - found[0]
    unit_coverage, cluster_coverage = unit_held / simulations, cluster_held / simulations
    assert unit_coverage < 0.7
    assert cluster_coverage > 0.84
    assert cluster_coverage - unit_coverage > 0.2
    assert cluster_width / unit_width > 2.0
