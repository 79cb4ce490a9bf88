"""What a shadow test's rule decides now, with its evidence (:class:`Decision`): the
verdict and its reason, the sequential test's state and estimates, each guardrail and
sample-ratio check (:mod:`recallbench.online._shadow_checks`), the secondary measures and
the interleaving summary (:mod:`recallbench.online._shadow_secondary`), and the warnings
(:mod:`recallbench.online._shadow_warnings`). :meth:`Decision.to_dict` is its JSON: what
``shadow status --format json`` prints and the store logs with a decision taken.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

from recallbench.online._shadow_rule import Method

Verdict = Literal["graduate", "rollback", "continue"]


@dataclass(frozen=True, slots=True)
class GuardrailResult:
    """One guardrail now: both sides' values, the limit, and whether it holds (None when a
    side did not measure it)."""

    name: str
    control: float | None
    treatment: float | None
    margin: str
    limit: float | None
    passed: bool | None
    evidence: bool = False
    """Whether the always-valid paired sequence shows the treatment worse beyond the margin
    (a breach needs it as well as the values beyond the limit)."""


@dataclass(frozen=True, slots=True)
class SrmCheck:
    """One sample-ratio check: arms, counts, planned shares, p-value, flag."""

    name: str
    arms: tuple[str, ...]
    observed: tuple[int, ...]
    planned: tuple[float, ...]
    pvalue: float
    mismatch: bool


@dataclass(frozen=True, slots=True)
class Secondary:
    """A paired measure other than the primary: pairs measured and mean difference."""

    n: int
    mean: float | None


@dataclass(frozen=True, slots=True)
class Decision:
    """What the rule decides now, with its evidence."""

    decision: Verdict
    reason: str
    measure: str
    method: Method
    pairs: int
    measured: int
    """Pairs with a value of the primary measure."""
    unit: str
    """What one observation is: a distinct query text or a session."""
    units: int
    """Units with a value: the observations (one per unit, its first value)."""
    repeats: int
    """Measured pairs of a unit already observed, left out."""
    not_interleaved: int
    """Pairs with clicks a click measure could not use: the agent saw the control only."""
    n: int
    """Observations the sequential test used: all of them, or those up to the one at which
    it decided (later ones change nothing)."""
    mean: float | None
    """Mean of the ``n`` differences used."""
    estimate: float | None
    """The sequence's estimate of the mean difference, always inside ``interval`` (the
    confidence sequence's centre; for the mSPRT the mean clipped into its running
    interval); the mean where there is no interval (SPRT)."""
    pvalue: float | None
    """Always-valid p-value; None for the SPRT."""
    interval: tuple[float, float] | None
    """Always-valid ``1 - alpha`` interval of the mean difference; None for the SPRT."""
    assumption: str
    """What the sequential test's validity rests on."""
    llr: float | None
    """The SPRT's log-likelihood ratio; None for the mSPRT."""
    sequential: str
    """The sequential test's own state: continue, accept_treatment, accept_control,
    inconclusive."""
    guardrails: tuple[GuardrailResult, ...]
    sides: dict[str, dict[str, Any]]
    srm: tuple[SrmCheck, ...]
    secondary: dict[str, Secondary]
    interleaving: dict[str, Any] | None
    rule: dict[str, Any]
    warnings: tuple[str, ...] = ()
    """Conditions seen in the data under which the chosen options failed the validity
    suite (``benchmarks/shadow_validity.py``)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready evidence (infinite bounds as None)."""
        data = asdict(self)
        if self.interval is not None:
            data["interval"] = [None if math.isinf(x) else x for x in self.interval]
        return data
