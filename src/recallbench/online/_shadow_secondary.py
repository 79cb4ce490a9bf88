"""Evidence a shadow test's decision reports beside its primary measure and that decides
nothing: the mean differences of the other paired measures, over the same units and by the
same exposure rule as the primary (:mod:`recallbench.online._shadow_units`), and, when
pairs were shown interleaved, the team-draft wins, ties and losses with their sign test
(:func:`recallbench.stats._interleaving.summarise`) and how often the two lists differed in
length.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from recallbench.online._shadow_decision import Secondary
from recallbench.online._shadow_rule import GraduationRule
from recallbench.online._shadow_score import PairScore, parse_measure, unequal_length_share
from recallbench.online._shadow_units import Observations, observations
from recallbench.stats._interleaving import summarise


def secondary_measures(
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


def interleaving_summary(scores: Sequence[PairScore], alpha: float) -> dict[str, Any] | None:
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
