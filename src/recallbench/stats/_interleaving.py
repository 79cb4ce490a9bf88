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

Lists of unequal length (:func:`team_draft_common_depth`). Team draft is fair to a random
clicker, one whose clicks do not depend on which team placed a document (the *fidelity*
condition of Radlinski & Craswell 2013), only while both teams can still pick: once the
shorter ranking is used up, every further position goes to the longer one, and a random
clicker then prefers the longer list (10 against 4 results, one click uniform over the
shown list: +0.20 on ``P(win) - P(loss)``, ``benchmarks/interleaving_bias.py``). So both
rankings are cut to their common depth ``d = min(|A|, |B|)`` (distinct ids) and only the
team draft of ``A[:d]`` and ``B[:d]`` is credited. That draft is the same function of the
coins for either argument order with the teams swapped, so when the two cut rankings are
equally good (exchangeable) each team's expected credit is the same under any click model
that ignores teams; with equal lengths nothing is cut and the draft is the paper's. The
documents below ``d`` may still be shown after the credited draft (for the reader's
benefit, as :attr:`Interleaving.credited` records), but a click on them credits no one.

Credit: with ``c_A`` and ``c_B`` the numbers of clicked (read, validated) items on each team,
the query is a win for the treatment when ``c_B > c_A``, a loss when ``c_B < c_A``, a tie
otherwise (no clicks included). Over queries with ``w`` wins, ``l`` losses and ``t`` ties:

* the sign test: under H0 (no preference) ``w ~ Binomial(n = w + l, 1/2)``; the
  two-sided exact binomial p-value ``min(1, 2 P(X <= min(w, l)))`` (1 when ``w = l``), ties
  left out, with the Clopper-Pearson interval of the win share (``Beta(w, l + 1)`` and
  ``Beta(w + 1, l)`` quantiles at ``alpha / 2``). Both from ``scipy.special`` (``bdtr``,
  ``betaincinv``, ``betainccinv``), not ``scipy.stats``, whose import is 0.6 s of a
  command; they agree with ``scipy.stats.binomtest`` within 1e-11 relative, and with
  exact rational arithmetic (``tests/test_interleaving.py``);
* the preference ``Delta = (w + t/2) / (w + l + t) - 1/2`` of Chapelle, Joachims,
  Radlinski & Yue (2012), positive when the treatment is preferred.

References:
    Radlinski, F., Kurup, M. & Joachims, T. (2008). How does clickthrough data reflect
    retrieval quality? CIKM 2008, 43-52. Team-draft interleaving, credit by team.
    Chapelle, O., Joachims, T., Radlinski, F. & Yue, Y. (2012). Large-scale validation and
    analysis of interleaved search evaluation. ACM TOIS 30(1), 6. The Delta statistic, the
    sensitivity of interleaving relative to A/B metrics.
    Radlinski, F. & Craswell, N. (2013). Optimized interleaving for online retrieval
    evaluation. WSDM 2013, 245-254. Fidelity: a random clicker must prefer neither ranker.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Generic, Literal, TypeVar

import numpy as np

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
    credited: int | None = None
    """How many leading items a click credits to their team (None: all). The items after
    them were shown from below the depth both rankings reach and credit no one."""

    def __post_init__(self) -> None:
        if len(self.items) != len(self.teams):
            raise ValueError(f"{len(self.items)} items but {len(self.teams)} teams")
        if self.credited is not None and not 0 <= self.credited <= len(self.items):
            raise ValueError(f"credited must be between 0 and {len(self.items)}")

    @property
    def shown(self) -> tuple[tuple[T, Team], ...]:
        """``(item, team)`` in shown order, the uncredited tail included."""
        return tuple(zip(self.items, self.teams, strict=True))

    def team_of(self, item: T) -> Team | None:
        """The team that placed ``item``, or None if it is not shown."""
        for shown, team in zip(self.items, self.teams, strict=True):
            if shown == item:
                return team
        return None

    def credit(self, clicked: Iterable[T]) -> tuple[int, int]:
        """``(c_A, c_B)``: clicked items among the credited ones, by team (each item
        counted once; clicks on items not shown or not credited are ignored)."""
        end = len(self.items) if self.credited is None else self.credited
        owner = dict(zip(self.items[:end], self.teams[:end], strict=True))
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


def common_depth(control: Sequence[T], treatment: Sequence[T]) -> int:
    """``d = min(|A|, |B|)`` counted in distinct items: the depth both rankings reach."""
    return min(len(dict.fromkeys(control)), len(dict.fromkeys(treatment)))


def team_draft_common_depth(
    control: Sequence[T],
    treatment: Sequence[T],
    query_id: str,
    *,
    seed: int = 0,
    limit: int | None = None,
) -> Interleaving[T]:
    """Team draft credited only to the depth both rankings reach (module docstring).

    The credited part is :func:`team_draft` of ``A[:d]`` and ``B[:d]`` (distinct items,
    ``d`` = :func:`common_depth`), at most ``limit`` items; then, up to ``limit`` items in
    all (None: no bound), the items not yet shown by rank (``A[r]`` then ``B[r]`` for
    ``r = 0, 1, ...``), each labelled with the team whose ranking holds it but not
    credited (``credited`` = the draft's length). The draft stops when either cut ranking
    is used up, as in the paper; with overlapping rankings the other's unplaced items above
    ``d`` come first in the tail. With equal lengths and ``limit <= |A|`` (the proxy's)
    this is :func:`team_draft` of the two rankings, all of it credited."""
    depth = common_depth(control, treatment)
    top_a, top_b = list(dict.fromkeys(control))[:depth], list(dict.fromkeys(treatment))[:depth]
    drafted = team_draft(top_a, top_b, query_id, seed=seed, limit=limit)
    cap = len(control) + len(treatment) if limit is None else limit
    items, teams = list(drafted.items), list(drafted.teams)
    placed = set(items)
    for rank in range(max(len(control), len(treatment))):
        for ranking, team in ((control, CONTROL), (treatment, TREATMENT)):
            if len(items) < cap and rank < len(ranking) and ranking[rank] not in placed:
                placed.add(ranking[rank])
                items.append(ranking[rank])
                teams.append(team)
    return Interleaving(items=tuple(items), teams=tuple(teams), credited=len(drafted.items))


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


def sign_test(wins: int, n: int, alpha: float) -> tuple[float, tuple[float, float]]:
    """Two-sided exact binomial p-value of ``wins`` in ``n`` under ``p = 1/2`` and the
    Clopper-Pearson ``1 - alpha`` interval of the win share (module docstring)."""
    from scipy import special  # not scipy.stats: 0.6 s of a command's start

    losses = n - wins
    pvalue = (
        1.0 if wins == losses else min(1.0, 2.0 * float(special.bdtr(min(wins, losses), n, 0.5)))
    )
    low = 0.0 if wins == 0 else float(special.betaincinv(wins, losses + 1, alpha / 2))
    high = 1.0 if losses == 0 else float(special.betainccinv(wins + 1, losses, alpha / 2))
    return pvalue, (low, high)


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
        pvalue, interval = sign_test(int(wins), int(untied), alpha)
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
