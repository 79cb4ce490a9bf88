"""Sample-ratio mismatch (SRM): are the observed assignment counts consistent with the split?

With ``k`` arms, planned shares ``p_j`` (normalised to sum to 1), observed counts ``o_j`` and
``N = sum o_j``, Pearson's goodness-of-fit statistic

    X^2 = sum_j (o_j - N p_j)^2 / (N p_j)   ~   chi^2 with k - 1 degrees of freedom under H0

(computed as ``scipy.stats.chisquare`` computes it, to the bit: the statistic summed by
numpy, its tail ``scipy.special.chdtrc``, without importing ``scipy.stats``, 0.6 s a
command; ``tests/test_srm.py``). A mismatch is flagged at ``p < 0.001``: the threshold commonly
used for SRM, strict because the check runs on every experiment and a flag invalidates the
experiment's results until its cause (assignment, logging, filtering, ...) is found.

Worked example (Kohavi, Tang & Xu 2020, ch. 21): 821,588 vs 815,482 users on a planned 50/50
split (ratio 0.5037) gives ``X^2 = 22.77``, ``p = 1.8e-6``: a mismatch.

References:
    Fabijan, A., Gupchup, J., Gupta, S., Omhover, J., Qin, W., Vermeer, L. & Dmitriev, P.
    (2019). Diagnosing sample ratio mismatch in online controlled experiments: a taxonomy and
    rules of thumb for practitioners. KDD 2019, 2156-2164.
    Kohavi, R., Tang, D. & Xu, Y. (2020). Trustworthy Online Controlled Experiments.
    Cambridge University Press. Chapter 21, sample ratio mismatch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from recallbench.core._errors import ConfigError
from recallbench.stats._sprt import is_int

SRM_THRESHOLD: Final = 0.001
"""Flag a sample-ratio mismatch when the chi-square p-value is below this."""


@dataclass(frozen=True, slots=True)
class SrmResult:
    """The SRM check: statistic, p-value, expected counts and the flag."""

    observed: tuple[int, ...]
    expected: tuple[float, ...]
    statistic: float
    pvalue: float
    threshold: float

    @property
    def mismatch(self) -> bool:
        """``pvalue < threshold``."""
        return self.pvalue < self.threshold


def sample_ratio_check(
    observed: Sequence[int] | Mapping[str, int],
    planned: Sequence[float] | Mapping[str, float] | None = None,
    *,
    threshold: float = SRM_THRESHOLD,
) -> SrmResult:
    """Chi-square goodness of fit of ``observed`` counts against the ``planned`` split.

    ``planned``: shares or weights per arm (e.g. ``(0.9, 0.1)`` or ``(9, 1)``), normalised;
    ``None`` means equal. Mappings are matched by arm name. With no observation at all the
    p-value is 1 (nothing to contradict the plan).
    """
    if isinstance(observed, Mapping):
        names = list(observed)
        counts = [observed[name] for name in names]
        if planned is not None:
            if not isinstance(planned, Mapping) or set(planned) != set(names):
                raise ConfigError("planned must be a mapping with the same arms as observed")
            weights = [float(planned[name]) for name in names]
        else:
            weights = [1.0] * len(names)
    else:
        counts = list(observed)
        if isinstance(planned, Mapping):
            raise ConfigError("planned must be a sequence when observed is a sequence")
        weights = [float(w) for w in planned] if planned is not None else [1.0] * len(counts)
    if len(counts) < 2:
        raise ConfigError(f"a sample-ratio check needs at least 2 arms, got {len(counts)}")
    if len(weights) != len(counts):
        raise ConfigError(f"planned has {len(weights)} arms, observed {len(counts)}")
    if any(not is_int(c) or c < 0 for c in counts):
        raise ConfigError(f"observed counts must be non-negative integers, got {counts}")
    if any(not (math.isfinite(w) and w > 0.0) for w in weights):
        raise ConfigError(f"planned shares must be positive numbers, got {weights}")
    if not 0.0 < threshold < 1.0:
        raise ConfigError(f"SRM threshold must be between 0 and 1, got {threshold}")
    total = sum(int(c) for c in counts)
    weight = sum(weights)
    expected = tuple(total * w / weight for w in weights)
    if total == 0:
        statistic, pvalue = 0.0, 1.0
    else:
        from scipy import special  # not scipy.stats: 0.6 s of a command's start

        found = np.asarray([int(c) for c in counts], dtype=np.float64)
        planned_counts = np.asarray(expected, dtype=np.float64)
        statistic = float(((found - planned_counts) ** 2 / planned_counts).sum())
        pvalue = float(special.chdtrc(len(counts) - 1, statistic))
    return SrmResult(
        observed=tuple(int(c) for c in counts),
        expected=expected,
        statistic=statistic,
        pvalue=pvalue,
        threshold=threshold,
    )
