"""The graduation rule of a shadow test (:class:`GraduationRule`): fixed when the test
starts, stored as JSON with it, and validated when built (a ConfigError names the field).

It names the primary paired measure (:mod:`recallbench.online._shadow_score`), the unit of
its observations (:mod:`recallbench.online._shadow_units`), the sequential test and its
settings (``alpha``, ``min_queries``, ``max_queries``; ``tau`` and ``sigma`` for the mSPRT,
``effect`` and ``beta`` for the SPRT; how :mod:`recallbench.online._shadow_decide` uses
them), the guardrails' non-inferiority margins (:class:`Margin`, written
``--guardrail NAME:+20%``) and the sample-ratio check's threshold and planned
``sample_percent`` (:mod:`recallbench.online._shadow_checks`), how long pairs settle before
they count (``settle_seconds``), the feature flag a graduation sets, and whether the agent
is shown both lists interleaved.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from recallbench.core._errors import ConfigError
from recallbench.online._shadow_score import GUARDRAIL_NAMES, parse_measure
from recallbench.online._shadow_units import CLICK_MEASURES, EXPOSURE_HELP, UNITS, Unit
from recallbench.stats._msprt import DEFAULT_TAU
from recallbench.stats._srm import SRM_THRESHOLD

if TYPE_CHECKING:
    from recallbench.store import ShadowTest

Method = Literal["betting", "empirical_bernstein", "msprt", "sprt"]
METHODS: Final[tuple[Method, ...]] = ("betting", "empirical_bernstein", "msprt", "sprt")
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
    """The rule a shadow test is decided by (:mod:`recallbench.online._shadow_decide`); stored
    with the test."""

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


def _check(ok: bool, name: str, value: object, expected: str) -> None:
    if not ok:
        raise ConfigError(f"rule.{name}: expected {expected}, got {value!r}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def primary_measure(measure: str | None, interleaved: bool) -> str:
    """The rule's primary measure: ``measure`` as given (trimmed, lower case), else
    ``interleaving`` when the proxy interleaves and ``ndcg@10`` (from labels) when not."""
    if measure is None:
        measure = "interleaving" if interleaved else "ndcg@10"
    return measure.strip().lower()


def guardrail_margins(specs: Iterable[str], defaults: bool = True) -> dict[str, Margin]:
    """The guardrails of ``NAME:+MARGIN`` specs
    (:func:`parse_guardrail`), added to the rule's
    default guardrails (a spec of the same name replaces the default) or, with ``defaults``
    false, alone."""
    guards = dict(GraduationRule().guardrails) if defaults else {}
    for spec in specs:
        guard, margin = parse_guardrail(spec)
        guards[guard] = margin
    return guards
