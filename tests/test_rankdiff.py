"""Per-query rank differences: hand-computed cases, class thresholds, agreement with scipy's
Kendall tau-b, the summary, and properties."""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from recallbench.core._errors import ConfigError
from recallbench.stats._rankdiff import (
    RANK_CLASSES,
    RankDifference,
    _kendall_tau_b,
    classify,
    rank_difference,
    rank_differences,
)

TEN = [f"d{i}" for i in range(10)]


def swapped(items: list[str], i: int, j: int) -> list[str]:
    out = list(items)
    out[i], out[j] = out[j], out[i]
    return out


# ---------------------------------------------------------------- hand-computed cases


def test_identical_lists() -> None:
    diff = rank_difference("q", TEN, list(TEN), 10)
    assert diff == RankDifference("q", 1.0, 1.0, False, 0, "identical")


def test_reversed_lists() -> None:
    # every one of the 10 pairs is discordant; the middle item keeps its position
    diff = rank_difference("q", ["a", "b", "c", "d", "e"], ["e", "d", "c", "b", "a"], 5)
    assert diff == RankDifference("q", -1.0, 1.0, True, 4, "incompatible")


def test_disjoint_lists() -> None:
    # x = (1,2,3,4,4,4), y = (4,4,4,1,2,3): 9 discordant cross pairs, 3 ties in each vector,
    # tau = -9 / sqrt((15 - 3)(15 - 3)) = -0.75
    diff = rank_difference("q", ["a", "b", "c"], ["x", "y", "z"], 3)
    assert diff == RankDifference("q", -0.75, 0.0, True, 3, "incompatible")
    # two disjoint top 10s: -100 / (190 - 45)
    assert rank_difference("q", TEN, [f"e{i}" for i in range(10)], 10).kendall_tau == (
        pytest.approx(-100 / 145, abs=1e-15)
    )


def test_disjoint_single_items_are_one_discordant_pair() -> None:
    diff = rank_difference("q", ["a"], ["b"], 5)
    assert diff == RankDifference("q", -1.0, 0.0, True, 1, "incompatible")


def test_one_extra_item_at_the_bottom() -> None:
    # the extra item is alone at the bottom of the shorter list, so the orders agree fully
    diff = rank_difference("q", ["a", "b", "c"], ["a", "b", "c", "d"], 4)
    assert diff == RankDifference("q", 1.0, 0.75, False, 1, "minor")


def test_one_extra_item_at_the_top() -> None:
    # 3 concordant pairs among a, b, c and 3 discordant pairs with the new first item
    diff = rank_difference("q", ["a", "b", "c"], ["z", "a", "b", "c"], 4)
    assert diff == RankDifference("q", 0.0, 0.75, True, 4, "incompatible")


def test_swapped_top_two_is_major_at_k10() -> None:
    # 1 discordant pair of 45: tau = 43/45 >= 0.95, but the top 1 changed
    diff = rank_difference("q", TEN, swapped(TEN, 0, 1), 10)
    assert diff == RankDifference("q", 43 / 45, 1.0, True, 2, "major")


def test_swapped_second_and_third_is_minor_at_k10() -> None:
    diff = rank_difference("q", TEN, swapped(TEN, 1, 2), 10)
    assert diff == RankDifference("q", 43 / 45, 1.0, False, 2, "minor")


def test_swapped_top_two_is_incompatible_at_k2() -> None:
    diff = rank_difference("q", ["a", "b", "c"], ["b", "a", "c"], 2)
    assert diff == RankDifference("q", -1.0, 1.0, True, 2, "incompatible")


def test_both_empty() -> None:
    assert rank_difference("q", [], [], 10) == RankDifference("q", 1.0, 1.0, False, 0, "identical")


@pytest.mark.parametrize(("a", "b"), [([], ["x", "y"]), (["x", "y"], []), ([], ["x"])])
def test_one_empty(a: list[str], b: list[str]) -> None:
    diff = rank_difference("q", a, b, 10)
    assert diff == RankDifference("q", -1.0, 0.0, True, len(a) + len(b), "incompatible")


def test_single_common_item() -> None:
    assert rank_difference("q", ["x"], ["x"], 10).rank_class == "identical"


def test_duplicates_keep_their_first_occurrence() -> None:
    # the repeat neither takes one of the k slots nor gets a second rank
    diff = rank_difference("q", ["a", "a", "b", "a", "c", "d"], ["a", "b", "c"], 3)
    assert diff == RankDifference("q", 1.0, 1.0, False, 0, "identical")
    diff = rank_difference("q", ["a", "b", "a", "c"], ["a", "c", "b", "c"], 3)
    assert diff == rank_difference("q", ["a", "b", "c"], ["a", "c", "b"], 3)


def test_items_beyond_k_are_ignored() -> None:
    assert rank_difference("q", ["a", "b", "c", "x"], ["a", "b", "c", "y"], 3).kendall_tau == 1.0


