"""The checks beside a shadow test's sequential test: guardrails and the sample-ratio check.
They can only hold a graduation back or roll the treatment back, never graduate it
(:mod:`recallbench.online._shadow_decide`).

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

References:
    Fabijan, A., Gupchup, J., Gupta, S., Omhover, J., Qin, W., Vermeer, L. & Dmitriev, P.
    (2019). Diagnosing sample ratio mismatch in online controlled experiments. KDD 2019.
"""

from __future__ import annotations

from collections.abc import Mapping

from recallbench.online._shadow_decision import GuardrailResult, SrmCheck
from recallbench.online._shadow_guard import GuardColumns, breach_evidence
from recallbench.online._shadow_rule import GraduationRule
from recallbench.online._shadow_score import Side, SideGuardrails
from recallbench.stats._srm import sample_ratio_check


def guardrail_results(
    rule: GraduationRule, sides: Mapping[Side, SideGuardrails], columns: GuardColumns
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
            breach_evidence(columns, name, margin.kind, margin.margin, control, level)
            if beyond
            else (False, None)
        )
        results.append(
            GuardrailResult(
                name, control, treatment, margin.describe(), limit, not (beyond and shown), shown
            )
        )
    return tuple(results)


def srm_checks(
    rule: GraduationRule, first: tuple[int, int] | None, sampled: tuple[int, int] | None
) -> tuple[SrmCheck, ...]:
    """The sample-ratio checks (module docstring); ``first``: how many interleaved lists the
    control's and the treatment's team opened (None: no interleaved pair)."""
    checks = []
    if first is not None:
        observed = first
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
