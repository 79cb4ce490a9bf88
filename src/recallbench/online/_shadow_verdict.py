"""A shadow test's decision from its progress (:func:`decision_of`): the sequential test,
guardrails, sample-ratio checks, secondary measures, interleaving and warnings read from a
:class:`~recallbench.online._shadow_progress.Progress`, and the verdict in the rule's order
(:mod:`recallbench.online._shadow_decide` describes the rule and its tests); and the
decision as lossless JSON (:func:`decision_json`, :func:`decision_from_json`), which a
checkpoint keeps.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Final

from recallbench.online._shadow_checks import guardrail_results, srm_checks
from recallbench.online._shadow_decision import (
    Decision,
    GuardrailResult,
    Secondary,
    SrmCheck,
    Verdict,
)
from recallbench.online._shadow_progress import Progress
from recallbench.online._shadow_rule import GraduationRule
from recallbench.online._shadow_score import parse_measure, side_guardrails
from recallbench.online._shadow_secondary import interleaving_summary, secondary_measures
from recallbench.online._shadow_units import CLICK_MEASURES, EXPOSURE_HELP, Observations
from recallbench.online._shadow_warnings import validity_warnings
from recallbench.stats._msprt import MixtureSPRT, MsprtSettings
from recallbench.stats._sprt import PairedSPRT, SprtSettings

ASSUMPTIONS: Final[dict[str, str]] = {
    "betting": "none: valid at every n for any differences in [-1, 1] (bounded measures)",
    "empirical_bernstein": "none: valid at every n for any differences in [-1, 1]",
    "msprt": "approximately normal differences and a large n (plug-in variance): the "
    "type I error is only asymptotic (0.38 at 20 pairs on a skewed null)",
    "sprt": "normal differences of the stated effect and variance",
}
"""What each sequential test assumes, printed with its result."""


def decision_of(progress: Progress, sampled: tuple[int, int] | None = None) -> Decision:
    """The rule's decision on the pairs added to ``progress`` (:func:`decide`)."""
    rule = progress.rule
    observed = progress.primary.observations()
    differences = list(observed.values)
    pvalue: float | None = None
    interval: tuple[float, float] | None = None
    llr: float | None = None
    if progress.sequential is not None:
        bounded = progress.sequential  # fed the differences as they came
        sequential = bounded.decision if differences else "continue"
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
    sides = side_guardrails(progress.columns)
    checks = guardrail_results(rule, sides, progress.columns)
    control, treatment, opened = progress.first
    srm = srm_checks(rule, (control, treatment) if opened else None, sampled)
    verdict, reason = _verdict(rule, len(differences), sequential, checks, srm, observed)
    return Decision(
        decision=verdict,
        reason=reason,
        measure=rule.measure,
        method=rule.method,
        pairs=progress.pairs,
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
        secondary=secondary_measures(rule, progress.tracks),
        interleaving=interleaving_summary(progress, rule.alpha),
        rule=rule.to_dict(),
        warnings=validity_warnings(rule, progress.shared, differences),
    )


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


def decision_json(decision: Decision) -> str:
    """``decision`` as JSON that :func:`decision_from_json` reads back equal (infinite and
    NaN numbers kept, unlike :meth:`Decision.to_dict`)."""
    return json.dumps(asdict(decision), separators=(",", ":"))


def decision_from_json(text: str) -> Decision:
    """The decision :func:`decision_json` wrote."""
    data = json.loads(text)
    interval = data["interval"]
    return Decision(
        **{
            **data,
            "interval": None if interval is None else tuple(interval),
            "guardrails": tuple(GuardrailResult(**g) for g in data["guardrails"]),
            "srm": tuple(
                SrmCheck(
                    c["name"],
                    tuple(c["arms"]),
                    tuple(c["observed"]),
                    tuple(c["planned"]),
                    c["pvalue"],
                    c["mismatch"],
                )
                for c in data["srm"]
            ),
            "secondary": {k: Secondary(**v) for k, v in data["secondary"].items()},
            "warnings": tuple(data["warnings"]),
        }
    )
