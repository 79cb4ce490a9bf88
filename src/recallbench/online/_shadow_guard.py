"""Sequential evidence for a guardrail breach, so that checking guardrails after every pair
does not roll back an equal treatment by chance.

A guardrail compares the treatment's value ``T`` with the control's ``C`` over the same
pairs (``T <= C (1 + m)`` or ``T <= C + m``). Judged on the point estimates at every
check, equal sides breached a default guardrail in 0.72 of 2,000 simulated streams of
1,000 pairs (latency p95 0.19, error rate 0.35, empty rate 0.48): a peeking problem, as
with any test looked at again and again. So a breach also needs always-valid evidence that
the treatment is worse beyond the margin, from a confidence sequence for bounded paired
differences (:mod:`recallbench.stats._bounded_cs`, betting, Waudby-Smith & Ramdas 2023) at
level ``alpha / g`` for ``g`` guardrails (Bonferroni, so that all of them together roll
an equal treatment back with probability at most ``alpha``):

* rates (``error_rate``, ``empty_rate``), per pair ``d_i = t_i - c_i`` of the indicators
  (empty among the pairs where both sides answered): evidence when the sequence's lower
  bound exceeds the absolute margin ``m`` (a relative margin: ``C m``, with ``C`` the
  control's rate now);
* latencies and tokens (``latency_median``, ``latency_p95``, ``tokens_mean``), per pair
  ``d_i = 1[t_i > c_i (1 + m)] - 1[c_i > t_i (1 + m)]`` (``c_i + m`` / ``t_i + m`` for an
  absolute margin): evidence when the lower bound exceeds 0, i.e. the treatment is beyond
  the margin of its pair more often than the control is beyond the margin of its own. For
  exchangeable sides the mean is 0 whatever the distribution.

The point-estimate comparison stays: a guardrail is breached when both say so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from recallbench.stats._bounded_cs import BoundedCsSettings, bounded_cs_path

RATES = frozenset({"error_rate", "empty_rate"})
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class GuardColumns:
    """Per pair, in the pairs' order, what the guardrails read: each side's error flag,
    whether its list was empty, its latency and tokens (NaN where the row has none).
    Columns, so that a shadow test's progress can keep them and add pairs to them
    (:mod:`recallbench.online._shadow_progress`)."""

    control_error: BoolArray
    treatment_error: BoolArray
    control_empty: BoolArray
    treatment_empty: BoolArray
    control_latency: FloatArray
    treatment_latency: FloatArray
    control_tokens: FloatArray
    treatment_tokens: FloatArray

    @classmethod
    def of(cls, rows: Sequence[Mapping[str, Any]]) -> GuardColumns:
        def flags(key: str, empty: bool = False) -> BoolArray:
            return np.array(
                [(not row.get(key)) if empty else bool(row.get(key)) for row in rows], dtype=bool
            )

        def numbers(key: str) -> FloatArray:
            return np.array(
                [math.nan if row.get(key) is None else float(row[key]) for row in rows],
                dtype=np.float64,
            )

        return cls(
            flags("control_error"),
            flags("treatment_error"),
            flags("control_results", empty=True),
            flags("treatment_results", empty=True),
            numbers("control_latency_ms"),
            numbers("treatment_latency_ms"),
            numbers("control_tokens"),
            numbers("treatment_tokens"),
        )

    def __len__(self) -> int:
        return int(self.control_error.size)

    def extended(self, more: GuardColumns) -> GuardColumns:
        """These pairs followed by ``more``."""
        return GuardColumns(
            *(
                np.concatenate((getattr(self, name), getattr(more, name)))
                for name in self.__dataclass_fields__
            )
        )

    def side(self, side: str, name: str) -> FloatArray:
        """One side's values of the guardrail ``name`` (NaN: not measured)."""
        if name == "error_rate":
            return np.asarray(getattr(self, f"{side}_error"), dtype=np.float64)
        if name == "empty_rate":
            return np.asarray(getattr(self, f"{side}_empty"), dtype=np.float64)
        kind = "latency" if name.startswith("latency") else "tokens"
        values: FloatArray = getattr(self, f"{side}_{kind}")
        return values


def column_differences(columns: GuardColumns, name: str, kind: str, margin: float) -> FloatArray:
    """The per-pair differences in [-1, 1] the guardrail's evidence is read from, in the
    pairs' order (module docstring): every pair for the error rate; for the others the pairs
    where both sides answered and, for latencies and tokens, both were measured."""
    control, treatment = columns.side("control", name), columns.side("treatment", name)
    if name == "error_rate":
        return treatment - control
    both = ~columns.control_error & ~columns.treatment_error
    both &= ~np.isnan(control) & ~np.isnan(treatment)
    control, treatment = control[both], treatment[both]
    if name in RATES:
        return treatment - control
    if kind == "relative":
        worse = treatment > control * (1 + margin)
        better = control > treatment * (1 + margin)
    else:
        worse, better = treatment > control + margin, control > treatment + margin
    return worse.astype(np.float64) - better.astype(np.float64)


def differences(
    rows: Sequence[Mapping[str, Any]], name: str, kind: str, margin: float
) -> list[float]:
    """:func:`column_differences` of ``rows``."""
    found: list[float] = column_differences(GuardColumns.of(rows), name, kind, margin).tolist()
    return found


def breach_evidence(
    columns: GuardColumns,
    name: str,
    kind: str,
    margin: float,
    control_rate: float | None,
    alpha: float,
) -> tuple[bool, float | None]:
    """(whether the sequence shows the treatment worse beyond the margin at some point so
    far, the lower bound now) at level ``alpha``; (False, None) without pairs."""
    found = column_differences(columns, name, kind, margin)
    if not found.size:
        return False, None
    # empirical Bernstein: the same guarantee as betting, computed in O(n) (guardrails are
    # read at every check of every test)
    path = bounded_cs_path(found, BoundedCsSettings(alpha=alpha, method="empirical_bernstein"))
    lower = np.asarray(path.lower).reshape(-1)
    if name in RATES:
        threshold = margin if kind == "absolute" else (control_rate or 0.0) * margin
    else:
        threshold = 0.0
    return bool(np.any(lower > threshold)), float(lower[-1])
