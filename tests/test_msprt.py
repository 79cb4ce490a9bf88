"""Mixture SPRT: the closed form against the mixture integral, the interval against the
p-value, Howard et al.'s boundary, the running test, and the false-positive rate under
continuous monitoring by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from recallbench.core._errors import ConfigError
from recallbench.stats._msprt import (
    DEFAULT_MSPRT_MIN_SAMPLES,
    DEFAULT_TAU,
    MixtureSPRT,
    MsprtSettings,
    first_rejections,
    half_width,
    mixture_likelihood_ratio,
    msprt_path,
)


def test_defaults() -> None:
    settings = MsprtSettings()
    assert settings.alpha == 0.05 and settings.tau == DEFAULT_TAU == 0.1
    assert settings.sigma is None and settings.null == 0.0
    assert settings.min_samples == DEFAULT_MSPRT_MIN_SAMPLES


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.0}, "alpha"),
        ({"tau": 0.0}, "tau"),
        ({"tau": math.inf}, "tau"),
        ({"sigma": 0.0}, "sigma"),
        ({"sigma": math.nan}, "sigma"),
        ({"null": math.inf}, "null"),
        ({"min_samples": 1}, "min_samples"),
        ({"min_samples": True}, "min_samples"),
        ({"min_samples": 30, "max_samples": 10}, "max_samples"),
    ],
)
def test_settings_are_checked(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        MsprtSettings(**kwargs)  # type: ignore[arg-type]


def test_known_sigma_allows_one_sample() -> None:
    assert MsprtSettings(sigma=1.0, min_samples=1).min_samples == 1


# --------------------------------------------------------------------------------------------
# The formulas


def test_worked_value() -> None:
    # n = 100, dbar = 0.05, sigma = 0.3, tau = 0.1: V = 0.09 + 1 = 1.09,
    # Lambda = sqrt(0.09 / 1.09) exp(100^2 0.01 0.0025 / (2 0.09 1.09)) = 0.28735 * 3.57586
    ratio = float(mixture_likelihood_ratio(100, 0.05, 0.09, 0.1))
    expected = math.sqrt(0.09 / 1.09) * math.exp(0.25 / (2 * 0.09 * 1.09))
    assert ratio == pytest.approx(expected, rel=1e-12)
    assert ratio == pytest.approx(1.027520, abs=1e-6)


@pytest.mark.parametrize(
    ("n", "mean", "sigma", "tau", "null"),
    [(1, 0.4, 1.0, 0.5, 0.0), (20, 0.1, 0.3, 0.1, 0.0), (200, -0.03, 0.25, 0.05, 0.01)],
)
def test_closed_form_is_the_mixture_integral(
    n: int, mean: float, sigma: float, tau: float, null: float
) -> None:
    # Lambda_n = ∫ prod_i phi((d_i - theta)/sigma) / phi((d_i - theta0)/sigma) dN(theta0, tau^2)
    # and the product depends on the data only through n and dbar.
    def integrand(theta: float) -> float:
        log_lr = n * ((theta - null) * mean - (theta**2 - null**2) / 2) / sigma**2
        return float(math.exp(log_lr) * stats.norm.pdf(theta, loc=null, scale=tau))

    numeric, _ = integrate.quad(integrand, null - 12 * tau, null + 12 * tau, limit=200)
    closed = float(mixture_likelihood_ratio(n, mean, sigma**2, tau, null))
    assert closed == pytest.approx(numeric, rel=1e-8)


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.2])
@pytest.mark.parametrize("n", [1, 10, 1000])
def test_half_width_is_where_lambda_reaches_one_over_alpha(alpha: float, n: int) -> None:
    variance, tau, mean = 0.09, 0.1, 0.02
    h = float(half_width(n, variance, tau, alpha))
    for edge in (mean - h, mean + h):
        ratio = float(mixture_likelihood_ratio(n, mean, variance, tau, null=edge))
        assert ratio == pytest.approx(1 / alpha, rel=1e-9)


@pytest.mark.parametrize("sigma", [0.5, 1.0])
def test_known_sigma_interval_is_howards_normal_mixture(sigma: float) -> None:
    # Howard et al. (2021), two-sided normal mixture: S_n ± sigma sqrt((n + rho)
    # ln((n + rho) / (rho alpha^2))) with rho = sigma^2 / tau^2, on the sum scale.
    tau, alpha = 0.1, 0.05
    rho = sigma**2 / tau**2
    n = np.arange(1, 301, dtype=np.float64)
    howard = sigma * np.sqrt((n + rho) * np.log((n + rho) / (rho * alpha**2))) / n
    np.testing.assert_allclose(half_width(n, sigma**2, tau, alpha), howard, rtol=1e-12)


def test_path_pvalues_and_interval_are_dual() -> None:
    rng = np.random.default_rng(7)
    data = rng.normal(0.03, 0.3, size=(200, 400))
    settings = MsprtSettings()
    path = msprt_path(data, settings)
    assert (np.diff(path.pvalues, axis=1) <= 0).all()  # running minimum
    assert ((path.pvalues > 0) & (path.pvalues <= 1)).all()
    assert (path.pvalues[:, : settings.min_samples - 1] == 1).all()
    assert (path.lower[:, 1:] >= path.lower[:, :-1]).all()
    assert (path.upper[:, 1:] <= path.upper[:, :-1]).all()
    excluded = (path.lower > settings.null) | (path.upper < settings.null)
    # equal away from floating-point ties at the boundary
    near = np.abs(path.pvalues - settings.alpha) < 1e-9
    assert (excluded == (path.pvalues <= settings.alpha))[~near].all()


def test_path_of_one_stream_equals_row_of_many() -> None:
    rng = np.random.default_rng(3)
    data = rng.normal(0, 0.3, size=(3, 80))
    many = msprt_path(data)
    for row in range(3):
        one = msprt_path(data[row])
        np.testing.assert_array_equal(one.pvalues, many.pvalues[row])
        np.testing.assert_array_equal(one.lower, many.lower[row])


def test_constant_stream_gives_no_evidence_with_plug_in() -> None:
    path = msprt_path(np.full(100, 0.2))
    assert (path.pvalues == 1).all() and np.isinf(path.upper).all()
    # ... but with a known sigma it does
    known = msprt_path(np.full(100, 0.5), MsprtSettings(sigma=1.0, min_samples=1))
    assert known.pvalues[-1] < 0.05 and known.lower[-1] > 0


def test_inputs_are_checked() -> None:
    with pytest.raises(ConfigError, match="finite"):
        msprt_path([0.1, math.nan])
    with pytest.raises(ConfigError, match="1-d or 2-d"):
        msprt_path(np.zeros((2, 2, 2)))


# --------------------------------------------------------------------------------------------
# The running test


def test_running_test_matches_path_and_stops_at_first_rejection() -> None:
    rng = np.random.default_rng(11)
    data = rng.normal(0.1, 0.3, size=500)
    settings = MsprtSettings()
    stop = int(first_rejections(data, settings)[0])
    assert stop > 0
    test = MixtureSPRT(settings)
    for chunk in np.array_split(data, 7):
        test.update(chunk)
    assert test.decision == "accept_treatment" and test.n == stop
    path = msprt_path(data[:stop], settings)
    assert test.pvalue == path.pvalues[-1] <= settings.alpha
    assert test.interval == (path.lower[-1], path.upper[-1])
    assert test.interval[0] > 0
    assert test.update(-1.0) == "accept_treatment" and test.n == stop  # decided stays


def test_running_test_accepts_control_for_a_negative_effect() -> None:
    rng = np.random.default_rng(12)
    test = MixtureSPRT()
    assert test.update(rng.normal(-0.1, 0.3, size=500)) == "accept_control"
    assert test.interval[1] < 0


def test_running_test_is_inconclusive_at_max_samples() -> None:
    rng = np.random.default_rng(13)
    test = MixtureSPRT(MsprtSettings(max_samples=60))
    assert test.pvalue == 1.0 and test.interval == (-math.inf, math.inf)
    for value in rng.normal(0.0, 0.3, size=100):
        test.update(float(value))
    assert test.decision == "inconclusive" and test.n == 60
    assert "inconclusive" in repr(test)


# --------------------------------------------------------------------------------------------
# Continuous monitoring under the null (seeded simulation, about a second)

STREAMS, LENGTH, ALPHA = 1000, 500, 0.05


def _continuous_t_test_rejects(data: np.ndarray) -> np.ndarray:
    """Whether a fixed-n two-sided t-test at ALPHA, run after every query from n = 2, ever
    rejects (the peeking the mSPRT exists to allow)."""
    n = np.arange(1, data.shape[1] + 1, dtype=np.float64)
    mean = np.cumsum(data, axis=1) / n
    variance = np.maximum(np.cumsum(data * data, axis=1) - n * mean * mean, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / np.sqrt(variance / (n - 1) / n)
        p = 2 * stats.t.sf(np.abs(t[:, 1:]), n[1:] - 1)
    return np.asarray((np.nan_to_num(p, nan=1.0) <= ALPHA).any(axis=1))


def test_false_positive_rate_under_continuous_monitoring() -> None:
    rng = np.random.default_rng(20)
    gaussian = rng.normal(0.0, 0.3, size=(STREAMS, LENGTH))
    ranks = np.array([0, 0, 0, 1 / 2, -1 / 2, 1 / 3, -1 / 3, 1, -1, 1 / 6, -1 / 6])
    reciprocal = rng.choice(ranks, size=(STREAMS, LENGTH))  # differences of reciprocal ranks

    plug_in = (first_rejections(gaussian) > 0).mean()
    known = (first_rejections(gaussian, MsprtSettings(sigma=0.3, min_samples=1)) > 0).mean()
    bounded = (first_rejections(reciprocal, MsprtSettings(sigma=1.0, min_samples=1)) > 0).mean()
    ties = (first_rejections(reciprocal) > 0).mean()
    peeking = _continuous_t_test_rejects(gaussian).mean()
    print(
        f"false-positive rate, {STREAMS} null streams of {LENGTH} checked after every query:"
        f" mSPRT plug-in {plug_in:.3f}, known sigma {known:.3f}, reciprocal ranks"
        f" plug-in {ties:.3f}, sigma=1 bound {bounded:.3f}; t-test {peeking:.3f}"
    )
    assert plug_in <= ALPHA and known <= ALPHA and bounded <= ALPHA and ties <= ALPHA
    assert peeking > 3 * ALPHA


def test_known_sigma_interval_covers_uniformly_over_time() -> None:
    rng = np.random.default_rng(21)
    theta = 0.04
    data = rng.normal(theta, 0.3, size=(STREAMS, LENGTH))
    path = msprt_path(data, MsprtSettings(sigma=0.3, min_samples=1))
    ever_missed = ((path.lower > theta) | (path.upper < theta)).any(axis=1).mean()
    assert ever_missed <= ALPHA


def test_power_under_an_effect() -> None:
    rng = np.random.default_rng(22)
    data = rng.normal(0.05, 0.3, size=(STREAMS, LENGTH))
    stops = first_rejections(data)
    assert (stops > 0).mean() > 0.7  # a fixed-n t-test at n = 500 has power 0.99
