"""Team-draft interleaving of two rankings, click credit and the per-query win/tie/loss test.

Team-draft interleaving (Radlinski, Kurup & Joachims 2008, Algorithm 2) merges the control
ranking ``A`` and the treatment ranking ``B`` the way captains pick teams:

    I = [], TeamA = TeamB = {}
    while some A[r] not in I and some B[r] not in I:
        if |TeamA| < |TeamB| or (|TeamA| == |TeamB| and coin() == A):
            k = min{r: A[r] not in I};  append A[k] to I;  add it to TeamA
        else:
            k = min{r: B[r] not in I};  append B[k] to I;  add it to TeamB

so at every prefix the team sizes differ by at most one, and an item both rankings hold
belongs to the team that placed it first. The loop stops as soon as either ranking has no
unplaced item left (the rest of the longer list is not shown), as in the paper. The coin
flips come from a generator seeded by ``(seed, query_id)``: the same query always
interleaves the same way.

Credit: with ``c_A`` and ``c_B`` the numbers of clicked (read, validated) items on each team,
the query is a win for the treatment when ``c_B > c_A``, a loss when ``c_B < c_A``, a tie
otherwise (no clicks included). Over queries with ``w`` wins, ``l`` losses and ``t`` ties:

* the sign test: under H0 (no preference) ``w ~ Binomial(w + l, 1/2)``; two-sided exact
  binomial p-value (``scipy.stats.binomtest``), ties left out;
* the preference ``Delta = (w + t/2) / (w + l + t) - 1/2`` of Chapelle, Joachims,
  Radlinski & Yue (2012), positive when the treatment is preferred.

References:
    Radlinski, F., Kurup, M. & Joachims, T. (2008). How does clickthrough data reflect
    retrieval quality? CIKM 2008, 43-52. Team-draft interleaving, credit by team.
    Chapelle, O., Joachims, T., Radlinski, F. & Yue, Y. (2012). Large-scale validation and
    analysis of interleaved search evaluation. ACM TOIS 30(1), 6. The Delta statistic, the
    sensitivity of interleaving relative to A/B metrics.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Generic, Literal, TypeVar

import numpy as np
from scipy import stats

from recallbench.core._errors import ConfigError
from recallbench.stats._sprt import is_int

T = TypeVar("T", bound=Hashable)

Team = Literal["control", "treatment"]
Outcome = Literal["win", "tie", "loss"]
"""A query's outcome for the treatment."""

CONTROL: Final[Team] = "control"
TREATMENT: Final[Team] = "treatment"


@dataclass(frozen=True, slots=True)
class Interleaving(Generic[T]):
    """The interleaved list and, position by position, the team that placed each item."""

    items: tuple[T, ...]
    teams: tuple[Team, ...]

    def team_of(self, item: T) -> Team | None:
        """The team that placed ``item``, or None if it is not shown."""
        for shown, team in zip(self.items, self.teams, strict=True):
            if shown == item:
                return team
        return None

    def credit(self, clicked: Iterable[T]) -> tuple[int, int]:
        """``(c_A, c_B)``: clicked items shown, by team (each item counted once; clicks on
        items not shown are ignored)."""
        owner = dict(zip(self.items, self.teams, strict=True))
        teams = [owner[item] for item in set(clicked) if item in owner]
        return teams.count(CONTROL), teams.count(TREATMENT)

    def outcome(self, clicked: Iterable[T]) -> Outcome:
        """The query's outcome for the treatment (module docstring)."""
        control, treatment = self.credit(clicked)
        if treatment > control:
            return "win"
        return "loss" if control > treatment else "tie"


