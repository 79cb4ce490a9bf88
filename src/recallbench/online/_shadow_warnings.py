"""Warnings on a shadow test's decision: conditions seen in its data under which the options
the rule chose failed the validity suite (``benchmarks/shadow_validity.py``). They are
printed with the decision and change nothing in it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from recallbench.online._shadow_rule import GraduationRule
from recallbench.online._shadow_score import PairScore


def validity_warnings(
    rule: GraduationRule,
    scores: Sequence[PairScore],
    keys: Mapping[str, str],
    differences: Sequence[float],
) -> tuple[str, ...]:
    """What the data show that the chosen options are not valid under: several distinct
    queries in a session with query units (correlated: 0.087 false positives in the
    validity suite), skewed differences under the mSPRT (0.082 at 100 pairs)."""
    found = []
    if rule.unit == "query":
        per_session: dict[str, set[str]] = {}
        for score in scores:
            if score.session_id:
                key = keys.get(score.query_id, score.query_id)
                per_session.setdefault(score.session_id, set()).add(key)
        if any(len(texts) > 1 for texts in per_session.values()):
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
