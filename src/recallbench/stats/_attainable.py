"""The smallest p-value a paired test can give at n: below it, alpha is out of reach.

A permutation test's p-value is a count over a finite set of sign assignments, so it has a
floor. With m non-zero differences the two-sided randomisation test (and the exact Wilcoxon
test) can do no better than the assignment observed and its mirror image: ``p >= 2 / 2^m``.
With 5 queries that is 0.0625, so nothing is ever significant at 0.05, however large the
difference. Zero differences do not count: flipping the sign of 0 changes nothing. The
sampled randomisation test adds its own floor, ``1 / (resamples + 1)``. The t-test has no
floor (it needs 2 queries whose differences vary).

Phipson, B. & Smyth, G. (2010). Permutation p-values should never be zero. Stat. Appl.
Genet. Mol. Biol. 9(1); Good, P. (2005). Permutation, Parametric and Bootstrap Tests of
Hypotheses, 3rd ed., sec. 3.
"""

from __future__ import annotations

import math
from typing import Literal

from recallbench.stats._wilcoxon import WILCOXON_EXACT, smallest_wilcoxon_pvalue

PairedTest = Literal["randomisation", "wilcoxon", "t"]
PAIRED_TESTS: tuple[PairedTest, ...] = ("randomisation", "wilcoxon", "t")
TEST_NAMES = {
    "randomisation": "paired randomisation test",
    "wilcoxon": "Wilcoxon signed-rank test",
    "t": "paired t-test",
}


def smallest_pvalue(test: PairedTest, nonzero: int, resamples: int | None = None) -> float:
    """The smallest two-sided p ``test`` can give with ``nonzero`` non-zero differences.

    ``resamples``: the randomisation test's random assignments when 2^m exceeds them
    (None: always exact).
    """
    if test == "t":
        return 0.0 if nonzero >= 2 else 1.0
    if test == "wilcoxon":
        return smallest_wilcoxon_pvalue(nonzero)
    if nonzero == 0:
        return 1.0
    if resamples is not None and (nonzero > 62 or 2**nonzero > resamples):
        return 1.0 / (resamples + 1)
    return min(1.0, 2.0 / 2.0**nonzero)


def queries_to_reach(alpha: float, test: PairedTest) -> int:
    """The fewest non-zero differences with which ``test`` can give ``p < alpha``.

    ``2 / 2^m < alpha`` gives ``m = floor(log2(2 / alpha)) + 1`` for the randomisation and
    exact Wilcoxon tests; 2 for the t-test.
    """
    if test == "t":
        return 2
    needed = math.floor(math.log2(2.0 / alpha)) + 1
    # above the exact range Wilcoxon's normal approximation has no floor
    return min(needed, WILCOXON_EXACT + 1) if test == "wilcoxon" else needed
