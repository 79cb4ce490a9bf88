"""Fleiss' kappa: the agreement of a fixed number of raters per item beyond chance.

Each of ``N`` items is labelled by the same number ``n >= 2`` of raters (not necessarily the
same people: that is what sets it apart from Cohen's kappa) into one of ``k`` categories;
``n_ij`` counts the raters who put item ``i`` in category ``j``. Then

    P_i   = (sum_j n_ij^2 - n) / (n (n - 1))     agreeing pairs of raters of item i
    P_bar = (1 / N) sum_i P_i                    observed agreement
    p_j   = (1 / (N n)) sum_i n_ij               share of all labels in category j
    P_e   = sum_j p_j^2                          agreement expected by chance
    kappa = (P_bar - P_e) / (1 - P_e)

Every rater agreeing on every item gives 1, whatever the categories, as long as more than
one category is used. When every label of the table is one category, ``P_e = 1`` and kappa
is 0/0: it is **undefined** here (``value`` None, with the reason), never NaN and never 1,
because no disagreement was possible by chance (``statsmodels`` returns NaN for that table).

Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. Psychological
Bulletin 76(5), 378-382.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from recallbench.core._errors import ConfigError

CHANCE_FLOOR = 1e-12
"""``1 - P_e`` at or below this is zero: one category only."""


@dataclass(frozen=True, slots=True)
class FleissKappa:
    """Fleiss' kappa of one table; ``value`` None when undefined (``undefined`` says why)."""

    value: float | None
    items: int
    raters: int
    """Raters per item (the same for every item)."""
    observed: float
    """P_bar, the mean share of agreeing pairs of raters."""
    chance: float
    """P_e, the agreement expected by chance."""
    undefined: str | None = None


def rating_counts(ratings: Iterable[Sequence[int]], categories: Sequence[int]) -> list[list[int]]:
    """The ``n_ij`` table from each item's labels (one list of labels per item)."""
    index = {category: j for j, category in enumerate(categories)}
    table = []
    for labels in ratings:
        row = [0] * len(categories)
        for label in labels:
            if label not in index:
                raise ConfigError(f"label {label!r} is not one of the categories {categories}")
            row[index[label]] += 1
        table.append(row)
    return table


def fleiss_kappa(table: Sequence[Sequence[int]]) -> FleissKappa:
    """Fleiss' kappa of an items x categories table of counts (see the module's docstring).

    ConfigError for an empty table, negative counts, fewer than two raters per item or
    items with different numbers of raters."""
    if not table:
        raise ConfigError("Fleiss' kappa needs at least one item")
    rows = [[int(count) for count in row] for row in table]
    if any(count < 0 for row in rows for count in row):
        raise ConfigError("Fleiss' kappa counts raters: no count may be negative")
    raters = {sum(row) for row in rows}
    if len(raters) != 1:
        raise ConfigError(f"Fleiss' kappa needs the same number of raters per item, got {raters}")
    n = raters.pop()
    if n < 2:
        raise ConfigError(f"Fleiss' kappa needs at least two raters per item, got {n}")
    items = len(rows)
    observed = sum((sum(c * c for c in row) - n) / (n * (n - 1)) for row in rows) / items
    totals = [sum(column) for column in zip(*rows, strict=True)]
    chance = sum((total / (items * n)) ** 2 for total in totals)
    if 1.0 - chance <= CHANCE_FLOOR:
        return FleissKappa(
            None, items, n, observed, chance,
            "undefined: every label is the same category, so no disagreement was possible "
            "by chance (kappa = 0/0)",
        )  # fmt: skip
    return FleissKappa((observed - chance) / (1.0 - chance), items, n, observed, chance)
