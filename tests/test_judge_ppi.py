"""Prediction-powered inference for a mean: closed-form values on tiny arrays, the reference
implementation's numbers, and the coverage the interval promises.

Reference numbers come from ppi-python 0.2.3 (``ppi_py.ppi_mean_ci``,
``ppi_py.ppi_mean_pointestimate``, ``ppi_py.classical_mean_ci``; the authors' package),
run once in a throwaway environment outside the project on the arrays below.
"""

from __future__ import annotations

import math
from fractions import Fraction
from statistics import NormalDist

import numpy as np
import pytest

from recallbench.core._errors import ConfigError
from recallbench.judges._ppi import classical_mean, power_tuning_weight, ppi_mean


def _z(level: float) -> float:
    return NormalDist().inv_cdf((1 + level) / 2)


def _fraction_var(values: list[Fraction]) -> Fraction:
    mean = sum(values, Fraction(0)) / len(values)
    return sum(((v - mean) ** 2 for v in values), Fraction(0)) / len(values)


# a tiny sample worked by hand: people's labels, the judge on those items, the judge on others
Y = [1, 0, 1, 0]
F = [1, 1, 1, 0]
F_TILDE = [1, 1, 0, 1, 1, 0]


def test_ppi_closed_form_on_a_tiny_sample() -> None:
    # mean(f~) = 2/3, mean(f - Y) = 1/4: theta = 5/12; Var(f~) = 2/9 over N = 6,
    # Var(f - Y) = 3/16 over n = 4: SE^2 = 1/27 + 3/64 = 145/1728
    result = ppi_mean(Y, F, F_TILDE, level=0.95)
    assert result.estimate == pytest.approx(5 / 12, abs=1e-15)
    assert result.standard_error == pytest.approx(math.sqrt(145 / 1728), abs=1e-15)
    half = _z(0.95) * math.sqrt(145 / 1728)
    assert (result.low, result.high) == pytest.approx((5 / 12 - half, 5 / 12 + half), abs=1e-12)
    assert (result.labelled, result.unlabelled, result.weight) == (4, 6, 1.0)


def test_ppi_plus_plus_closed_form_on_a_tiny_sample() -> None:
    # Cov_n(Y, f) = 1/8; Var(f over all 10 items, n - 1) = 7/30; 1 + n/N = 5/3:
    # lambda = (1/8) / (5/3 * 7/30) = 9/28
    lam = Fraction(9, 28)
    y, f, f_tilde = ([Fraction(v) for v in a] for a in (Y, F, F_TILDE))
    rectifier = [yi - lam * fi for yi, fi in zip(y, f, strict=True)]
    estimate = lam * sum(f_tilde, Fraction(0)) / 6 + sum(rectifier, Fraction(0)) / 4
    variance = lam**2 * _fraction_var(f_tilde) / 6 + _fraction_var(rectifier) / 4
    assert estimate == Fraction(53, 112)
    result = ppi_mean(Y, F, F_TILDE, tuned=True)
    assert result.weight == pytest.approx(9 / 28, abs=1e-15)
    assert result.estimate == pytest.approx(float(estimate), abs=1e-15)
    assert result.standard_error == pytest.approx(math.sqrt(variance), abs=1e-15)


def test_power_tuning_weight_agrees_with_numpy_covariance() -> None:
    rng = np.random.default_rng(3)
    y = rng.random(40)
    f = 0.6 * y + 0.4 * rng.random(40)
    f_tilde = rng.random(200)
    covariance = np.cov(y, f, ddof=0)[0, 1]
    variance = np.var(np.concatenate([f, f_tilde]), ddof=1)
    expected = covariance / ((1 + 40 / 200) * variance)
    assert 0 < expected < 1  # inside the clip, so the formula itself is what is compared
    assert power_tuning_weight(y, f, f_tilde) == pytest.approx(expected, rel=1e-12)


# arrays given to ppi-python 0.2.3; its outputs are the literals in the table below
REF_Y = [0, 1, 1, 0, 1, 1, 0, 1, 0, 1, 1, 0]
REF_F = [0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0]
REF_F_TILDE = [1, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 0]
GRADED_Y = [v / 3 for v in (3, 2, 0, 1, 3, 2, 2, 0)]
GRADED_F = [v / 3 for v in (3, 3, 1, 1, 2, 2, 3, 0)]
GRADED_F_TILDE = [v / 3 for v in (2, 3, 1, 0, 3, 3, 2, 1, 2, 0, 3, 1)]


