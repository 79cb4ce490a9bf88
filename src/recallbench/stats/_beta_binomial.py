"""Bayesian Beta-Binomial comparison of a binary measure (hit@k) between two systems.

Independent posteriors ``Beta(a + s, b + n - s)`` per arm (prior ``Beta(a, b)``, ``s`` hits in
``n`` queries) and the exact posterior probability ``P(p_T > p_C)`` (Miller 2014), with a
threshold rule on it for sequential use.

References:
    Miller, E. (2014). Formulas for Bayesian A/B testing.
    https://www.evanmiller.org/bayesian-ab-testing.html
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from recallbench.core._errors import ConfigError
from recallbench.stats._sprt import Decision, is_int

DEFAULT_BETA_MIN_SAMPLES: Final = 50
"""Trials per arm before the Beta-Binomial rule may decide (a guard, not a calibration)."""


_MAX_TERMS: Final = 10_000
"""The closed-form sum is used up to this many terms (about 1 ms)..."""

_MAX_SUM_PARAMETER: Final = 20_000.0
"""... and while no posterior parameter exceeds this: the log-Beta values of the sum then are
below ~10^5 in size and their rounding stays below ~2e-11 in the result (it is ~3e-10 at
10^5 and grows with the parameters)."""

_TAILS: Final = np.array([1e-15, 1e-9, 1e-5, 1e-3, 0.02, 0.1, 0.3])
"""Integration breakpoints (probabilities): pieces between them have a smooth integrand."""


def probability_better(
    successes_treatment: int,
    trials_treatment: int,
    successes_control: int,
    trials_control: int,
    prior: tuple[float, float] = (1.0, 1.0),
) -> float:
    """``P(p_T > p_C)`` for independent posteriors ``p ~ Beta(a + s, b + n - s)``.

    With the posteriors ``Beta(alpha_T, beta_T)``, ``Beta(alpha_C, beta_C)`` and an integer
    ``alpha_T``, Miller (2014) gives the closed form

        P = sum_{i=0}^{alpha_T - 1} B(alpha_C + i, beta_C + beta_T)
                                    / ((beta_T + i) B(1 + i, beta_T) B(alpha_C, beta_C)),

    summed here in log space (``scipy.special.betaln``, ``logsumexp``): every term is positive,
    so nothing cancels. By the symmetries ``p -> 1 - p`` and ``P(T > C) = 1 - P(C > T)`` (ties
    have probability 0) any one integer posterior parameter will do; the smallest is used.

    Otherwise (no integer parameter, as with Jeffreys' prior ``(0.5, 0.5)``; more than 10,000
    terms; or parameters above 20,000, where the rounding of the log-Beta values reaches
    1e-10) the integral ``P = int_0^1 pdf_T(x) cdf_C(x) dx`` is computed by adaptive
    quadrature in the probability scale of the treatment posterior (see
    :func:`_probability_by_integration`), 1-4 ms at any count. Checked against 40-digit
    arithmetic: the sum is within ~2e-11, the integral within ~2e-14, for counts up to 10^6.
    Why not integrate always: the sum is 10-100 times faster for the counts of a typical test,
    and :class:`BetaBinomialState` may be asked after every query.
    """
    counts = (successes_treatment, trials_treatment, successes_control, trials_control)
    _check_counts(*counts)
    a, b = _check_prior(prior)
    return _probability_better(
        a + successes_treatment,
        b + trials_treatment - successes_treatment,
        a + successes_control,
        b + trials_control - successes_control,
    )


def _probability_better(alpha_t: float, beta_t: float, alpha_c: float, beta_c: float) -> float:
    if max(alpha_t, beta_t, alpha_c, beta_c) > _MAX_SUM_PARAMETER:
        return _probability_by_integration(alpha_t, beta_t, alpha_c, beta_c)
    # (terms, complement, arguments of _miller_sum: the parameters of the "B" Beta first)
    options = [
        (alpha_t, False, (alpha_t, beta_t, alpha_c, beta_c)),
        (beta_c, False, (beta_c, alpha_c, beta_t, alpha_t)),  # P(1 - p_C > 1 - p_T)
        (alpha_c, True, (alpha_c, beta_c, alpha_t, beta_t)),
        (beta_t, True, (beta_t, alpha_t, beta_c, alpha_c)),
    ]
    usable = [o for o in options if float(o[0]).is_integer() and o[0] <= _MAX_TERMS]
    if not usable:
        return _probability_by_integration(alpha_t, beta_t, alpha_c, beta_c)
    _, complement, arguments = min(usable, key=lambda o: (o[0], o[1]))
    value = _miller_sum(*arguments)
    return 1.0 - value if complement else value


def _miller_sum(alpha_b: float, beta_b: float, alpha_a: float, beta_a: float) -> float:
    """``P(X_B > X_A)`` for an integer ``alpha_b`` (Miller 2014), in log space."""
    from scipy import special

    i = np.arange(int(alpha_b), dtype=np.float64)
    log_terms = (
        special.betaln(alpha_a + i, beta_a + beta_b)
        - np.log(beta_b + i)
        - special.betaln(1.0 + i, beta_b)
        - special.betaln(alpha_a, beta_a)
    )
    return min(1.0, max(0.0, float(np.exp(special.logsumexp(log_terms)))))


def _probability_by_integration(
    alpha_t: float, beta_t: float, alpha_c: float, beta_c: float
) -> float:
    """``int_0^1 pdf_T(x) cdf_C(x) dx``, substituting ``x = F_T^-1(u)``.

    In ``u`` the integrand ``cdf_C(F_T^-1(u))`` is bounded by 0 and 1 and has no
    singularities, unlike ``pdf_T`` (a Jeffreys posterior's density is infinite at 0 and 1,
    where adaptive quadrature in ``x`` misjudged its own error by 1e-9). The lower half,
    ``u < 1/2``, is integrated as it is; the upper half through ``y = 1 - x``, whose own
    quantiles ``v = 1 - u`` and ``cdf_C(1 - y) = 1 - I_y(beta_C, alpha_C)`` stay exact where
    ``x`` would be within 1e-16 of 1. Breakpoints at tail probabilities of both posteriors
    split each half into pieces on which the integrand is smooth, however concentrated (or far
    apart) the posteriors are.
    """
    from scipy import special

    lower = _half_integral(alpha_t, beta_t, alpha_c, beta_c, special.betainc)
    upper = _half_integral(beta_t, alpha_t, beta_c, alpha_c, special.betaincc)
    return min(1.0, max(0.0, lower + upper))


def _half_integral(
    p: float, q: float, r: float, s: float, cdf: Callable[[float, float, float], float]
) -> float:
    """``int_0^(1/2) cdf(r, s, F^-1(u)) du`` with ``F`` the cdf of ``Beta(p, q)``."""
    from scipy import integrate, special

    def integrand(u: float) -> float:
        return float(cdf(r, s, special.betaincinv(p, q, u)))

    control = np.concatenate((special.betaincinv(r, s, _TAILS), special.betainccinv(r, s, _TAILS)))
    points = np.concatenate((_TAILS, special.betainc(p, q, control)))
    edges = np.unique(np.concatenate(([0.0, 0.5], points[(points > 0.0) & (points < 0.5)])))
    total = 0.0
    for low, high in itertools.pairwise(edges):
        piece, _ = integrate.quad(
            integrand, float(low), float(high), epsabs=1e-15, epsrel=1e-12, limit=200
        )
        total += piece
    return total


def _check_counts(s_t: int, n_t: int, s_c: int, n_c: int) -> None:
    for name, successes, trials in (("treatment", s_t, n_t), ("control", s_c, n_c)):
        if not (is_int(successes) and is_int(trials)):
            raise ConfigError(
                f"{name} successes and trials must be integers, got {successes!r}, {trials!r}"
            )
        if not 0 <= successes <= trials:
            raise ConfigError(f"{name} needs 0 <= successes <= trials, got {successes} of {trials}")


def _check_prior(prior: tuple[float, float]) -> tuple[float, float]:
    try:
        a, b = (float(value) for value in prior)
    except (TypeError, ValueError):
        raise ConfigError(f"prior must be two positive numbers (a, b), got {prior!r}") from None
    if not (math.isfinite(a) and math.isfinite(b) and a > 0.0 and b > 0.0):
        raise ConfigError(f"prior must be two positive numbers (a, b), got {prior!r}")
    return a, b


@dataclass(frozen=True, slots=True)
class BetaBinomialState:
    """Hits and trials per arm for a binary measure (hit@k), with a shared Beta prior.

    :meth:`probability` is :func:`probability_better`; :meth:`decision` accepts the treatment
    when ``P(p_T > p_C) > threshold``, the control when ``P < 1 - threshold``, and continues
    otherwise or while an arm has fewer than ``min_samples`` trials.

    This is a Bayesian rule: it reports what the posterior says now and does not control the
    frequentist type I error under continuous monitoring. Checking after every query (from 50
    trials per arm, threshold 0.95), two identical systems with hit rate 0.3 or 0.6 had the
    treatment accepted within 2,000 queries in about 32% of simulated streams, not 5%; use
    the SPRT on the 0/1 differences when an error-rate guarantee is needed.
    """

    successes_treatment: int = 0
    trials_treatment: int = 0
    successes_control: int = 0
    trials_control: int = 0
    prior: tuple[float, float] = (1.0, 1.0)

    def __post_init__(self) -> None:
        _check_counts(
            self.successes_treatment,
            self.trials_treatment,
            self.successes_control,
            self.trials_control,
        )
        _check_prior(self.prior)

    def update(self, treatment_hit: bool | int, control_hit: bool | int) -> BetaBinomialState:
        """The state after one more query on each arm (a hit is ``True`` / ``1``)."""
        hit_t, hit_c = _hit(treatment_hit, "treatment_hit"), _hit(control_hit, "control_hit")
        return BetaBinomialState(
            self.successes_treatment + hit_t,
            self.trials_treatment + 1,
            self.successes_control + hit_c,
            self.trials_control + 1,
            self.prior,
        )

    def probability(self) -> float:
        """``P(p_T > p_C)`` under the posteriors."""
        return probability_better(
            self.successes_treatment,
            self.trials_treatment,
            self.successes_control,
            self.trials_control,
            self.prior,
        )

    def decision(
        self, threshold: float = 0.95, min_samples: int = DEFAULT_BETA_MIN_SAMPLES
    ) -> Decision:
        """``"accept_treatment"`` if ``P > threshold``, ``"accept_control"`` if
        ``P < 1 - threshold``, else ``"continue"``."""
        if not 0.5 < threshold < 1.0:
            raise ConfigError(f"threshold must be between 0.5 and 1, got {threshold}")
        if not is_int(min_samples) or min_samples < 0:
            raise ConfigError(f"min_samples must be a non-negative integer, got {min_samples}")
        if min(self.trials_treatment, self.trials_control) < min_samples:
            return "continue"
        probability = self.probability()
        if probability > threshold:
            return "accept_treatment"
        if probability < 1.0 - threshold:
            return "accept_control"
        return "continue"

    def to_dict(self) -> dict[str, int | list[float]]:
        """JSON-ready form."""
        return {
            "successes_treatment": self.successes_treatment,
            "trials_treatment": self.trials_treatment,
            "successes_control": self.successes_control,
            "trials_control": self.trials_control,
            "prior": list(self.prior),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BetaBinomialState:
        """Inverse of :meth:`to_dict`."""
        try:
            prior = data.get("prior", (1.0, 1.0))
            return cls(
                data["successes_treatment"],
                data["trials_treatment"],
                data["successes_control"],
                data["trials_control"],
                (float(prior[0]), float(prior[1])),
            )
        except (KeyError, IndexError, TypeError, ValueError) as error:
            raise ConfigError(f"bad Beta-Binomial state: {error!r}") from None


def _hit(value: bool | int, name: str) -> int:
    if isinstance(value, bool | np.bool_):
        return int(value)
    if is_int(value) and value in (0, 1):
        return int(value)
    raise ConfigError(f"{name} must be a bool or 0/1, got {value!r}")
