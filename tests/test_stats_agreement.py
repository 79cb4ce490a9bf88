"""Paired statistics agree with scipy.stats, the reference implementation.

Tests that scipy computes deterministically (t, Wilcoxon, exact permutation, BH) must agree to
1e-12. Resampling estimates agree within Monte Carlo error, with the tolerance stated where
it is used.
"""

from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np
import pytest
from scipy import stats

from recallbench.stats._multiple import adjust, benjamini_hochberg, holm
from recallbench.stats._paired import PairedSettings, paired_results
from recallbench.stats._power import minimum_detectable_effect, sample_size, t_test_power
from recallbench.stats._resampling import randomisation_pvalues


def _pair(n: int, shift: float, seed: int, discrete: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if discrete:  # reciprocal ranks: many ties and zero differences, like MRR
        choices = np.array([0, 1 / 5, 1 / 4, 1 / 3, 1 / 2, 1.0])
        base = rng.choice(choices, n)
        other = np.where(rng.random(n) < 0.5, base, rng.choice(choices, n))
        return base, other
    base = rng.random(n)
    return base, np.clip(base + rng.normal(shift, 0.2, n), 0, 1)


def _one(base: np.ndarray, other: np.ndarray, **settings: object):  # type: ignore[no-untyped-def]
    return paired_results([base], [other], [True], PairedSettings(**settings))[0]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("n", "seed", "discrete"), [(12, 0, False), (80, 1, False), (400, 2, True)]
)
def test_paired_t_matches_scipy_ttest_rel(n: int, seed: int, discrete: bool) -> None:
    base, other = _pair(n, 0.03, seed, discrete)
    result = _one(base, other)
    assert result.p_t == pytest.approx(stats.ttest_rel(other, base).pvalue, rel=1e-12)
    d = other - base
    assert result.effect_size == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-12)


@pytest.mark.parametrize(
    ("n", "seed", "discrete"), [(30, 3, False), (45, 4, False), (400, 5, True)]
)
def test_wilcoxon_matches_scipy(n: int, seed: int, discrete: bool) -> None:
    """scipy's default: exact for small samples without ties, normal approximation (with tie
    correction) for large or tied ones; zero differences dropped (zero_method='wilcox')."""
    base, other = _pair(n, 0.05, seed, discrete)
    expected = stats.wilcoxon(other, base, zero_method="wilcox").pvalue
    assert _one(base, other).p_wilcoxon == pytest.approx(expected, rel=1e-12)


def test_identical_systems_have_p_one_and_no_interval_width() -> None:
    base, _ = _pair(50, 0, 6)
    result = _one(base, base.copy())
    assert (result.p_t, result.p_wilcoxon, result.p_randomisation) == (1.0, 1.0, 1.0)
    assert (result.ci_low, result.ci_high, result.delta) == (0.0, 0.0, 0.0)
    assert (result.wins, result.ties, result.losses) == (0, 50, 0)
    assert result.effect_size is None


@pytest.mark.parametrize("method", ["bca", "percentile"])
@pytest.mark.parametrize(("n", "seed"), [(40, 7), (300, 8)])
def test_bootstrap_interval_matches_scipy(method: str, n: int, seed: int) -> None:
    """Two independent sets of 10,000 resamples: each endpoint's Monte Carlo error is about
    0.03 standard errors of the mean, so 0.2 standard errors is a > 4-sigma tolerance."""
    base, other = _pair(n, 0.03, seed)
    d = other - base
    result = _one(base, other, interval=method, seed=seed)
    reference = stats.bootstrap(
        (d,),
        np.mean,
        method="BCa" if method == "bca" else "percentile",
        n_resamples=10_000,
        rng=np.random.default_rng(seed + 1000),
    ).confidence_interval
    tolerance = 0.2 * d.std(ddof=1) / math.sqrt(n)
    assert result.ci_low == pytest.approx(reference.low, abs=tolerance)
    assert result.ci_high == pytest.approx(reference.high, abs=tolerance)


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
    return np.mean(x - y, axis=axis)


@pytest.mark.parametrize(
    ("n", "seed", "discrete"), [(10, 9, False), (12, 10, True), (13, 11, False)]
)
def test_exact_randomisation_matches_scipy_permutation_test(
    n: int, seed: int, discrete: bool
) -> None:
    """All 2^n sign assignments: the same exact p-value as scipy (whose two-sided p is twice
    the smaller tail; the sign-flip null is symmetric, so the two definitions coincide)."""
    base, other = _pair(n, 0.1, seed, discrete)
    result = _one(base, other)
    reference = stats.permutation_test(
        (other, base),
        _mean_difference,
        permutation_type="samples",
        vectorized=True,
        n_resamples=np.inf,
    )
    assert result.exact
    assert result.p_randomisation == pytest.approx(reference.pvalue, rel=1e-12)


@pytest.mark.parametrize(("n", "seed"), [(60, 12), (500, 13)])
def test_sampled_randomisation_matches_scipy_permutation_test(n: int, seed: int) -> None:
    """Two independent sets of 10,000 random sign assignments: the p-values agree within
    four binomial standard errors of their difference."""
    base, other = _pair(n, 0.02 if n > 100 else 0.06, seed)
    result = _one(base, other, seed=seed)
    reference = stats.permutation_test(
        (other, base),
        _mean_difference,
        permutation_type="samples",
        vectorized=True,
        n_resamples=10_000,
        rng=np.random.default_rng(seed),
    )
    p = reference.pvalue
    assert 0.005 < p < 0.5  # a p-value where the comparison means something
    assert result.p_randomisation == pytest.approx(p, abs=4 * math.sqrt(2 * p * (1 - p) / 10_000))
    assert result.p_randomisation > 0