@pytest.mark.parametrize(
    ("data", "level", "method", "expected"),
    [
        # ppi_mean_ci(..., alpha=0.05, lam=1) and ppi_mean_pointestimate(..., lam=1)
        ("binary", 0.95, "ppi", (0.6166666666666666, 0.27294782332530765, 0.9603855100080255)),
        ("binary", 0.9, "ppi", (0.6166666666666666, 0.32820872020380126, 0.9051246131295319)),
        # ppi_mean_ci(..., alpha) with lam=None (power tuned, clipped)
        ("binary", 0.95, "tuned", (0.5937710437710437, 0.33596906969361584, 0.8515730178484716)),
        ("binary", 0.9, "tuned", (0.5937710437710437, 0.37741680693744295, 0.8101252806046445)),
        # classical_mean_ci(Y, alpha)
        ("binary", 0.95, "classical", (0.5833333333333334, 0.3043936881578343, 0.8622729785088324)),
        ("binary", 0.9, "classical", (0.5833333333333334, 0.34923980371414154, 0.8174268629525252)),
        ("graded", 0.95, "ppi", (0.5, 0.24391317841160176, 0.7560868215883982)),
        ("graded", 0.95, "tuned", (0.5221522539511494, 0.3209732919966539, 0.7233312159056449)),
        ("graded", 0.95, "classical", (0.5416666666666666, 0.2850378617808097, 0.7982954715525236)),
    ],
)
def test_agrees_with_ppi_python(
    data: str, level: float, method: str, expected: tuple[float, float, float]
) -> None:
    y, f, f_tilde = (
        (REF_Y, REF_F, REF_F_TILDE) if data == "binary" else (GRADED_Y, GRADED_F, GRADED_F_TILDE)
    )
    if method == "classical":
        result = classical_mean(y, level)
    else:
        result = ppi_mean(y, f, f_tilde, level=level, tuned=method == "tuned")
    assert (result.estimate, result.low, result.high) == pytest.approx(expected, abs=1e-12)


def test_a_judge_off_by_a_constant_is_corrected_exactly() -> None:
    # ppi_py's tests/test_mean.py::test_ppi_mean_pointestimate: Yhat = Y + 2 and Yhat on the
    # unlabelled items all 2 give a point estimate of 0 (the rectifier removes the offset)
    y = np.random.default_rng(0).normal(0, 1, 100)
    result = ppi_mean(y, y + 2, np.full(10_000, 2.0))
    assert result.estimate == pytest.approx(0.0, abs=1e-12)


def test_an_anticorrelated_judge_gets_no_weight_and_the_classical_interval() -> None:
    y = np.array([1, 0, 1, 1, 0, 1, 0, 0, 1, 1], dtype=float)
    tuned = ppi_mean(y, 1 - y, np.array([0, 1, 1, 0, 1.0]), tuned=True)
    classical = classical_mean(y)
    assert tuned.weight == 0.0
    assert (tuned.estimate, tuned.low, tuned.high) == pytest.approx(
        (classical.estimate, classical.low, classical.high), abs=1e-15
    )


def test_a_constant_judge_gets_no_weight() -> None:
    assert power_tuning_weight(np.array([0.0, 1, 1]), np.ones(3), np.ones(5)) == 0.0


def _coverage(
    judge: str, trials: int = 1_000, n: int = 300, big_n: int = 3_000
) -> dict[str, float]:
    """Share of seeded trials whose 95% interval holds the true mean, per method, and the mean
    interval width. People's labels are binary relevance with P(relevant) = 0.35."""
    rng = np.random.default_rng(20231110)
    truth = 0.35
    covered = dict.fromkeys(("ppi", "tuned", "classical", "naive"), 0)
    widths = dict.fromkeys(covered, 0.0)
    for _ in range(trials):
        y = (rng.random(n + big_n) < truth).astype(float)
        if judge == "good":  # right 90% of the time
            f = np.where(rng.random(n + big_n) < 0.9, y, 1 - y)
        else:  # calls 40% of the irrelevant pairs relevant: mean 0.61, not 0.35
            f = np.where(y == 1, 1.0, (rng.random(n + big_n) < 0.4).astype(float))
        results = {
            "ppi": ppi_mean(y[:n], f[:n], f[n:]),
            "tuned": ppi_mean(y[:n], f[:n], f[n:], tuned=True),
            "classical": classical_mean(y[:n]),
            "naive": classical_mean(f[n:]),  # the judge's mean taken at its word
        }
        for name, result in results.items():
            covered[name] += result.low <= truth <= result.high
            widths[name] += (result.high - result.low) / trials
    shares = {name: count / trials for name, count in covered.items()}
    return shares | {f"{name}_width": width for name, width in widths.items()}


@pytest.mark.parametrize("judge", ["good", "biased"])
def test_coverage_is_nominal_where_the_judges_own_mean_misses(judge: str) -> None:
    # 1,000 trials: the binomial standard error of a 95% coverage is 0.007; bounds are 3 SE
    share = _coverage(judge)
    for method in ("ppi", "tuned", "classical"):
        assert 0.925 <= share[method] <= 0.975, (method, share)
    if judge == "biased":
        assert share["naive"] < 0.05, share
    else:  # a good judge is what PPI is for: a narrower interval than people's labels alone
        assert share["ppi_width"] < 0.8 * share["classical_width"], share
    assert share["tuned_width"] <= share["classical_width"] * 1.01, share


@pytest.mark.parametrize(
    ("human", "labelled", "unlabelled", "message"),
    [
        ([1.0], [1.0], [0.0, 1.0], "human labels: 1 values"),
        ([1.0, 0.0], [1.0, 0.0], [1.0], "unlabelled items: 1 values"),
        ([], [], [0.0, 1.0], "human labels: 0 values"),
        ([1.0, 0.0, 1.0], [1.0, 0.0], [0.0, 1.0], "3 human labels but 2 judge labels"),
        ([1.0, float("nan")], [1.0, 0.0], [0.0, 1.0], r"human labels\[1\]: nan"),
    ],
)
def test_refuses_what_it_cannot_estimate(
    human: list[float], labelled: list[float], unlabelled: list[float], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        ppi_mean(human, labelled, unlabelled)


def test_refuses_a_level_outside_zero_one() -> None:
    with pytest.raises(ConfigError, match="confidence level"):
        classical_mean([0.0, 1.0], level=1.0)
