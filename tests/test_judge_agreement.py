"""Agreement between a judge and people: kappa against published tables and a direct
computation, the confusion matrix, per-group agreement, Kendall's tau-b against scipy, the
bootstrap intervals against a plain loop, and the degenerate cases.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from recallbench.core._errors import ConfigError
from recallbench.judges._agreement import (
    BINARY,
    GRADES,
    Weighting,
    binary_labels,
    cohen_kappa,
    confusion_matrix,
    group_agreement,
    kappa_from_confusion,
    kappa_interval,
    kendall_tau_b,
    tau_interval,
)

# -- published values ----------------------------------------------------------------------


def test_cohen_1968_table_1() -> None:
    # Cohen (1968), Psychol. Bull. 70(4), Table 1: 200 cases, three diagnoses, observed
    # proportions and ratio-scaled disagreement weights 1, 3, 6; Cohen reports kappa = .492
    # and weighted kappa = .348 (also quoted in the examples of R's psych::cohen.kappa)
    table = np.array([[0.44, 0.07, 0.09], [0.05, 0.20, 0.05], [0.01, 0.03, 0.06]])
    weights = np.array([[0.0, 1, 3], [1, 0, 6], [3, 6, 0]])
    assert round(kappa_from_confusion(table).value or 0, 3) == 0.492
    assert round(kappa_from_confusion(table, weights).value or 0, 3) == 0.348
    counts = np.rint(table * 200).astype(np.int64)  # the same table as counts of 200
    assert kappa_from_confusion(counts, weights).value == pytest.approx(1 - 0.90 / 1.38)


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        # Wikipedia, "Cohen's kappa", worked example: 50 applications, p_o = 0.7, p_e = 0.5
        ([[20, 5], [10, 15]], 0.4),
        # ibid., "same percentage agreement, different kappa": 0.1304 and 0.2593
        ([[45, 15], [25, 15]], 0.1304),
        ([[25, 35], [5, 35]], 0.2593),
    ],
)
def test_textbook_two_by_two_tables(table: list[list[int]], expected: float) -> None:
    assert kappa_from_confusion(np.array(table)).value == pytest.approx(expected, abs=5e-5)


# -- a direct computation ------------------------------------------------------------------


def _direct_kappa(first: Sequence[int], second: Sequence[int], k: int, weighting: str) -> float:
    """Cohen's formula with agreement weights w_ij = 1 - v_ij / v_max, cell by cell:
    (sum w p_o - sum w p_e) / (1 - sum w p_e)."""
    n = len(first)
    p = [[0.0] * k for _ in range(k)]
    for a, b in zip(first, second, strict=True):
        p[a][b] += 1 / n
    rows = [sum(p[i]) for i in range(k)]
    columns = [sum(p[i][j] for i in range(k)) for j in range(k)]

    def agreement(i: int, j: int) -> float:
        if weighting == "unweighted":
            return 1.0 if i == j else 0.0
        power = 1 if weighting == "linear" else 2
        return 1 - abs(i - j) ** power / (k - 1) ** power

    observed = sum(agreement(i, j) * p[i][j] for i in range(k) for j in range(k))
    chance = sum(agreement(i, j) * rows[i] * columns[j] for i in range(k) for j in range(k))
    return (observed - chance) / (1 - chance)


def _rated(seed: int, n: int) -> tuple[list[int], list[int]]:
    rng = np.random.default_rng(seed)
    human = rng.integers(0, 4, n)
    judge = np.clip(human + rng.choice([-2, -1, 0, 0, 0, 1], n), 0, 3)
    return human.tolist(), judge.tolist()


@pytest.mark.parametrize("weighting", ["unweighted", "linear", "quadratic"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kappa_agrees_with_the_formula_cell_by_cell(weighting: Weighting, seed: int) -> None:
    human, judge = _rated(seed, 150)
    expected = _direct_kappa(human, judge, 4, weighting)
    assert cohen_kappa(human, judge, GRADES, weighting).value == pytest.approx(expected, abs=1e-12)


def test_quadratic_kappa_is_the_moment_formula() -> None:
    # Cohen (1968): with squared weights, kappa_w = 2 s_xy / (s_x^2 + s_y^2 + (mean x - mean y)^2)
    # (population moments); an identity independent of the confusion table
    human, judge = _rated(7, 300)
    x, y = np.array(human, float), np.array(judge, float)
    covariance = np.mean((x - x.mean()) * (y - y.mean()))
    expected = 2 * covariance / (x.var() + y.var() + (x.mean() - y.mean()) ** 2)
    assert cohen_kappa(human, judge, GRADES, "quadratic").value == pytest.approx(expected)


# -- confusion matrix, binary labels, groups -----------------------------------------------


def test_confusion_matrix_rows_are_the_first_rater() -> None:
    table = confusion_matrix([0, 0, 3, 2, 2], [0, 1, 3, 2, 1])
    expected = np.zeros((4, 4), dtype=np.int64)
    for a, b in [(0, 0), (0, 1), (3, 3), (2, 2), (2, 1)]:
        expected[a, b] += 1
    assert np.array_equal(table, expected)


def test_binary_labels_at_a_threshold() -> None:
    assert binary_labels([0, 1, 2, 3], threshold=2) == [0, 0, 1, 1]
    human, judge = [0, 1, 2, 3, 3, 0], [1, 1, 3, 2, 0, 0]
    # at threshold 2: human 0 0 1 1 1 0, judge 0 0 1 1 0 0: p_o = 5/6,
    # p_e = (1/2)(1/3) + (1/2)(2/3) = 1/2, kappa = (5/6 - 1/2) / (1 - 1/2) = 2/3
    binary = cohen_kappa(binary_labels(human, 2), binary_labels(judge, 2), BINARY)
    assert binary.value == pytest.approx(2 / 3)


def test_group_agreement() -> None:
    human = [0, 1, 2, 3, 1, 2, 2, 2]
    judge = [0, 1, 2, 2, 1, 2, 2, 2]
    groups = ["temporal", "temporal", "temporal", "temporal", "multi-hop"] + ["single"] * 3
    rows = group_agreement(human, judge, groups)
    assert [(r.group, r.n) for r in rows] == [("multi-hop", 1), ("single", 3), ("temporal", 4)]
    temporal = rows[2]
    assert temporal.agreement == 0.75
    assert temporal.kappa == cohen_kappa(human[:4], judge[:4])
    for row in rows[:2]:  # one category in the group: kappa undefined, agreement still 1
        assert row.kappa.value is None and row.kappa.undefined and row.agreement == 1.0


# -- degenerate cases and located errors ---------------------------------------------------


def test_one_category_only_is_undefined_not_nan() -> None:
    result = cohen_kappa([2, 2, 2], [2, 2, 2])
    assert result.value is None
    assert result.undefined is not None and "single category" in result.undefined
    interval = kappa_interval([2, 2, 2], [2, 2, 2], resamples=1_000)
    assert (interval.interval.low, interval.interval.high) == (None, None)


def test_two_raters_each_with_their_own_single_category_have_kappa_zero() -> None:
    # no agreement observed and none expected by chance: kappa = (0 - 0) / (1 - 0)
    assert cohen_kappa([1, 1, 1], [0, 0, 0]).value == 0.0


@pytest.mark.parametrize(
    ("human", "judge", "message"),
    [
        ([], [], "human: no labels"),
        ([1, 2], [], "judge: no labels"),
        ([1, 2, 3], [1, 2], "human has 3 labels and judge 2"),
        ([1, 2, 3], [1, 2, 7], r"judge\[2\]: label 7 is not one of 0, 1, 2, 3"),
    ],
)
def test_bad_labels_are_located(human: list[int], judge: list[int], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        cohen_kappa(human, judge)


def test_bad_tables_and_weightings_are_refused() -> None:
    with pytest.raises(ConfigError, match="empty"):
        kappa_from_confusion(np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(ConfigError, match="weighting must be one of"):
        cohen_kappa([0, 1], [0, 1], weighting="cubic")  # type: ignore[arg-type]


# -- bootstrap interval of kappa -----------------------------------------------------------


def _loop_bootstrap_kappa(
    human: list[int], judge: list[int], weighting: Weighting, resamples: int, seed: int
) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    n = len(human)
    values = []
    for _ in range(resamples):
        pick = rng.integers(0, n, n)
        value = cohen_kappa([human[i] for i in pick], [judge[i] for i in pick], GRADES, weighting)
        if value.value is not None:
            values.append(value.value)
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


@pytest.mark.parametrize("weighting", ["unweighted", "quadratic"])
def test_kappa_interval_agrees_with_a_plain_bootstrap_loop(weighting: Weighting) -> None:
    # independent seeds: the endpoints agree within Monte Carlo error (2,000 resamples of 200
    # pairs put the 2.5% quantile's standard error near 0.006)
    human, judge = _rated(11, 200)
    result = kappa_interval(human, judge, weighting=weighting, resamples=2_000, seed=5)
    low, high = _loop_bootstrap_kappa(human, judge, weighting, 2_000, seed=99)
    assert result.interval.low == pytest.approx(low, abs=0.03)
    assert result.interval.high == pytest.approx(high, abs=0.03)
    assert result.interval.low < (result.kappa.value or 0) < result.interval.high
    again = kappa_interval(human, judge, weighting=weighting, resamples=2_000, seed=5)
    assert again == result  # seeded


def test_resamples_with_one_category_are_counted() -> None:
    # kappa is undefined in a resample that draws only the three (0, 0) pairs of five:
    # probability (3/5)^5 = 0.0778, binomial standard error over 10,000 resamples 0.0027
    result = kappa_interval([0, 0, 0, 0, 1], [0, 0, 0, 1, 1], resamples=10_000)
    share = result.interval.undefined_resamples / 10_000
    assert 0.0778 - 0.01 < share < 0.0778 + 0.01
    assert result.interval.low is not None and result.interval.high is not None


# -- Kendall's tau-b -----------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_tau_b_agrees_with_scipy_ties_included(seed: int) -> None:
    rng = np.random.default_rng(seed)
    human = np.round(rng.random(9), 1)  # rounding makes ties in both scorings
    judge = np.round(human + rng.normal(0, 0.2, 9), 1)
    names = [f"system-{i}" for i in range(9)]
    expected = stats.kendalltau(human, judge, variant="b").statistic
    tau = kendall_tau_b(dict(zip(names, human, strict=True)), dict(zip(names, judge, strict=True)))
    assert tau.value == pytest.approx(expected, abs=1e-12)


def test_tau_of_reversed_and_tied_rankings() -> None:
    scores = {"a": 0.5, "b": 0.3, "c": 0.1}
    assert kendall_tau_b(scores, {k: -v for k, v in scores.items()}).value == -1.0
    tied = kendall_tau_b(scores, dict.fromkeys(scores, 0.2))
    assert tied.value is None and tied.undefined is not None and "ties" in tied.undefined
    with pytest.raises(ConfigError, match="at least two systems"):
        kendall_tau_b({"a": 1.0}, {"a": 1.0})
    with pytest.raises(ConfigError, match="same systems"):
        kendall_tau_b({"a": 1.0, "b": 0.0}, {"a": 1.0, "c": 0.0})


def _per_query(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    quality = np.linspace(0.3, 0.6, 6)[:, None]
    human = np.clip(quality + rng.normal(0, 0.3, (6, 60)), 0, 1)
    judge = np.clip(human + rng.normal(0.05, 0.15, (6, 60)), 0, 1)
    return human, judge


def test_tau_interval_agrees_with_a_plain_bootstrap_loop() -> None:
    human, judge = _per_query(4)
    result = tau_interval(human, judge, resamples=2_000, seed=1)
    means = [dict(zip("abcdef", scores.mean(axis=1), strict=True)) for scores in (human, judge)]
    assert result.tau == kendall_tau_b(*means)
    rng = np.random.default_rng(2)
    taus = []
    for _ in range(2_000):
        pick = rng.integers(0, 60, 60)
        h, j = human[:, pick].mean(axis=1), judge[:, pick].mean(axis=1)
        taus.append(stats.kendalltau(h, j, variant="b").statistic)
    low, high = np.percentile(taus, [2.5, 97.5])
    # tau over 6 systems moves in steps of 1/15: endpoints agree within a step
    assert result.interval.low == pytest.approx(low, abs=1 / 15 + 1e-9)
    assert result.interval.high == pytest.approx(high, abs=1 / 15 + 1e-9)


def test_tau_interval_of_identical_labels_is_one() -> None:
    human, _ = _per_query(5)
    result = tau_interval(human, human.copy(), resamples=1_000)
    assert result.tau.value == 1.0
    assert (result.interval.low, result.interval.high) == (1.0, 1.0)


def test_tau_interval_refuses_mismatched_shapes() -> None:
    with pytest.raises(ConfigError, match="systems x queries"):
        tau_interval(np.zeros((3, 5)), np.zeros((3, 4)))
    with pytest.raises(ConfigError, match="at least two queries"):
        tau_interval(np.zeros((3, 1)), np.zeros((3, 1)))


# -- properties ----------------------------------------------------------------------------

labels = st.lists(st.integers(0, 3), min_size=1, max_size=40)
weightings = st.sampled_from(["unweighted", "linear", "quadratic"])


@settings(max_examples=200, deadline=None)
@given(first=labels, weighting=weightings)
def test_identical_labels_have_kappa_one(first: list[int], weighting: Weighting) -> None:
    result = cohen_kappa(first, list(first), GRADES, weighting)
    if len(set(first)) == 1:
        assert result.value is None
    else:
        assert result.value == pytest.approx(1.0)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), weighting=weightings)
def test_kappa_is_symmetric_and_within_bounds(data: st.DataObject, weighting: Weighting) -> None:
    first = data.draw(labels)
    second = data.draw(st.lists(st.integers(0, 3), min_size=len(first), max_size=len(first)))
    one = cohen_kappa(first, second, GRADES, weighting)
    other = cohen_kappa(second, first, GRADES, weighting)
    assert (one.value is None) == (other.value is None)
    if one.value is not None and other.value is not None:
        assert one.value == pytest.approx(other.value, abs=1e-12)
        assert -1 - 1e-12 <= one.value <= 1 + 1e-12


@settings(max_examples=200, deadline=None)
@given(scores=st.lists(st.floats(0, 1), min_size=2, max_size=12))
def test_identical_rankings_have_tau_one(scores: list[float]) -> None:
    ranking = {f"s{i}": score for i, score in enumerate(scores)}
    tau = kendall_tau_b(ranking, dict(ranking))
    if max(scores) - min(scores) <= 1e-12:
        assert tau.value is None
    else:
        assert tau.value == pytest.approx(1.0)
