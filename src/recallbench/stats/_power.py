"""Power of the paired comparison: queries needed for an effect, and the effect a set detects.

Both use the exact power of the two-sided paired t-test, from the noncentral t distribution:
with n queries, standard deviation sd of the per-query differences and true mean difference
delta, the statistic T = mean / (s / sqrt(n)) follows a noncentral t with n - 1 degrees of
freedom and noncentrality ``lambda = delta * sqrt(n) / sd``, so

    power = P(T > t_{1-alpha/2, n-1}) + P(T < -t_{1-alpha/2, n-1}).

Cohen, J. (1988). Statistical Power Analysis for the Behavioral Sciences, 2nd ed., ch. 2;
the normal approximation ``n = ((z_{1-alpha/2} + z_{power}) * sd / delta)^2`` is printed
alongside because many calculators give it; it is a little optimistic for small n.

A family of m comparisons corrected together (Holm, Benjamini-Hochberg, Westfall-Young) is
planned at ``alpha / m``: each of those corrections rejects at least what Bonferroni rejects,
so the power of one comparison is at least the power at ``alpha / m`` (a conservative bound;
Dunn 1961). For a permutation test (randomisation, exact Wilcoxon) n is raised, where
needed, to the fewest queries with which its p-value can fall below the level at all
(:mod:`recallbench.stats._attainable`); beyond that floor the randomisation test's power
approaches the t-test's (Lehmann & Romano 2005, sec. 15.2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from recallbench.core._errors import ConfigError
from recallbench.stats._attainable import PairedTest, queries_to_reach

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
    test: PairedTest = "t"
    """The test the number is for."""
    level: float = 0.05
    """The level each comparison is tested at: alpha / comparisons."""
    t_test_queries: int = 0
    """What the t-test alone needs; less than ``queries`` when the test's floor raised it."""
    floor: int = 2
    """The fewest non-zero differences with which the test can reach ``level`` at all."""


def sample_size(
    delta: float,
    sd: float,
    alpha: float = 0.05,
    power: float = 0.8,
    two_sided: bool = True,
    test: PairedTest = "t",
    comparisons: int = 1,
) -> SampleSize:
    """Queries needed for ``test`` to detect ``delta`` with the given power.

    The t-test's exact power at ``alpha / comparisons``; for the randomisation and Wilcoxon
    tests, at least the fewest queries with which they can reach that level (module
    docstring).

    >>> sample_size(0.05, 0.15).queries
    73
    >>> sample_size(0.5, 0.1, test="randomisation").queries  # the t-test alone says 3
    6
    """
    _check(alpha, power)
    if comparisons < 1:
        raise ConfigError(f"comparisons must be at least 1, got {comparisons}")
    alpha = alpha / comparisons
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
    # one-sided, a permutation test's floor is 1 / 2^m: as two-sided at twice the level
    floor = queries_to_reach(alpha if two_sided else 2 * alpha, test)
    queries = max(n, floor)
    return SampleSize(
        queries=queries,
        achieved_power=t_test_power(queries, delta, sd, alpha, two_sided),
        power_with_one_fewer=t_test_power(queries - 1, delta, sd, alpha, two_sided),
        normal_approximation=approx,
        test=test,
        level=alpha,
        t_test_queries=n,
        floor=floor,
    )


def minimum_detectable_effect(
    n: int, sd: float, alpha: float = 0.05, power: float = 0.8, two_sided: bool = True
) -> float | None:
    """The mean difference the paired t-test detects with ``power`` at ``n`` queries.

    None when it cannot be computed: fewer than 2 queries, or differences that do not vary
    (sd 0: the t-test is undefined, not infinitely sensitive).
    """
    _check(alpha, power)
    if n < 2 or not math.isfinite(sd) or sd <= 0:
        return None
    from scipy import optimize

    def shortfall(delta: float) -> float:
        return t_test_power(n, delta, sd, alpha, two_sided) - power

    from scipy import stats

    z = stats.norm.ppf(1 - alpha / 2 if two_sided else 1 - alpha) + stats.norm.ppf(power)
    high = 1.5 * z * sd / math.sqrt(n)  # the normal approximation, with room to spare
    while shortfall(high) < 0:
        high *= 1.5
    return float(optimize.brentq(shortfall, 0.0, high, xtol=1e-12))
