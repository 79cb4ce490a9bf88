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

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from recallbench.stats._bounded_cs import BoundedCsSettings, bounded_cs_path

RATES = frozenset({"error_rate", "empty_rate"})


def _value(row: Mapping[str, Any], side: str, name: str) -> float | None:
    if name == "error_rate":
        return float(bool(row.get(f"{side}_error")))
    if row.get("control_error") or row.get("treatment_error"):
        return None  # both sides must have answered to compare what they answered
    if name == "empty_rate":
        return float(not row.get(f"{side}_results"))
    key = f"{side}_latency_ms" if name.startswith("latency") else f"{side}_tokens"
    value = row.get(key)
    return None if value is None else float(value)


def differences(
    rows: Sequence[Mapping[str, Any]], name: str, kind: str, margin: float
) -> list[float]:
    """The per-pair differences in [-1, 1] the guardrail's evidence is read from."""
    found: list[float] = []
    for row in rows:
        control, treatment = _value(row, "control", name), _value(row, "treatment", name)
        if control is None or treatment is None:
            continue
        if name in RATES:
            found.append(treatment - control)
        elif kind == "relative":
            found.append(
                float(treatment > control * (1 + margin))
                - float(control > treatment * (1 + margin))
            )
        else:
            found.append(float(treatment > control + margin) - float(control > treatment + margin))
    return found


def breach_evidence(
    rows: Sequence[Mapping[str, Any]],
    name: str,
    kind: str,
    margin: float,
    control_rate: float | None,
    alpha: float,
) -> tuple[bool, float | None]:
    """(whether the sequence shows the treatment worse beyond the margin at some point so
    far, the lower bound now) at level ``alpha``; (False, None) without pairs."""
    found = differences(rows, name, kind, margin)
    if not found:
        return False, None
    # empirical Bernstein: the same guarantee as betting, computed in O(n) (guardrails are
    # read at every check of every test)
    path = bounded_cs_path(
        np.array(found), BoundedCsSettings(alpha=alpha, method="empirical_bernstein")
    )
    lower = np.asarray(path.lower).reshape(-1)
    if name in RATES:
        threshold = margin if kind == "absolute" else (control_rate or 0.0) * margin
    else:
        threshold = 0.0
    return bool(np.any(lower > threshold)), float(lower[-1])
