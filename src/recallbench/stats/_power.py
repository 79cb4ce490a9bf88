"""Power of the paired comparison: queries needed for an effect, and the effect a set detects.

Both use the exact power of the two-sided paired t-test, from the noncentral t distribution:
with n queries, standard deviation sd of the per-query differences and true mean difference
delta, the statistic T = mean / (s / sqrt(n)) follows a noncentral t with n - 1 degrees of
freedom and noncentrality ``lambda = delta * sqrt(n) / sd``, so

    power = P(T > t_{1-alpha/2, n-1}) + P(T < -t_{1-alpha/2, n-1}).

Cohen, J. (1988). Statistical Power Analysis for the Behavioral Sciences, 2nd ed., ch. 2;
the normal approximation ``n = ((z_{1-alpha/2} + z_{power}) * sd / delta)^2`` is printed
alongside because many calculators give it; it is a little optimistic for small n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from recallbench.core._errors import ConfigError

MAX_QUERIES = 10_000_000


def _check(alpha: float, power: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"alpha must be between 0 and 1, got {alpha}")
    if not 0.0 < power < 1.0:
        raise ConfigError(f"power must be between 0 and 1, got {power}")


def t_test_power(
    n: int, delta: float, sd: float, alpha: float = 0.05, two_sided: bool = True
) -> float:
    """Exact power of the paired t-test with ``n`` pairs (formula in the module docstring)."""
    from scipy import stats

    if n < 2:
        return 0.0
    df = n - 1
    noncentrality = delta * math.sqrt(n) / sd
    if not two_sided:
        power = stats.nct.sf(stats.t.ppf(1 - alpha, df), df, noncentrality)
    else:
        critical = stats.t.ppf(1 - alpha / 2, df)
        power = stats.nct.sf(critical, df, noncentrality) + stats.nct.cdf(
            -critical, df, noncentrality
        )
    if not math.isfinite(power):  # scipy's nct fails far in the tail, where power is 1
        return 1.0
    return float(power)


@dataclass(frozen=True, slots=True)
class SampleSize:
    """The smallest number of queries that reaches the power, and what one fewer gives."""

    queries: int
    achieved_power: float
    power_with_one_fewer: float
    normal_approximation: int
    """``ceil(((z_{1-alpha/2} + z_power) * sd / delta)^2)``, for comparison."""


def sample_size(
    delta: float,
    sd: float,
    alpha: float = 0.05,
    power: float = 0.8,
    two_sided: bool = True,
) -> SampleSize:
    """Queries needed for the paired t-test to detect ``delta`` with the given power.

    >>> sample_size(0.05, 0.15).queries
    73
    """
    _check(alpha, power)
    if delta <= 0 or sd <= 0:
        raise ConfigError(f"delta and sd must be positive, got delta {delta}, sd {sd}")
    from scipy import stats

    z_alpha = stats.norm.ppf(1 - alpha / 2 if two_sided else 1 - alpha)
    approx = max(2, math.ceil(((z_alpha + stats.norm.ppf(power)) * sd / delta) ** 2))
    if approx > MAX_QUERIES:
        raise ConfigError(f"more than {MAX_QUERIES:,} queries needed; is delta {delta} too small?")
    n = approx
    while n > 2 and t_test_power(n - 1, delta, sd, alpha, two_sided) >= power:
        n -= 1
    while t_test_power(n, delta, sd, alpha, two_sided) < power:
        n += 1  # the t-test needs a few more than the normal approximation
    return SampleSize(
        queries=n,
        achieved_power=t_test_power(n, delta, sd, alpha, two_sided),
        power_with_one_fewer=t_test_power(n - 1, delta, sd, alpha, two_sided),
        normal_approximation=approx,
    )


def minimum_detectable_effect(
    n: int, sd: float, alpha: float = 0.05, power: float = 0.8, two_sided: bool = True
) -> float | None:
    """The mean difference the paired t-test detects with ``power`` at ``n`` queries.

    None when it cannot be computed (fewer than 2 queries); 0 when the differences do not
    vary (every query changed by the same amount, or not at all).
    """
    _check(alpha, power)
    if n < 2 or not math.isfinite(sd):
        return None
    if sd == 0:
        return 0.0
    from scipy import optimize

    def shortfall(delta: float) -> float:
        return t_test_power(n, delta, sd, alpha, two_sided) - power

    from scipy import stats

    z = stats.norm.ppf(1 - alpha / 2 if two_sided else 1 - alpha) + stats.norm.ppf(power)
    high = 1.5 * z * sd / math.sqrt(n)  # the normal approximation, with room to spare
    while shortfall(high) < 0:
        high *= 1.5
    return float(optimize.brentq(shortfall, 0.0, high, xtol=1e-12))