def test_randomisation_p_is_never_zero_and_follows_b_plus_one() -> None:
    d = np.full((1, 200), 0.5)  # no sign assignment but the observed one reaches |sum|... and
    p, exact = randomisation_pvalues(d, 1_000, np.random.default_rng(0))
    # ...its negation: both all-same-sign patterns have |sum| = 100; a random one almost never
    assert not exact
    assert p[0] == pytest.approx(1 / 1_001)


def test_randomisation_test_keeps_its_level_under_the_null() -> None:
    """2,000 null datasets (30 queries of MRR-like differences, symmetric around 0): the
    rejection rate at alpha 0.05 is within three binomial standard errors (0.0146) of 0.05,
    and the test has power against a shift of half a standard deviation."""
    rng = np.random.default_rng(14)
    streams, n = 2_000, 30
    values = rng.choice(np.array([-1, -0.5, -1 / 3, 0, 0, 0, 1 / 3, 0.5, 1]), (streams, n))
    null = values * rng.choice([-1.0, 1.0], (streams, n))
    p_null, _ = randomisation_pvalues(null, 2_000, np.random.default_rng(15))
    tolerance = 3 * math.sqrt(0.05 * 0.95 / streams)
    assert abs((p_null < 0.05).mean() - 0.05) <= tolerance
    shifted = null + 0.5 * null.std()
    p_effect, _ = randomisation_pvalues(shifted, 2_000, np.random.default_rng(16))
    power = (p_effect < 0.05).mean()
    expected = t_test_power(n, 0.5 * null.std(), null.std())
    assert power == pytest.approx(expected, abs=0.05)


def test_results_do_not_depend_on_what_is_compared_alongside() -> None:
    base, other = _pair(70, 0.04, 17)
    alone = _one(base, other)
    crowd = paired_results(
        [base, base[::-1], base], [other, other[::-1], other + 0.01], [True, True, True]
    )
    # the same resamples; only the last bits of the matrix products may differ
    first, single = asdict(crowd[0]), asdict(alone)
    assert first.pop("degenerate") is single.pop("degenerate") is None
    assert first == pytest.approx(single, rel=1e-12)


def test_lower_is_better_counts_wins_the_other_way() -> None:
    base = np.array([1.0, 1.0, 0.0, 0.5])
    other = np.array([0.0, 1.0, 1.0, 0.0])
    higher, lower = paired_results([base, base], [other, other], [True, False])
    assert (higher.wins, higher.ties, higher.losses) == (1, 1, 2)
    assert (lower.wins, lower.ties, lower.losses) == (2, 1, 1)


def test_holm_by_hand() -> None:
    # sorted 0.01, 0.02, 0.03, 0.5 -> 4*0.01, 3*0.02, max(.06, 2*.03), max(.06, 1*.5)
    adjusted = holm([0.03, 0.01, 0.5, 0.02])
    assert adjusted.tolist() == pytest.approx([0.06, 0.04, 0.5, 0.06])
    assert holm([0.4, 0.5]).tolist() == [0.8, 0.8]


def test_benjamini_hochberg_matches_scipy() -> None:
    p = np.random.default_rng(18).random(40) ** 3
    expected = stats.false_discovery_control(p, method="bh")
    assert benjamini_hochberg(p) == pytest.approx(expected, rel=1e-12)


def test_adjust_skips_missing_p_values() -> None:
    assert adjust([0.01, None, 0.04], "holm") == [0.02, None, 0.04]
    assert adjust([0.01, None], "none") == [0.01, None]


def test_sample_size_is_the_smallest_n_with_the_power() -> None:
    """0.05 at sd 0.15: 73 queries by the exact t-test power (72 give 0.797); the normal
    approximation gives 71."""
    needed = sample_size(0.05, 0.15)
    assert needed.queries == 73
    assert needed.achieved_power >= 0.8 > needed.power_with_one_fewer
    assert needed.normal_approximation == 71
    assert sample_size(0.5, 1.0).queries == 34  # Cohen's d 0.5: 34 pairs (G*Power agrees)


def test_t_test_power_matches_simulation() -> None:
    """20,000 simulated paired t-tests at n = 73: rejection rate within 3 SE (0.0085)."""
    rng = np.random.default_rng(19)
    d = rng.normal(0.05, 0.15, (20_000, 73))
    rate = (stats.ttest_1samp(d, 0.0, axis=1).pvalue < 0.05).mean()
    assert rate == pytest.approx(
        t_test_power(73, 0.05, 0.15), abs=3 * math.sqrt(0.8 * 0.2 / 20_000)
    )


def test_minimum_detectable_effect_inverts_sample_size() -> None:
    mde = minimum_detectable_effect(73, 0.15)
    assert mde is not None and 0.049 < mde < 0.05
    assert t_test_power(73, mde, 0.15) == pytest.approx(0.8, abs=1e-9)
    assert minimum_detectable_effect(1, 0.15) is None
    assert minimum_detectable_effect(10, 0.0) is None  # undefined, not infinitely sensitive
    large = minimum_detectable_effect(100_000, 0.2)
    assert large is not None and large == pytest.approx(2.8016 * 0.2 / math.sqrt(100_000), rel=1e-3)
