"""Sequential decisions on a shadow test: graduate the treatment, roll it back, or continue,
by a rule fixed when the test starts and evaluated on the stored pairs.

The rule (:class:`GraduationRule`, stored as JSON with the test) names:

* the **primary paired measure** (``rr``, ``hit@k``, ``ndcg@k`` or ``interleaving``, see
  :mod:`recallbench.online._shadow_score`), the **unit** of its observations (a distinct
  query text or a session, :mod:`recallbench.online._shadow_units`), and the **sequential
  test** on the units' differences ``d_i = treatment_i - control_i`` in the order the units
  were first measured:

  - ``betting`` (default): the hedged betting confidence sequence of Waudby-Smith & Ramdas
    (2023) for the mean of differences bounded in [-1, 1] (every measure here is),
    :mod:`recallbench.stats._bounded_cs`: valid at every sample size under optional
    stopping, with no assumption on the distribution (Ville's inequality on a
    nonnegative supermartingale). The treatment is accepted when the sequence leaves 0
    from above, the control when from below; its p-value is the running minimum of the
    inverse capital at 0, its estimate the sequence's centre, always inside its interval.
    ``empirical_bernstein``: their predictable plug-in empirical-Bernstein sequence, the
    same guarantee, slower to decide.
  - ``msprt``: the mixture SPRT of Johari, Koomen, Pekelis & Walsh (2017),
    :mod:`recallbench.stats._msprt`. With ``n`` differences of mean ``dbar_n`` and
    variance ``sigma^2`` (plug-in unless given), ``Lambda_n = sqrt(sigma^2 / (sigma^2 + n
    tau^2)) exp(n^2 tau^2 dbar_n^2 / (2 sigma^2 (sigma^2 + n tau^2)))``, the always-valid
    p-value ``p_n = min(p_{n-1}, 1 / Lambda_n)`` and the always-valid interval; checking
    after every query keeps ``P(p_T <= alpha) <= alpha`` at any stopping time ``T``
    (Ville's inequality). The treatment is accepted when ``p_n <= alpha`` with the interval
    above 0, the control when below.
  - ``sprt``: Wald's paired SPRT (:mod:`recallbench.stats._sprt`), ``H0: mu = 0`` against
    ``H1: mu = effect``, boundaries ``ln((1 - beta) / alpha)`` and ``ln(beta / (1 -
    alpha))``; no p-value or interval.

  ``min_queries`` units are needed before any test may decide (the bounded sequences need
  none for validity: their decision is held back, never changed; with the plug-in
  variance the mSPRT's type I error is only asymptotic, 0.38 / 0.26 / 0.068 at 20 / 30 /
  100 pairs on a skewed null, which its result states); ``max_queries``, when set, ends an
  undecided test.
* **Guardrails** with non-inferiority margins: for each (latency median or p95, error rate,
  empty-result rate, mean tokens; higher is worse) the treatment's value ``T`` against the
  control's ``C`` over the same pairs must satisfy ``T <= C (1 + m)`` (relative margin) or
  ``T <= C + m`` (absolute margin, e.g. 0.01 = one point of error rate). They are judged
  on the estimates at the moment of the decision, once ``min_queries`` are in; a guardrail
  a side did not measure (no latency logged) does not block.
* The **sample-ratio check** (SRM, Fabijan et al. 2019; :mod:`recallbench.stats._srm`):
  Pearson's ``X^2 = sum_j (o_j - N p_j)^2 / (N p_j)`` against the planned split, flagged at
  ``p < srm_threshold`` (0.001). Two splits are checked when they apply: which team placed
  the first document of each interleaved list (a fair coin: 1 : 1), and, when the rule
  names the proxy's ``sample_percent`` below 100, the distinct query texts logged in the
  test's window that were mirrored against those that were not (``p : 100 - p``; texts,
  not searches, because the proxy samples by a hash of the text, so the repeats of a text
  are all in or all out and only distinct texts are independent draws). A mismatch means
  the pairs are not the sample the test assumes: the rule then never graduates (it
  continues, flagged).

Pairs are read up to ``settle_seconds`` (300) before now: the feedback on a search (reads,
validations) comes after it, and a pair whose value appeared later would enter the middle
of the sequence already tested, which the always-valid guarantee (one fixed order of
observations) does not cover. Guardrails read the same pairs.

Only the sequential test can graduate; guardrails and the sample-ratio check can only hold
a graduation back or roll back. And the sequential test's decision is the one at its first
boundary crossing, which later pairs do not change. So checking the rule after every pair
graduates a treatment that is no better at most as often as the test crosses its upper
boundary under the null: at most ``alpha`` for the mSPRT (Ville's inequality; asymptotically
with the plug-in variance).

The decision, in order: fewer than ``min_queries`` differences → continue; an SRM mismatch
→ continue; a guardrail breached → rollback; the sequential test accepted the treatment →
graduate, the control → rollback; ``max_queries`` reached undecided → rollback (no gain
shown); else continue.

References:
    Waudby-Smith, I. & Ramdas, A. (2023). Estimating means of bounded random variables by
    betting. JRSS-B 86(1), 1-27. The default test.
    Johari, R., Koomen, P., Pekelis, L. & Walsh, D. (2017). Peeking at A/B tests: why it
    matters, and what to do about it. KDD 2017, 1517-1525. The mSPRT and always-valid
    p-values and intervals.
    Wald, A. (1945). Sequential tests of statistical hypotheses. Ann. Math. Statist. 16(2).
    Fabijan, A., Gupchup, J., Gupta, S., Omhover, J., Qin, W., Vermeer, L. & Dmitriev, P.
    (2019). Diagnosing sample ratio mismatch in online controlled experiments. KDD 2019.
    Radlinski, F., Kurup, M. & Joachims, T. (2008); Chapelle, O., Joachims, T., Radlinski, F.
    & Yue, Y. (2012): team-draft interleaving and its credit (the ``interleaving`` measure).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np

from recallbench.core._errors import ConfigError
from recallbench.core._query_key import query_key
from recallbench.online._shadow_guard import breach_evidence
from recallbench.online._shadow_score import (
    GUARDRAIL_NAMES,
    PairScore,
    Side,
    SideGuardrails,
    guardrails,
    parse_measure,
    score_test,
    unequal_length_share,
    window_end,
)
from recallbench.online._shadow_units import (
    CLICK_MEASURES,
    EXPOSURE_HELP,
    UNITS,
    Observations,
    Unit,
    observations,
)
from recallbench.stats._bounded_cs import BoundedCsSettings
from recallbench.stats._bounded_stream import BoundedCS
from recallbench.stats._interleaving import summarise
from recallbench.stats._msprt import DEFAULT_TAU, MixtureSPRT, MsprtSettings
from recallbench.stats._sprt import PairedSPRT, SprtSettings
from recallbench.stats._srm import SRM_THRESHOLD, sample_ratio_check

if TYPE_CHECKING:
    from recallbench.store import ShadowTest, Store

Verdict = Literal["graduate", "rollback", "continue"]
Method = Literal["betting", "empirical_bernstein", "msprt", "sprt"]
METHODS: Final[tuple[Method, ...]] = ("betting", "empirical_bernstein", "msprt", "sprt")
ASSUMPTIONS: Final[dict[str, str]] = {
    "betting": "none: valid at every n for any differences in [-1, 1] (bounded measures)",
    "empirical_bernstein": "none: valid at every n for any differences in [-1, 1]",
    "msprt": "approximately normal differences and a large n (plug-in variance): the "
    "type I error is only asymptotic (0.38 at 20 pairs on a skewed null)",
    "sprt": "normal differences of the stated effect and variance",
}
"""What each sequential test assumes, printed with its result."""
MarginKind = Literal["relative", "absolute"]

DEFAULT_MIN_QUERIES: Final = 100
DEFAULT_SETTLE_SECONDS: Final = 300.0
"""Pairs younger than this are left out of a decision: their feedback may still come."""
DEFAULT_GUARDRAILS: Final[dict[str, dict[str, Any]]] = {
    "latency_p95": {"kind": "relative", "margin": 0.20},
    "error_rate": {"kind": "absolute", "margin": 0.01},
    "empty_rate": {"kind": "absolute", "margin": 0.02},
}
"""Latency p95 not worse than +20%, error rate not worse than +1 point, empty results not
more than +2 points."""
_GUARDRAIL = re.compile(r"^\s*(\w+)\s*[:=]\s*\+?\s*(\d+(?:\.\d*)?|\.\d+)\s*(%|pt|pts)?\s*$")


@dataclass(frozen=True, slots=True)
class Margin:
    """A guardrail's non-inferiority margin: ``T <= C (1 + margin)`` (relative) or
    ``T <= C + margin`` (absolute)."""

    kind: MarginKind
    margin: float

    def limit(self, control: float) -> float:
        """The worst treatment value allowed against the control's ``control``."""
        return control * (1 + self.margin) if self.kind == "relative" else control + self.margin

    def describe(self) -> str:
        if self.kind == "relative":
            return f"+{self.margin * 100:g}%"
        return f"+{self.margin:g}"


