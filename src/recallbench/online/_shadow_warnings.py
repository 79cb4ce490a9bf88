"""Warnings on a shadow test's decision: conditions seen in its data under which the options
the rule chose failed the validity suite (``benchmarks/shadow_validity.py``). They are
printed with the decision and change nothing in it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from recallbench.online._shadow_rule import GraduationRule


def validity_warnings(
    rule: GraduationRule, shared: bool, differences: Sequence[float]
) -> tuple[str, ...]:
    """What the data show that the chosen options are not valid under: several distinct
    queries in a session with query units (``shared``;
    correlated: 0.087 false positives in the validity suite), skewed differences under the
    mSPRT (0.082 at 100 pairs)."""
    found = []
    if rule.unit == "query" and shared:
        found.append(
            "several distinct queries share a session: with query units their "
            "correlation makes false decisions more likely (0.087 at alpha 0.05 in the "
            "validity suite); session units hold (--unit session)"
        )
    if rule.method == "msprt" and len(differences) >= 3:
        values = np.asarray(differences, dtype=float)
        spread = float(values.std())
        skew = float(np.mean((values - values.mean()) ** 3) / spread**3) if spread else 0.0
        if abs(skew) > 1:
            found.append(
                f"the differences are skewed (skewness {skew:+.1f}): the mSPRT's validity is "
                "asymptotic and failed on a skewed null (0.082 at 100 pairs); the default "
                "betting test holds"
            )
    return tuple(found)