def test_position_changes_count_positions_filled_in_one_list_only() -> None:
    assert rank_difference("q", ["a", "b", "c", "d"], ["a", "c"], 4).position_changes == 3


# ---------------------------------------------------------------- class thresholds


def below(value: float) -> float:
    return math.nextafter(value, -math.inf)


@pytest.mark.parametrize(
    ("tau", "jaccard", "top1_changed", "expected"),
    [
        (0.99, 0.95, False, "identical"),
        (0.99, 0.95, True, "identical"),
        (below(0.99), 0.95, False, "minor"),
        (0.99, below(0.95), False, "minor"),
        (0.99, below(0.95), True, "major"),
        (0.95, 0.0, False, "minor"),
        (0.95, 0.0, True, "major"),
        (below(0.95), 1.0, False, "major"),
        (0.85, 0.0, True, "major"),
        (0.85, 1.0, False, "major"),
        (below(0.85), 1.0, False, "incompatible"),
        (-1.0, 0.0, True, "incompatible"),
    ],
)
def test_classify_boundaries(tau: float, jaccard: float, top1_changed: bool, expected: str) -> None:
    assert classify(tau, jaccard, top1_changed) == expected


SIXTEEN = [f"d{i:02d}" for i in range(16)]


def moved(items: list[str], src: int, dst: int) -> list[str]:
    out = list(items)
    out.insert(dst, out.pop(src))
    return out


def test_tau_exactly_095_from_rankings() -> None:
    # 3 of 120 pairs discordant: tau = 114/120, exactly the float 0.95
    three_swaps = swapped(swapped(swapped(SIXTEEN, 1, 2), 4, 5), 7, 8)
    diff = rank_difference("q", SIXTEEN, three_swaps, 16)
    assert diff.kendall_tau == 0.95
    assert diff.rank_class == "minor"
    with_top = swapped(swapped(swapped(SIXTEEN, 0, 1), 4, 5), 7, 8)
    assert rank_difference("q", SIXTEEN, with_top, 16).rank_class == "major"
    four_swaps = swapped(three_swaps, 10, 11)
    assert rank_difference("q", SIXTEEN, four_swaps, 16).rank_class == "major"


def test_tau_exactly_085_from_rankings() -> None:
    # moving one item 9 places down makes 9 of 120 pairs discordant: tau = 102/120 = 0.85
    diff = rank_difference("q", SIXTEEN, moved(SIXTEEN, 1, 10), 16)
    assert diff.kendall_tau == 0.85
    assert diff.rank_class == "major"
    assert rank_difference("q", SIXTEEN, moved(SIXTEEN, 1, 11), 16).rank_class == "incompatible"


# ---------------------------------------------------------------- agreement with scipy


def reference_tau(a: list[str], b: list[str], k: int) -> float:
    """The definition, written out plainly and handed to scipy."""
    top_a = list(dict.fromkeys(a))[:k]
    top_b = list(dict.fromkeys(b))[:k]
    if top_a == top_b:
        return 1.0
    union = top_a + [doc for doc in top_b if doc not in top_a]
    x = [top_a.index(d) + 1 if d in top_a else len(top_a) + 1 for d in union]
    y = [top_b.index(d) + 1 if d in top_b else len(top_b) + 1 for d in union]
    with warnings.catch_warnings():  # scipy warns before returning NaN for one item
        warnings.simplefilter("ignore")
        tau = float(stats.kendalltau(x, y, variant="b").statistic)
    if math.isnan(tau):
        # the only undefined case that is not identical lists
        assert (not top_a) != (not top_b)
        return -1.0
    return tau


def test_agrees_with_scipy_kendalltau_b() -> None:
    rng = random.Random(20250101)
    vocabulary = [f"d{i}" for i in range(14)]
    for _ in range(500):
        k = rng.randint(1, 10)
        a = [rng.choice(vocabulary) for _ in range(rng.randint(0, k + 3))]
        b = [rng.choice(vocabulary) for _ in range(rng.randint(0, k + 3))]
        if rng.random() < 0.5:  # often a perturbation of a, so overlap is large
            b = list(a)
            rng.shuffle(b)
            b = b[: rng.randint(0, len(b))] + rng.sample(vocabulary, rng.randint(0, 3))
        diff = rank_difference("q", a, b, k)
        assert diff.kendall_tau == pytest.approx(reference_tau(a, b, k), abs=1e-12), (a, b, k)


def test_pairwise_tau_b_with_arbitrary_ties_agrees_with_scipy() -> None:
    rng = np.random.default_rng(7)
    for _ in range(100):
        n = int(rng.integers(2, 20))
        x = rng.integers(1, 6, n)
        y = rng.integers(1, 6, n)
        with warnings.catch_warnings():  # a constant vector: scipy warns, returns NaN
            warnings.simplefilter("ignore")
            expected = float(stats.kendalltau(x, y, variant="b").statistic)
        got = _kendall_tau_b(x, y)
        if math.isnan(expected):
            assert got is None
        else:
            assert got == pytest.approx(expected, abs=1e-12)