def coin_generator(query_id: str, seed: int = 0) -> np.random.Generator:
    """The generator of a query's coin flips: seeded by SHA-256 of ``seed`` and the query id,
    so it is the same in every process (unlike ``hash``)."""
    digest = hashlib.sha256(f"{seed}\x00{query_id}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "big"))


def team_draft(
    control: Sequence[T],
    treatment: Sequence[T],
    query_id: str,
    *,
    seed: int = 0,
    limit: int | None = None,
) -> Interleaving[T]:
    """Team-draft interleave ``control`` (team A) and ``treatment`` (team B), module docstring.

    ``limit``: show at most this many items (the top of the full interleaving). Duplicates
    within one ranking are skipped like items already placed.
    """
    if limit is not None and (not is_int(limit) or limit < 0):
        raise ConfigError(f"interleaving limit must be None or an integer >= 0, got {limit}")
    coins = coin_generator(query_id, seed)
    placed: set[T] = set()
    items: list[T] = []
    teams: list[Team] = []
    next_a = next_b = 0
    size_a = size_b = 0
    cap = limit if limit is not None else len(control) + len(treatment)
    while len(items) < cap:
        next_a = _next_unplaced(control, next_a, placed)
        next_b = _next_unplaced(treatment, next_b, placed)
        if next_a == len(control) or next_b == len(treatment):
            break
        if size_a < size_b or (size_a == size_b and coins.integers(2) == 0):
            item, team = control[next_a], CONTROL
            size_a += 1
        else:
            item, team = treatment[next_b], TREATMENT
            size_b += 1
        placed.add(item)
        items.append(item)
        teams.append(team)
    return Interleaving(items=tuple(items), teams=tuple(teams))


def _next_unplaced(ranking: Sequence[T], start: int, placed: Collection[T]) -> int:
    """``min{r >= start: ranking[r] not in placed}``, or ``len(ranking)``."""
    while start < len(ranking) and ranking[start] in placed:
        start += 1
    return start


@dataclass(frozen=True, slots=True)
class InterleavingSummary:
    """Wins, ties and losses of the treatment over queries, with the sign test.

    ``pvalue``: two-sided exact binomial test of ``wins ~ Binomial(wins + losses, 1/2)``
    (1.0 with no untied query). ``interval``: Clopper-Pearson ``1 - alpha`` interval of the
    treatment's win proportion among untied queries. ``preference``: Chapelle et al.'s
    ``Delta`` (0 with no query).
    """

    wins: int
    ties: int
    losses: int
    pvalue: float
    interval: tuple[float, float]
    preference: float

    @property
    def queries(self) -> int:
        return self.wins + self.ties + self.losses


def summarise(outcomes: Iterable[Outcome], alpha: float = 0.05) -> InterleavingSummary:
    """Count outcomes and test them (see :class:`InterleavingSummary`)."""
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"alpha must be between 0 and 1, got {alpha}")
    counts = {"win": 0, "tie": 0, "loss": 0}
    for outcome in outcomes:
        if outcome not in counts:
            raise ConfigError(f"unknown interleaving outcome {outcome!r}")
        counts[outcome] += 1
    return summary_from_counts(counts["win"], counts["tie"], counts["loss"], alpha)


def summary_from_counts(
    wins: int, ties: int, losses: int, alpha: float = 0.05
) -> InterleavingSummary:
    """:class:`InterleavingSummary` from the three counts."""
    for name, value in (("wins", wins), ("ties", ties), ("losses", losses)):
        if not is_int(value) or value < 0:
            raise ConfigError(f"{name} must be a non-negative integer, got {value}")
    untied = wins + losses
    if untied == 0:
        pvalue, interval = 1.0, (0.0, 1.0)
    else:
        result = stats.binomtest(int(wins), int(untied), 0.5)
        ci = result.proportion_ci(confidence_level=1.0 - alpha, method="exact")
        pvalue, interval = float(result.pvalue), (float(ci.low), float(ci.high))
    total = untied + ties
    preference = (wins + ties / 2) / total - 0.5 if total else 0.0
    return InterleavingSummary(
        wins=int(wins),
        ties=int(ties),
        losses=int(losses),
        pvalue=pvalue,
        interval=interval,
        preference=preference,
    )
