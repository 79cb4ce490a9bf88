"""Sequential tests: the paired SPRT (exact LLR, state, stopping, error rates by simulation)
and the Beta-Binomial probability that the treatment is better."""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import numpy as np
import pytest
from numpy.typing import NDArray

from recallbench.core._errors import ConfigError
from recallbench.stats._beta_binomial import (
    BetaBinomialState,
    _miller_sum,
    _probability_by_integration,
    probability_better,
)
from recallbench.stats._sprt import (
    ACCEPT_CONTROL,
    ACCEPT_TREATMENT,
    CONTINUE,
    DECISIONS,
    INCONCLUSIVE,
    PairedSPRT,
    SprtSettings,
    SprtState,
    sprt_decisions,
)

FloatArray = NDArray[np.float64]

# --------------------------------------------------------------------------------------------
# SPRT: settings, LLR, state


def test_default_boundaries_are_walds() -> None:
    settings = SprtSettings()
    assert settings.upper == pytest.approx(math.log(0.80 / 0.05))  # ln 16 = 2.7726
    assert settings.lower == pytest.approx(math.log(0.20 / 0.95))  # -1.5581
    assert settings.min_samples == 50 and settings.max_samples is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.0}, "alpha"),
        ({"beta": 0.0}, "beta"),
        ({"beta": 1.5}, "beta"),
        ({"alpha": 0.5, "beta": 0.5}, "alpha \\+ beta"),
        ({"effect": 0.0}, "effect"),
        ({"effect": -0.05}, "effect"),
        ({"effect": math.nan}, "effect"),
        ({"effect": math.inf}, "effect"),
        ({"min_samples": 1}, "min_samples"),
        ({"min_samples": 2.5}, "min_samples"),
        ({"min_samples": True}, "min_samples"),
        ({"min_samples": 20, "max_samples": 19}, "max_samples"),
    ],
)
def test_settings_are_validated(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SprtSettings(**kwargs)  # type: ignore[arg-type]


def test_llr_by_hand() -> None:
    # d = (0.1, 0.2, -0.1), delta = 0.05:
    #   sum d^2           = 0.01 + 0.04 + 0.01       = 0.06
    #   sum (d - delta)^2 = 0.0025 + 0.0225 + 0.0225 = 0.0475
    #   LLR = (3 / 2) ln(0.06 / 0.0475) = 1.5 * 0.23361485... = 0.35042228
    state = SprtState().update([0.1, 0.2, -0.1])
    assert state.n == 3
    assert (state.total, state.total_squares) == pytest.approx((0.2, 0.06), rel=1e-15)
    assert state.llr(0.05) == pytest.approx(0.3504222767722577, rel=1e-12)
    # the same from the two maximum-likelihood variances
    d = np.array([0.1, 0.2, -0.1])
    var0, var1 = np.mean(d**2), np.mean((d - 0.05) ** 2)
    assert state.llr(0.05) == pytest.approx(1.5 * math.log(var0 / var1), rel=1e-12)


def test_llr_degenerate_cases() -> None:
    assert SprtState().llr(0.05) == 0.0
    assert SprtState().update(np.zeros(5)).llr(0.05) == -math.inf  # sigma0^2 = 0
    assert SprtState().update(np.full(5, 0.5)).llr(0.5) == math.inf  # sigma1^2 = 0 exactly
    # 0.05 is not a binary fraction: sigma1^2 is 0 up to rounding (~1e-17), far past any bound
    assert SprtState().update(np.full(7, 0.05)).llr(0.05) > 100.0
    with pytest.raises(ConfigError, match="effect"):
        SprtState().llr(0.0)


def test_state_batches_are_bit_identical_and_order_only_rounds() -> None:
    rng = np.random.default_rng(1)
    d = rng.normal(0.02, 0.3, 500)
    whole = SprtState().update(d)
    split = SprtState().update(d[:123]).update(d[123:])
    one_by_one = SprtState()
    for value in d:
        one_by_one = one_by_one.update(float(value))
    assert whole == split == one_by_one  # in-order accumulation: no rounding difference
    shuffled = SprtState().update(rng.permutation(d))
    assert shuffled.n == whole.n
    assert shuffled.total == pytest.approx(whole.total, rel=1e-12, abs=1e-12)
    assert shuffled.total_squares == pytest.approx(whole.total_squares, rel=1e-12)
    assert shuffled.llr(0.05) == pytest.approx(whole.llr(0.05), rel=1e-9)
    assert SprtState().update([]) == SprtState()


def test_state_round_trips_through_json_and_resumes() -> None:
    rng = np.random.default_rng(2)
    d = rng.normal(0.05, 0.4, 400)
    settings = SprtSettings()
    test = PairedSPRT(settings)
    test.update(d[:30])  # below min_samples: still running
    assert test.decision == "continue"
    saved = json.dumps(test.state.to_dict())
    restored = SprtState.from_dict(json.loads(saved))
    assert restored == test.state
    resumed = PairedSPRT(settings, restored)
    uninterrupted = PairedSPRT(settings)
    assert resumed.update(d[30:]) == uninterrupted.update(d)
    assert resumed.state == uninterrupted.state and resumed.n == uninterrupted.n


def test_resumed_decided_state_starts_decided() -> None:
    settings = SprtSettings(min_samples=10)
    decided = PairedSPRT(settings, SprtState().update(np.zeros(10)))
    assert decided.decision == "accept_control"
    assert decided.update(np.ones(100)) == "accept_control" and decided.n == 10
    young = PairedSPRT(settings, SprtState().update(np.zeros(9)))
    assert young.decision == "continue"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: SprtState(n=-1), "n must"),
        (lambda: SprtState(n=2, total=0.1, total_squares=-1.0), "total_squares"),
        (lambda: SprtState(n=0, total=0.1, total_squares=0.01), "n = 0"),
        (lambda: SprtState(n=1, total=math.nan, total_squares=0.0), "finite"),
        (lambda: SprtState.from_dict({"n": 1, "total": 0.1}), "total_squares"),
        (lambda: SprtState().update([0.1, math.nan]), "finite"),
        (lambda: SprtState().update(np.zeros((2, 2))), "1-d"),
        (lambda: SprtState().update(["a"]), "numbers"),  # type: ignore[list-item]
    ],
)
def test_state_rejects_bad_input(make: Callable[[], object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make()


# --------------------------------------------------------------------------------------------
# SPRT: stopping


def _first_crossing(d: FloatArray, settings: SprtSettings) -> tuple[str, int]:
    """Reference: the decision rule written out, one observation at a time."""
    state = SprtState()
    for value in d:
        state = state.update(float(value))
        if state.n < settings.min_samples:
            continue
        llr = state.llr(settings.effect)
        if llr >= settings.upper:
            return "accept_treatment", state.n
        if llr <= settings.lower:
            return "accept_control", state.n
        if settings.max_samples is not None and state.n >= settings.max_samples:
            return "inconclusive", state.n
    return "continue", state.n


@pytest.mark.parametrize("mean", [0.0, 0.05])
def test_paired_sprt_stops_at_first_crossing_and_ignores_later_data(mean: float) -> None:
    rng = np.random.default_rng(3)
    settings = SprtSettings()
    d = rng.normal(mean, 0.15, 2000)
    expected, stop = _first_crossing(d, settings)
    assert expected in ("accept_treatment", "accept_control") and stop < 2000
    test = PairedSPRT(settings)
    assert test.update(d) == expected
    assert test.n == stop
    assert test.state == SprtState().update(d[:stop])  # nothing past the crossing was used
    assert test.llr == test.state.llr(settings.effect)
    # later data pointing the other way, or even invalid, changes nothing
    assert test.update(np.full(1000, -1.0 if expected == "accept_treatment" else 1.0)) == expected
    assert test.update([math.nan]) == expected
    assert test.n == stop and test.decision == expected


def test_no_decision_before_min_samples() -> None:
    test = PairedSPRT(SprtSettings(min_samples=20))
    for _ in range(19):
        assert test.update(0.0) == "continue"  # LLR is already -inf
    assert test.llr == -math.inf
    assert test.update(0.0) == "accept_control" and test.n == 20


def test_truncation_is_inconclusive_unless_the_last_step_crosses() -> None:
    # d = delta / 2 makes sum d^2 = sum (d - delta)^2: LLR 0 forever
    settings = SprtSettings(effect=0.5, min_samples=5, max_samples=30)
    flat = np.full(100, 0.25)
    test = PairedSPRT(settings)
    assert test.update(flat) == "inconclusive" and test.n == 30
    assert PairedSPRT(SprtSettings(effect=0.5, min_samples=5)).update(flat) == "continue"
    codes, used = sprt_decisions(flat[np.newaxis], settings)
    assert (codes[0], used[0]) == (INCONCLUSIVE, 30)
    # a crossing at the max_samples-th observation is a decision
    at_max = SprtSettings(min_samples=10, max_samples=10)
    assert PairedSPRT(at_max).update(np.zeros(50)) == "accept_control"


def test_sprt_decisions_agrees_with_paired_sprt_row_by_row() -> None:
    rng = np.random.default_rng(4)
    means = rng.choice([0.0, 0.025, 0.05, 0.1], 300)
    streams = rng.normal(means[:, np.newaxis], 0.2, (300, 250))
    streams[::7] = np.round(streams[::7] * 4) / 4  # some discrete rows with ties
    for settings in (
        SprtSettings(),
        SprtSettings(min_samples=5, max_samples=120, effect=0.08),
        SprtSettings(alpha=0.01, beta=0.1, min_samples=2),
    ):
        codes, used = sprt_decisions(streams, settings)
        assert set(np.unique(codes)) <= {CONTINUE, ACCEPT_TREATMENT, ACCEPT_CONTROL, INCONCLUSIVE}
        assert len(np.unique(codes)) >= 2
        for row, stream in enumerate(streams):
            whole = PairedSPRT(settings)
            whole.update(stream)
            chunked = PairedSPRT(settings)
            for chunk in np.array_split(stream, rng.integers(2, 20)):
                chunked.update(chunk)
            assert whole.decision == chunked.decision == DECISIONS[codes[row]], row
            assert whole.n == chunked.n == used[row], row
            if row % 25 == 0:  # observation by observation, and the written-out rule
                single = PairedSPRT(settings)
                for value in stream:
                    single.update(float(value))
                assert (single.decision, single.n) == (whole.decision, whole.n)
                assert _first_crossing(stream, settings) == (whole.decision, whole.n)


def test_sprt_decisions_rejects_bad_input() -> None:
    with pytest.raises(ConfigError, match="2-d"):
        sprt_decisions(np.zeros(10))
    with pytest.raises(ConfigError, match="finite"):
        sprt_decisions(np.array([[0.1, math.inf]]))
    codes, used = sprt_decisions(np.zeros((3, 0)))
    assert codes.tolist() == [CONTINUE] * 3 and used.tolist() == [0] * 3


# --------------------------------------------------------------------------------------------
# SPRT: error rates by simulation

STREAMS = 2000
LENGTH = 2000
DELTA = 0.05

# Differences of reciprocal ranks (1, 1/2, 1/3, 0 = not found) between two systems, symmetric
# under H0. Under H1 the probabilities are tilted linearly, p1(v) = p0(v) (1 + c v) with
# c = delta / E0[v^2], which keeps the ties and makes the mean exactly delta.
RR_VALUES = np.array([0, 1, -1, 1 / 2, -1 / 2, 2 / 3, -2 / 3, 1 / 3, -1 / 3, 1 / 6, -1 / 6])
RR_NONZERO = np.array([0.05, 0.05, 0.06, 0.06, 0.03, 0.03, 0.04, 0.04, 0.02, 0.02])  # sum 0.4


def _rr_probabilities(ties: float) -> tuple[FloatArray, FloatArray]:
    null = np.concatenate(([ties], RR_NONZERO * (1.0 - ties) / RR_NONZERO.sum()))
    tilt = DELTA / float(null @ RR_VALUES**2)
    effect = null * (1.0 + tilt * RR_VALUES)
    assert null @ RR_VALUES == pytest.approx(0.0, abs=1e-15)
    assert effect @ RR_VALUES == pytest.approx(DELTA, rel=1e-12) and effect.min() > 0
    return null, effect


def _gaussian(rng: np.random.Generator, mean: float) -> FloatArray:
    return rng.normal(mean, 0.15, (STREAMS, LENGTH))


def _reciprocal_rank(ties: float) -> Callable[[np.random.Generator, float], FloatArray]:
    null, effect = _rr_probabilities(ties)

    def draw(rng: np.random.Generator, mean: float) -> FloatArray:
        p = null if mean == 0.0 else effect
        return RR_VALUES[rng.choice(RR_VALUES.size, (STREAMS, LENGTH), p=p)]

    return draw


def _three_standard_errors(rate: float) -> float:
    """Tolerance of an estimated error rate: three binomial standard errors at n = STREAMS."""
    return 3.0 * math.sqrt(rate * (1.0 - rate) / STREAMS)


@pytest.mark.parametrize(
    ("draw", "seed"),
    [
        pytest.param(_gaussian, 10, id="gaussian-sd0.15"),
        pytest.param(_reciprocal_rank(0.6), 11, id="rr-differences-60%-ties"),
        pytest.param(_reciprocal_rank(0.8), 12, id="rr-differences-80%-ties"),
    ],
)
def test_error_rates_by_simulation(
    draw: Callable[[np.random.Generator, float], FloatArray], seed: int
) -> None:
    """Type I / II error rates of the default test (alpha 0.05, beta 0.20, delta 0.05,
    min_samples 50) on 2,000 null and 2,000 effect streams of 2,000 queries.

    Measured with these seeds (type I / type II): Gaussian 0.0275 / 0.0810, 60% ties
    0.0525 / 0.1935, 80% ties 0.0390 / 0.1965; every stream decided. Over 20,000 streams each:
    0.031 / 0.079, 0.047 / 0.194, 0.041 / 0.201. With min_samples 10 instead, the tied
    distributions' type II errors are 0.23 and 0.36 (see SprtSettings).
    """
    settings = SprtSettings(effect=DELTA)
    rng = np.random.default_rng(seed)
    null_codes, null_used = sprt_decisions(draw(rng, 0.0), settings)
    effect_codes, effect_used = sprt_decisions(draw(rng, DELTA), settings)
    for codes in (null_codes, effect_codes):
        assert np.mean(codes != CONTINUE) >= 0.99  # streams long enough to decide
    type_one = float(np.mean(null_codes == ACCEPT_TREATMENT))
    type_two = float(np.mean(effect_codes == ACCEPT_CONTROL))
    alpha_bound = settings.alpha + _three_standard_errors(settings.alpha)  # 0.05 + 0.0146
    beta_bound = settings.beta + _three_standard_errors(settings.beta)  # 0.20 + 0.0268
    report = f"type I {type_one:.4f}, type II {type_two:.4f}"
    assert type_one <= alpha_bound, report
    assert type_two <= beta_bound, report
    assert np.all(null_used >= settings.min_samples) and np.all(effect_used >= 50)


# --------------------------------------------------------------------------------------------
# Beta-Binomial


def test_probability_known_values() -> None:
    assert probability_better(0, 0, 0, 0) == pytest.approx(0.5, abs=1e-14)
    assert probability_better(7, 20, 7, 20) == pytest.approx(0.5, abs=1e-12)
    assert probability_better(300, 1000, 300, 1000) == pytest.approx(0.5, abs=1e-12)
    # Beta(2, 1) vs Beta(1, 1): int_0^1 2x * x dx = 2/3
    assert probability_better(1, 1, 0, 0) == pytest.approx(2 / 3, abs=1e-14)
    assert probability_better(0, 1, 0, 0) == pytest.approx(1 / 3, abs=1e-14)
    # Beta(a, 1) vs Beta(c, 1): P = a / (a + c) for any real a, c > 0
    assert probability_better(2, 2, 0, 0, prior=(0.5, 1.0)) == pytest.approx(2.5 / 3, abs=1e-14)
    assert _probability_by_integration(2.5, 1.0, 0.5, 1.0) == pytest.approx(2.5 / 3, abs=1e-13)
    assert _probability_by_integration(0.3, 1.0, 1.7, 1.0) == pytest.approx(0.15, abs=1e-13)
    # Jeffreys' prior has no integer parameter: integration, with singular densities at 0, 1
    assert probability_better(0, 0, 0, 0, prior=(0.5, 0.5)) == pytest.approx(0.5, abs=1e-13)
    assert probability_better(4, 9, 4, 9, prior=(0.5, 0.5)) == pytest.approx(0.5, abs=1e-13)
    assert probability_better(90, 100, 10, 100) > 1 - 1e-12


@pytest.mark.parametrize(
    ("counts", "prior"),
    [
        ((12, 40, 8, 40), (1.0, 1.0)),
        ((3, 10, 5, 12), (1.0, 1.0)),
        ((130, 1000, 110, 1000), (1.0, 1.0)),
        ((6, 25, 4, 30), (0.5, 0.5)),  # integration
        ((55, 60, 50, 60), (2.0, 3.5)),  # beta_C = 13.5, alpha_C = 52: sum over a complement
    ],
)
def test_probability_agrees_with_monte_carlo(
    counts: tuple[int, int, int, int], prior: tuple[float, float]
) -> None:
    """1,000,000 posterior draws; tolerance four binomial standard errors (at most 0.002)."""
    s_t, n_t, s_c, n_c = counts
    a, b = prior
    rng = np.random.default_rng(sum(counts))
    draws = 1_000_000
    treatment = rng.beta(a + s_t, b + n_t - s_t, draws)
    control = rng.beta(a + s_c, b + n_c - s_c, draws)
    estimate = float(np.mean(treatment > control))
    exact = probability_better(s_t, n_t, s_c, n_c, prior)
    tolerance = 4.0 * math.sqrt(max(exact * (1.0 - exact), 1e-6) / draws)
    assert abs(exact - estimate) <= tolerance, (exact, estimate, tolerance)


def test_probability_is_symmetric() -> None:
    rng = np.random.default_rng(5)
    for prior in ((1.0, 1.0), (0.5, 0.5), (2.0, 5.0), (1.3, 0.7)):
        for _ in range(10):
            n_t, n_c = (int(n) for n in rng.integers(0, 400, 2))
            s_t, s_c = int(rng.integers(0, n_t + 1)), int(rng.integers(0, n_c + 1))
            forward = probability_better(s_t, n_t, s_c, n_c, prior)
            backward = probability_better(s_c, n_c, s_t, n_t, prior)
            assert 0.0 <= forward <= 1.0
            assert forward + backward == pytest.approx(1.0, abs=1e-11)


@pytest.mark.parametrize(
    "parameters",
    [
        (1.0, 1.0, 1.0, 1.0),
        (11.0, 91.0, 3.0, 99.0),
        (501.0, 500.0, 500.0, 501.0),
        (189.0, 2188.0, 155.0, 2476.0),
        (3.0, 1000.0, 1.0, 1000.0),
        (5001.0, 5000.0, 4901.0, 5100.0),
    ],
)
def test_integration_agrees_with_the_closed_form(
    parameters: tuple[float, float, float, float],
) -> None:
    assert _probability_by_integration(*parameters) == pytest.approx(
        _miller_sum(*parameters), abs=1e-10
    )


def test_large_counts_use_integration_and_stay_consistent() -> None:
    # 40-digit reference (mpmath, Miller's sum by its term recurrence): 0.9873273743546864
    value = probability_better(50_000, 99_999, 49_500, 99_999)  # Beta(50001, 50000), ...
    assert value == pytest.approx(0.9873273743546864, abs=1e-12)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((5, 4, 0, 0), "treatment"),
        ((-1, 4, 0, 0), "treatment"),
        ((0, 4, 3, 2), "control"),
        ((1.5, 4, 0, 0), "integers"),
        ((1, 4, 0, 0, (0.0, 1.0)), "prior"),
        ((1, 4, 0, 0, (1.0, -1.0)), "prior"),
        ((1, 4, 0, 0, (math.nan, 1.0)), "prior"),
        ((1, 4, 0, 0, (1.0,)), "prior"),
    ],
)
def test_probability_rejects_bad_input(args: tuple[object, ...], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        probability_better(*args)  # type: ignore[arg-type]


def test_beta_binomial_state() -> None:
    state = BetaBinomialState()
    for hit_t, hit_c in [(True, False), (1, 1), (0, False)]:
        state = state.update(hit_t, hit_c)
    assert (state.successes_treatment, state.trials_treatment) == (2, 3)
    assert (state.successes_control, state.trials_control) == (1, 3)
    assert state.probability() == probability_better(2, 3, 1, 3)
    assert state.decision(min_samples=0) == "continue"  # P = 0.77
    assert state.decision(threshold=0.75, min_samples=0) == "accept_treatment"
    assert state.decision(threshold=0.75) == "continue"  # fewer than 50 trials per arm
    worse = BetaBinomialState(10, 100, 30, 100)
    assert worse.decision() == "accept_control"
    assert BetaBinomialState(30, 100, 10, 100).decision() == "accept_treatment"
    assert BetaBinomialState.from_dict(json.loads(json.dumps(worse.to_dict()))) == worse
    with pytest.raises(ConfigError, match="treatment_hit"):
        state.update(2, 0)
    with pytest.raises(ConfigError, match="threshold"):
        state.decision(threshold=0.4)
    with pytest.raises(ConfigError, match="control"):
        BetaBinomialState(0, 0, 2, 1)
    with pytest.raises(ConfigError, match="Beta-Binomial"):
        BetaBinomialState.from_dict({"trials_treatment": 1})
