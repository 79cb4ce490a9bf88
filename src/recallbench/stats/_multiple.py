"""Corrections for multiple comparisons: Holm-Bonferroni and Benjamini-Hochberg.

Comparing several systems on several measures makes many tests at once; at alpha 0.05 one in
twenty true nulls is "significant" by chance. The corrections adjust each p-value so that
comparing the adjusted value with alpha controls the error over the whole family.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from recallbench.core._errors import ConfigError

Correction = Literal["holm", "bh", "westfall-young", "none"]
CORRECTIONS: tuple[Correction, ...] = ("holm", "bh", "westfall-young", "none")
CORRECTION_NAMES = {
    "holm": "Holm-Bonferroni",
    "bh": "Benjamini-Hochberg",
    "westfall-young": "Westfall-Young max-T",
    "none": "no correction",
}


def holm(pvalues: Sequence[float] | NDArray[np.float64]) -> NDArray[np.float64]:
    """Holm's step-down adjusted p-values; controls the family-wise error rate.

    With p sorted ascending, p_(1) <= ... <= p_(m):
    ``adj_(i) = max_{j <= i} min(1, (m - j + 1) * p_(j))``, returned in the input order.

    Holm, S. (1979). A simple sequentially rejective multiple test procedure.
    Scandinavian Journal of Statistics 6(2), 65-70.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    m = p.size
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def benjamini_hochberg(pvalues: Sequence[float] | NDArray[np.float64]) -> NDArray[np.float64]:
    """Benjamini-Hochberg step-up adjusted p-values; controls the false discovery rate.

    With p sorted ascending: ``adj_(i) = min_{j >= i} min(1, m * p_(j) / j)``.

    Benjamini, Y. & Hochberg, Y. (1995). Controlling the false discovery rate: a practical
    and powerful approach to multiple testing. JRSS B 57(1), 289-300.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    m = p.size
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, m * p[order] / np.arange(1, m + 1))
    adjusted = np.empty(m)
    adjusted[order] = np.minimum.accumulate(scaled[::-1])[::-1]
    return adjusted


def adjust(pvalues: Sequence[float | None], method: Correction) -> list[float | None]:
    """Adjust the p-values that exist (None: no test was possible) as one family.

    Westfall-Young needs the resamples themselves (:func:`recallbench.stats._maxt.
    max_t_pvalues`); given only p-values (the t and Wilcoxon columns) it falls back to
    Holm, which controls the same family-wise error rate.
    """
    if method not in CORRECTIONS:
        raise ConfigError(f"unknown correction {method!r}; choose one of {', '.join(CORRECTIONS)}")
    present = [index for index, p in enumerate(pvalues) if p is not None]
    values = np.array([pvalues[index] for index in present], dtype=np.float64)
    if method in ("holm", "westfall-young"):
        values = holm(values)
    elif method == "bh":
        values = benjamini_hochberg(values)
    adjusted: list[float | None] = [None] * len(pvalues)
    for index, value in zip(present, values, strict=True):
        adjusted[index] = float(value)
    return adjusted
