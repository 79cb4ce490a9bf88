"""Fleiss' kappa (recallbench.stats._fleiss) against statsmodels' implementation on
generated tables, a worked example, and the edge cases: every rater agreeing,
one category only, tables that are not Fleiss tables."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats import inter_rater

from recallbench.core import ConfigError
from recallbench.stats._fleiss import fleiss_kappa, rating_counts


@pytest.mark.parametrize("seed", range(40))
def test_it_matches_statsmodels_on_random_tables(seed: int) -> None:
    rng = np.random.default_rng(seed)
    items, raters = int(rng.integers(1, 30)), int(rng.integers(2, 7))
    categories = int(rng.integers(2, 5))
    shares = rng.dirichlet(np.ones(categories) * rng.uniform(0.2, 3))
    table = np.array([rng.multinomial(raters, shares) for _ in range(items)])
    expected = inter_rater.fleiss_kappa(table, method="fleiss")
    ours = fleiss_kappa(table.tolist())
    if math.isnan(expected):
        assert ours.value is None and ours.undefined
    else:
        assert ours.value == pytest.approx(expected, abs=1e-12)
    assert (ours.items, ours.raters) == (items, raters)


def test_a_worked_example() -> None:
    """10 items, 14 raters, 5 categories: P_bar = 0.378, P_e = 0.213, kappa = 0.210 (the
    example of Fleiss' kappa commonly worked by hand, e.g. in Wikipedia's article)."""
    table = [
        [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1], [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
    ]  # fmt: skip
    kappa = fleiss_kappa(table)
    assert kappa.observed == pytest.approx(0.378, abs=5e-4)
    assert kappa.chance == pytest.approx(0.213, abs=5e-4)
    assert kappa.value == pytest.approx(0.210, abs=5e-4)
    assert kappa.value == pytest.approx(inter_rater.fleiss_kappa(np.array(table)), abs=1e-12)


def test_all_raters_agreeing_is_one_and_one_category_is_undefined() -> None:
    agreeing = rating_counts([[0, 0], [3, 3], [2, 2], [3, 3]], (0, 1, 2, 3))
    assert fleiss_kappa(agreeing).value == 1.0
    assert inter_rater.fleiss_kappa(np.array(agreeing)) == pytest.approx(1.0)
    single = rating_counts([[2, 2, 2], [2, 2, 2]], (0, 1, 2, 3))
    kappa = fleiss_kappa(single)
    assert kappa.value is None and "same category" in (kappa.undefined or "")
    assert kappa.observed == 1.0 and kappa.chance == 1.0
    assert math.isnan(inter_rater.fleiss_kappa(np.array(single)))  # where we say why


def test_complete_disagreement_is_below_zero() -> None:
    kappa = fleiss_kappa(rating_counts([[0, 1], [1, 0], [0, 1]], (0, 1)))
    assert kappa.value is not None and kappa.value < 0
    assert kappa.observed == 0.0


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ([], "at least one item"),
        ([[1, 0], [1, 1]], "same number of raters"),
        ([[1, 0], [0, 1]], "at least two raters"),
        ([[3, -1]], "negative"),
    ],
)
def test_tables_that_are_not_fleiss_tables_are_refused(
    table: list[list[int]], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        fleiss_kappa(table)


def test_labels_outside_the_categories_are_refused() -> None:
    with pytest.raises(ConfigError, match="not one of the categories"):
        rating_counts([[0, 4]], (0, 1, 2, 3))