# ---------------------------------------------------------------- summary


def test_summary_counts_means_and_most_changed() -> None:
    baseline = {
        "same": TEN,
        "minor": TEN,
        "major": TEN,
        "reversed": TEN,
        "q_empty": TEN,
        "disjoint": TEN,
        "a_empty": TEN,
    }
    other = {
        "only_other": ["z"],
        "a_empty": [],
        "disjoint": [f"e{i}" for i in range(10)],
        "q_empty": [],
        "reversed": TEN[::-1],
        "major": swapped(TEN, 0, 1),
        "minor": swapped(TEN, 1, 2),
        "same": TEN,
    }
    differences, summary = rank_differences(baseline, other, k=10, most_changed=4)
    assert [d.query_id for d in differences] == list(baseline)
    assert [d.rank_class for d in differences] == [
        "identical",
        "minor",
        "major",
        "incompatible",
        "incompatible",
        "incompatible",
        "incompatible",
    ]
    assert list(summary.classes) == list(RANK_CLASSES)
    assert summary.classes == {"identical": 1, "minor": 1, "major": 1, "incompatible": 4}
    assert summary.k == 10
    assert summary.queries == 7
    assert summary.top1_changed == 5
    taus = [1.0, 43 / 45, 43 / 45, -1.0, -1.0, -100 / 145, -1.0]
    assert summary.mean_kendall_tau == pytest.approx(sum(taus) / 7)
    assert summary.mean_jaccard == pytest.approx(4 / 7)
    # tau ascending, then Jaccard ascending, then query id
    assert [d.query_id for d in summary.most_changed] == [
        "a_empty",
        "q_empty",
        "reversed",
        "disjoint",
    ]


def test_summary_keeps_at_most_the_number_of_queries() -> None:
    _, summary = rank_differences({"q": ["a"]}, {"q": ["b"]}, k=1, most_changed=10)
    assert len(summary.most_changed) == 1
    _, summary = rank_differences({"q": ["a"]}, {"q": ["b"]}, k=1, most_changed=0)
    assert summary.most_changed == ()


def test_no_queries() -> None:
    differences, summary = rank_differences({}, {"q": ["a"]})
    assert differences == []
    assert summary.queries == 0
    assert summary.classes == dict.fromkeys(RANK_CLASSES, 0)
    assert math.isnan(summary.mean_kendall_tau)
    assert math.isnan(summary.mean_jaccard)


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("k", [0, -3])
def test_k_below_one(k: int) -> None:
    with pytest.raises(ConfigError, match="k must be >= 1"):
        rank_difference("q", ["a"], ["a"], k)
    with pytest.raises(ConfigError, match="k must be >= 1"):
        rank_differences({"q": ["a"]}, {"q": ["a"]}, k=k)


def test_query_missing_from_other() -> None:
    with pytest.raises(ConfigError, match="'q2'"):
        rank_differences({"q1": ["a"], "q2": ["a"]}, {"q1": ["a"]})
    with pytest.raises(ConfigError, match=r"'q2' \(and 1 more\)"):
        rank_differences({"q1": ["a"], "q2": ["a"], "q3": ["a"]}, {"q1": ["a"]})


def test_negative_most_changed() -> None:
    with pytest.raises(ConfigError, match="most_changed"):
        rank_differences({"q": ["a"]}, {"q": ["a"]}, most_changed=-1)


# ---------------------------------------------------------------- properties

rankings = st.lists(st.sampled_from("abcdefgh"), max_size=10)
cutoffs = st.integers(min_value=1, max_value=8)


@given(rankings, rankings, cutoffs)
def test_properties(a: list[str], b: list[str], k: int) -> None:
    forward = rank_difference("q", a, b, k)
    backward = rank_difference("q", b, a, k)
    assert -1.0 <= forward.kendall_tau <= 1.0
    assert 0.0 <= forward.jaccard <= 1.0
    assert forward.kendall_tau == backward.kendall_tau
    assert forward.jaccard == backward.jaccard
    assert forward.top1_changed == backward.top1_changed
    assert forward.position_changes == backward.position_changes
    assert forward.rank_class == classify(
        forward.kendall_tau, forward.jaccard, forward.top1_changed
    )


@given(rankings, cutoffs)
def test_identical_lists_are_identical(a: list[str], k: int) -> None:
    diff = rank_difference("q", a, list(a), k)
    assert (diff.kendall_tau, diff.jaccard, diff.position_changes) == (1.0, 1.0, 0)
    assert diff.rank_class == "identical"
    assert not diff.top1_changed
