"""Evidence a shadow test's decision reports beside its primary measure and that decides
nothing: the mean differences of the other paired measures, over the same units and by the
same exposure rule as the primary (:mod:`recallbench.online._shadow_units`), and, when
pairs were shown interleaved, the team-draft wins, ties and losses with their sign test
(:func:`recallbench.stats._interleaving.summarise`) and how often the two lists differed in
length.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from recallbench.online._shadow_decision import Secondary
from recallbench.online._shadow_progress import Progress, secondary_names
from recallbench.online._shadow_rule import GraduationRule
from recallbench.online._shadow_units import Track
from recallbench.stats._interleaving import summary_from_counts


def secondary_measures(rule: GraduationRule, tracks: Mapping[str, Track]) -> dict[str, Secondary]:
    """Mean differences of the other measures, over the same units and by the same
    exposure rule as the primary (a click measure of pairs the agent saw only the
    control's list of is no evidence), from each measure's observations (``tracks``,
    :class:`recallbench.online._shadow_progress.Progress`)."""
    found = {}
    for measure in secondary_names(rule):
        values = tracks[measure].values
        found[measure] = Secondary(len(values), sum(values) / len(values) if values else None)
    return found


def interleaving_summary(progress: Progress, alpha: float) -> dict[str, Any] | None:
    """The team-draft outcomes of the interleaved pairs and their sign test; None without
    an interleaved pair."""
    if not progress.interleaved:
        return None
    wins, ties, losses = progress.outcomes
    summary = summary_from_counts(wins, ties, losses, alpha)
    return {
        "wins": summary.wins,
        "ties": summary.ties,
        "losses": summary.losses,
        "sign_test_p": summary.pvalue,
        "preference": summary.preference,
        "unequal_lengths": progress.unequal / progress.interleaved,
    }