def parse_guardrail(text: str) -> tuple[str, Margin]:
    """``NAME:+20%`` (relative), ``NAME:+0.01`` or ``NAME:+1pt`` (absolute; one point is
    0.01 of a rate), ``NAME=...`` also accepted. ConfigError naming the text otherwise."""
    found = _GUARDRAIL.match(text)
    if found is None:
        raise ConfigError(
            f"--guardrail {text!r}: expected NAME:+P% (relative) or NAME:+X / NAME:+Npt "
            f"(absolute), NAME one of {', '.join(GUARDRAIL_NAMES)}"
        )
    name, number, unit = found.group(1), float(found.group(2)), found.group(3)
    if name not in GUARDRAIL_NAMES:
        raise ConfigError(
            f"--guardrail {text!r}: unknown guardrail {name!r}, one of {', '.join(GUARDRAIL_NAMES)}"
        )
    if unit == "%":
        return name, Margin("relative", number / 100)
    return name, Margin("absolute", number / 100 if unit in ("pt", "pts") else number)


@dataclass(frozen=True, slots=True)
class GraduationRule:
    """The rule a shadow test is decided by (module docstring); stored with the test."""

    measure: str = "interleaving"
    method: Method = "betting"
    alpha: float = 0.05
    min_queries: int = DEFAULT_MIN_QUERIES
    max_queries: int | None = None
    tau: float = DEFAULT_TAU
    sigma: float | None = None
    effect: float = 0.05
    beta: float = 0.20
    guardrails: dict[str, Margin] = field(
        default_factory=lambda: {
            name: Margin(spec["kind"], spec["margin"]) for name, spec in DEFAULT_GUARDRAILS.items()
        }
    )
    srm_threshold: float = SRM_THRESHOLD
    sample_percent: float | None = None
    settle_seconds: float = DEFAULT_SETTLE_SECONDS
    flag: str | None = None
    """The feature flag the test rolls out (``graduate`` sets it); None: the test's name."""
    unit: Unit = "session"
    """One observation per session (the default: searches of one session are correlated,
    which made query units reject an equal treatment 0.087 of the time in simulation) or
    per distinct query text (:mod:`._shadow_units`)."""
    interleaved: bool | None = None
    """Whether the proxy shows the agent both lists interleaved (``--interleave``); None:
    not stated (a test started before the design was recorded)."""

    def __post_init__(self) -> None:
        base = parse_measure(self.measure)[0]
        if self.unit not in UNITS:
            raise ConfigError(f"rule.unit: {self.unit!r} is not one of {', '.join(UNITS)}")
        if self.interleaved is False and (base in CLICK_MEASURES or base == "interleaving"):
            reason = (
                "the team-draft credit exists only for interleaved searches"
                if base == "interleaving"
                else EXPOSURE_HELP.format(measure=base)
            )
            raise ConfigError(f"measure {self.measure!r} without interleaving is refused: {reason}")
        if self.method not in METHODS:
            raise ConfigError(f"rule.method: {self.method!r} is not one of {', '.join(METHODS)}")
        _check(0 < self.alpha < 1, "alpha", self.alpha, "in (0, 1)")
        _check(
            _is_int(self.min_queries) and self.min_queries >= 2,
            "min_queries",
            self.min_queries,
            "an integer >= 2",
        )
        if self.max_queries is not None:
            _check(
                _is_int(self.max_queries) and self.max_queries >= self.min_queries,
                "max_queries",
                self.max_queries,
                f"an integer >= min_queries ({self.min_queries})",
            )
        _check(math.isfinite(self.tau) and self.tau > 0, "tau", self.tau, "a positive number")
        if self.sigma is not None:
            _check(
                math.isfinite(self.sigma) and self.sigma > 0,
                "sigma",
                self.sigma,
                "a positive number",
            )
        _check(
            math.isfinite(self.effect) and self.effect > 0,
            "effect",
            self.effect,
            "a positive number",
        )
        _check(
            0 < self.beta < 1 and self.alpha + self.beta < 1, "beta", self.beta, "in (0, 1 - alpha)"
        )
        for name, margin in self.guardrails.items():
            if name not in GUARDRAIL_NAMES:
                raise ConfigError(
                    f"rule.guardrails: unknown guardrail {name!r}, "
                    f"one of {', '.join(GUARDRAIL_NAMES)}"
                )
            if margin.kind not in ("relative", "absolute") or not (
                math.isfinite(margin.margin) and margin.margin >= 0
            ):
                raise ConfigError(f"rule.guardrails.{name}: {margin} is not a margin >= 0")
        _check(
            math.isfinite(self.settle_seconds) and self.settle_seconds >= 0,
            "settle_seconds",
            self.settle_seconds,
            "a number >= 0",
        )
        if self.flag is not None:
            _check(
                isinstance(self.flag, str) and bool(self.flag.strip()), "flag", self.flag, "a name"
            )
        _check(0 < self.srm_threshold < 1, "srm_threshold", self.srm_threshold, "in (0, 1)")
        if self.sample_percent is not None:
            _check(
                0 < self.sample_percent <= 100, "sample_percent", self.sample_percent, "in (0, 100]"
            )

    def to_dict(self) -> dict[str, Any]:
        """The rule as JSON-ready data (what the store keeps)."""
        data = asdict(self)
        data["guardrails"] = {name: asdict(margin) for name, margin in self.guardrails.items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GraduationRule:
        """The rule from :meth:`to_dict`'s data; ConfigError, located, for bad data."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"rule: unknown keys {unknown}")
        values = dict(data)
        if "guardrails" in values:
            values["guardrails"] = margins(values["guardrails"])
        try:
            return cls(**values)
        except TypeError as error:
            raise ConfigError(f"rule: {error}") from None

    @classmethod
    def of_test(cls, test: ShadowTest) -> GraduationRule:
        """The rule a stored test was started with (its columns win over the JSON)."""
        data = {**test.rule, "measure": test.measure, "alpha": test.alpha}
        data["guardrails"] = test.guardrails
        return cls.from_dict(data)


def margins(data: Mapping[str, Any]) -> dict[str, Margin]:
    """Guardrail margins from JSON data ``{name: {"kind": ..., "margin": ...}}``."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"rule.guardrails: expected an object, got {data!r}")
    found = {}
    for name, spec in data.items():
        if not isinstance(spec, Mapping) or set(spec) != {"kind", "margin"}:
            raise ConfigError(f"rule.guardrails.{name}: expected {{kind, margin}}, got {spec!r}")
        margin = spec["margin"]
        if isinstance(margin, bool) or not isinstance(margin, (int, float)):
            raise ConfigError(f"rule.guardrails.{name}.margin: expected a number, got {margin!r}")
        found[str(name)] = Margin(spec["kind"], float(margin))
    return found


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


def decide(
    rule: GraduationRule,
    rows: Sequence[Mapping[str, Any]],
    scores: Sequence[PairScore],
    sampled: tuple[int, int] | None = None,
    keys: Mapping[str, str] | None = None,
) -> Decision:
    """The rule's decision on the pairs ``rows`` and their ``scores`` (same order, oldest
    first); ``sampled``: distinct query texts of the test's window that were mirrored and
    that were not, for the sampling SRM; ``keys``: query id -> key of its logged text, the
    query unit (:mod:`._shadow_units`; a query without one is a unit of its own)."""
    if len(rows) != len(scores):
        raise ConfigError(f"decide: {len(rows)} rows but {len(scores)} scores")
    observed = observations(scores, rule.measure, keys or {}, rule.unit)
    differences = list(observed.values)
    pvalue: float | None = None
    interval: tuple[float, float] | None = None
    llr: float | None = None
    if rule.method in ("betting", "empirical_bernstein"):
        bounded = BoundedCS(
            BoundedCsSettings(
                alpha=rule.alpha,
                method="betting" if rule.method == "betting" else "empirical_bernstein",
                max_samples=rule.max_queries,
            )
        )
        sequential = bounded.update(differences) if differences else "continue"
        pvalue, interval, n = bounded.pvalue, bounded.interval, bounded.n
        estimate: float | None = bounded.estimate if n else None
    elif rule.method == "msprt":
        floor = 1 if rule.sigma is not None else 2
        test = MixtureSPRT(
            MsprtSettings(
                alpha=rule.alpha,
                tau=rule.tau,
                sigma=rule.sigma,
                min_samples=max(rule.min_queries, floor),
                max_samples=rule.max_queries,
            )
        )
        sequential = test.update(differences) if differences else "continue"
        pvalue, interval, n = test.pvalue, test.interval, test.n
        estimate = None  # the mean, clipped into the running interval (below)
    else:
        sprt = PairedSPRT(
            SprtSettings(
                alpha=rule.alpha,
                beta=rule.beta,
                effect=rule.effect,
                min_samples=rule.min_queries,
                max_samples=rule.max_queries,
            )
        )
        sequential = sprt.update(differences) if differences else "continue"
        llr, n = sprt.llr, sprt.n
        estimate = None
    used = differences[:n]
    mean = sum(used) / n if n else None
    if estimate is None and mean is not None:
        estimate = mean if interval is None else min(max(mean, interval[0]), interval[1])
    if len(differences) < rule.min_queries:
        # a bounded sequence may cross early: valid, but the rule waits for min_queries
        sequential = "continue"
    sides = guardrails(rows)
    checks = _guardrail_results(rule, sides, rows)
    srm = _srm_checks(rule, rows, sampled)
    verdict, reason = _verdict(rule, len(differences), sequential, checks, srm, observed)
    return Decision(
        decision=verdict,
        reason=reason,
        measure=rule.measure,
        method=rule.method,
        pairs=len(rows),
        measured=observed.measured_pairs,
        unit=rule.unit,
        units=len(observed.values),
        repeats=observed.repeats,
        not_interleaved=observed.not_interleaved,
        n=n,
        mean=mean,
        estimate=estimate,
        pvalue=pvalue,
        interval=interval,
        assumption=ASSUMPTIONS[rule.method],
        llr=llr,
        sequential=sequential,
        guardrails=checks,
        sides={side: asdict(values) for side, values in sides.items()},
        srm=srm,
        secondary=_secondary(rule, scores, keys or {}, observed),
        interleaving=_interleaving(scores, rule.alpha),
        rule=rule.to_dict(),
        warnings=_warnings(rule, scores, keys or {}, differences),
    )


def decide_test(
    store: Store, test: ShadowTest, until: datetime | None = None, now: datetime | None = None
) -> Decision:
    """:func:`decide` on the pairs the store holds for ``test``, up to ``until`` and at most
    up to ``now`` (default: the clock) less the rule's ``settle_seconds``."""
    rule = GraduationRule.of_test(test)
    settled = (now or datetime.now(UTC)) - timedelta(seconds=rule.settle_seconds)
    until = settled if until is None else min(until, settled)
    rows, scores = score_test(store, test, until)
    end = window_end(test, until)
    logged = [
        entry
        for entry in store.query_log(since=test.started_at)
        if end is None or entry.created_at <= end
    ]
    keys = {entry.query_id: query_key(entry.text) for entry in logged}
    sampled = None
    if rule.sample_percent is not None and rule.sample_percent < 100:
        paired = {str(row["query_id"]) for row in rows}
        texts: dict[str, bool] = {}  # distinct texts, as the sampling hash normalises them
        for entry in logged:
            key = keys[entry.query_id]
            texts[key] = texts.get(key, False) or entry.query_id in paired
        mirrored = sum(texts.values())
        sampled = (mirrored, len(texts) - mirrored)
    return decide(rule, rows, scores, sampled, keys)


def _verdict(
    rule: GraduationRule,
    n: int,
    sequential: str,
    checks: Sequence[GuardrailResult],
    srm: Sequence[SrmCheck],
    observed: Observations,
) -> tuple[Verdict, str]:
    if n < rule.min_queries:
        base = parse_measure(rule.measure)[0]
        if observed.not_interleaved and not observed.measured_pairs:
            return "continue", (
                f"no interleaved pair: {EXPOSURE_HELP.format(measure=base)}"
                if base in CLICK_MEASURES
                else "no interleaved pair"
            )
        repeats = (
            f" ({observed.repeats} repeats of a {rule.unit} left out)" if observed.repeats else ""
        )
        return "continue", (
            f"{n} of the {rule.min_queries} measured {rule.unit} units the rule needs{repeats}"
        )
    mismatched = [check.name for check in srm if check.mismatch]
    if mismatched:
        return "continue", (
            f"sample ratio mismatch ({', '.join(mismatched)}): the pairs are not the sample "
            "the test assumes; find the cause before deciding"
        )
    breached = [check.name for check in checks if check.passed is False]
    if breached:
        return "rollback", f"guardrail breached: {', '.join(breached)}"
    if sequential == "accept_treatment":
        return "graduate", f"{rule.method}: the treatment is better on {rule.measure}"
    if sequential == "accept_control":
        return "rollback", f"{rule.method}: the treatment is worse on {rule.measure}"
    if sequential == "inconclusive":
        return "rollback", f"no difference shown within max_queries ({rule.max_queries})"
    return "continue", f"{rule.method}: no decision yet on {rule.measure}"


def _guardrail_results(
    rule: GraduationRule, sides: Mapping[Side, SideGuardrails], rows: Sequence[Mapping[str, Any]]
) -> tuple[GuardrailResult, ...]:
    """Each guardrail now: breached when the treatment's value is beyond the limit and the
    paired sequence shows it worse beyond the margin (:mod:`._shadow_guard`, level
    ``alpha / g``), so that checking after every pair rolls an equal treatment back with
    probability at most ``alpha``."""
    results = []
    level = rule.alpha / max(len(rule.guardrails), 1)
    for name, margin in rule.guardrails.items():
        control, treatment = sides["control"].get(name), sides["treatment"].get(name)
        if control is None or treatment is None:
            results.append(
                GuardrailResult(name, control, treatment, margin.describe(), None, None, False)
            )
            continue
        limit = margin.limit(control)
        beyond = treatment > limit + 1e-12
        shown, _ = (
            breach_evidence(rows, name, margin.kind, margin.margin, control, level)
            if beyond
            else (False, None)
        )
        results.append(
            GuardrailResult(
                name, control, treatment, margin.describe(), limit, not (beyond and shown), shown
            )
        )
    return tuple(results)


def _srm_checks(
    rule: GraduationRule, rows: Sequence[Mapping[str, Any]], sampled: tuple[int, int] | None
) -> tuple[SrmCheck, ...]:
    checks = []
    first = [row["interleaved"][0][1] for row in rows if row.get("interleaved")]
    if first:
        observed = (first.count("control"), first.count("treatment"))
        result = sample_ratio_check(observed, (0.5, 0.5), threshold=rule.srm_threshold)
        checks.append(
            SrmCheck(
                "interleaving first pick",
                ("control", "treatment"),
                observed,
                (0.5, 0.5),
                result.pvalue,
                result.mismatch,
            )
        )
    percent = rule.sample_percent
    if percent is not None and percent < 100 and sampled is not None and sum(sampled) > 0:
        observed = sampled
        planned = (percent / 100, 1 - percent / 100)
        result = sample_ratio_check(observed, planned, threshold=rule.srm_threshold)
        checks.append(
            SrmCheck(
                "sampled query texts",
                ("mirrored", "not mirrored"),
                observed,
                planned,
                result.pvalue,
                result.mismatch,
            )
        )
    return tuple(checks)


def _secondary(
    rule: GraduationRule,
    scores: Sequence[PairScore],
    keys: Mapping[str, str],
    primary: Observations,
) -> dict[str, Secondary]:
    """Mean differences of the other measures, over the same units and by the same
    exposure rule as the primary (a click measure of pairs the agent saw only the
    control's list of is no evidence); the primary's own observations are reused."""
    k = parse_measure(rule.measure)[1]
    found = {}
    for measure in ("rr", f"hit@{k}", f"ndcg@{k}", "interleaving"):
        same = measure == rule.measure
        values = (primary if same else observations(scores, measure, keys, rule.unit)).values
        found[measure] = Secondary(len(values), sum(values) / len(values) if values else None)
    return found


def _interleaving(scores: Sequence[PairScore], alpha: float) -> dict[str, Any] | None:
    outcomes = [score.outcome for score in scores if score.outcome is not None]
    if not any(score.interleaved for score in scores):
        return None
    summary = summarise(outcomes, alpha)
    return {
        "wins": summary.wins,
        "ties": summary.ties,
        "losses": summary.losses,
        "sign_test_p": summary.pvalue,
        "preference": summary.preference,
        "unequal_lengths": unequal_length_share(scores),
    }


def _check(ok: bool, name: str, value: object, expected: str) -> None:
    if not ok:
        raise ConfigError(f"rule.{name}: expected {expected}, got {value!r}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _warnings(
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
