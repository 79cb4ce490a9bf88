"""Sample-ratio mismatch: Pearson's chi-square against the planned split."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from recallbench.core._errors import ConfigError
from recallbench.stats._srm import SRM_THRESHOLD, sample_ratio_check


def test_kohavi_worked_example_is_a_mismatch() -> None:
    # Kohavi, Tang & Xu (2020), ch. 21: 821,588 vs 815,482 on 50/50, p = 1.8e-6
    result = sample_ratio_check([821_588, 815_482])
    assert result.statistic == pytest.approx(22.774, abs=1e-3)
    assert result.pvalue == pytest.approx(1.82e-6, rel=1e-2)
    assert result.mismatch and result.threshold == SRM_THRESHOLD == 0.001


def test_statistic_by_hand_for_an_unequal_split() -> None:
    # 90/10 plan, 880 and 120 seen: expected 900 and 100, X^2 = 400/900 + 400/100 = 4.444
    result = sample_ratio_check({"control": 880, "treatment": 120}, {"treatment": 1, "control": 9})
    assert result.expected == pytest.approx((900.0, 100.0))
    assert result.statistic == pytest.approx(40 / 9)
    assert result.pvalue == pytest.approx(0.03501, abs=1e-5)
    assert not result.mismatch  # p = 0.035 is no SRM at 0.001


def test_balanced_counts_and_three_arms() -> None:
    assert sample_ratio_check([500, 500]).pvalue == pytest.approx(1.0)
    three = sample_ratio_check([1000, 1000, 1300], [1, 1, 1])
    assert three.mismatch and len(three.expected) == 3


def test_no_observations() -> None:
    result = sample_ratio_check([0, 0])
    assert result.pvalue == 1.0 and not result.mismatch


@pytest.mark.parametrize(
    ("observed", "planned", "message"),
    [
        ([10], None, "at least 2"),
        ([10, 10], [1.0], "arms"),
        ([10, -1], None, "non-negative"),
        ([10, 1.5], None, "non-negative"),
        ([10, 10], [1.0, 0.0], "positive"),
        ({"a": 1, "b": 2}, {"a": 1.0}, "same arms"),
        ([1, 2], {"a": 1.0, "b": 1.0}, "sequence"),
    ],
)
def test_inputs_are_checked(observed: object, planned: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        sample_ratio_check(observed, planned)  # type: ignore[arg-type]


def test_threshold_is_checked() -> None:
    with pytest.raises(ConfigError, match="threshold"):
        sample_ratio_check([1, 2], threshold=0.0)


@settings(max_examples=300, deadline=None)
@given(
    counts=st.lists(st.integers(0, 100_000), min_size=2, max_size=5),
    data=st.data(),
)
def test_the_check_is_scipys_chisquare_to_the_bit(counts: list[int], data: Any) -> None:
    """The statistic and p-value of scipy.stats.chisquare, computed without importing it."""
    weights = data.draw(st.lists(st.floats(0.05, 20), min_size=len(counts), max_size=len(counts)))
    result = sample_ratio_check(counts, weights)
    if sum(counts) == 0:
        assert (result.statistic, result.pvalue) == (0.0, 1.0)
        return
    reference = stats.chisquare(counts, f_exp=result.expected)
    assert (result.statistic, result.pvalue) == (reference.statistic, reference.pvalue)
