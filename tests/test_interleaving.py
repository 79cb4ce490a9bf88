"""Team-draft interleaving: properties on generated rankings, determinism, credit, the test,
and lists of unequal length (a random clicker prefers neither; a better ranker still wins)."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from recallbench.core._errors import ConfigError
from recallbench.online._shadow_score import (
    credited_prefix,
    score_pairs,
    team_credit,
    unequal_length_share,
)
from recallbench.stats._interleaving import (
    CONTROL,
    TREATMENT,
    Interleaving,
    Outcome,
    Team,
    common_depth,
    sign_test,
    summarise,
    summary_from_counts,
    team_draft,
    team_draft_common_depth,
)
from recallbench.store import FeedbackEvent

rankings = st.lists(st.integers(min_value=0, max_value=15), max_size=12)


@settings(max_examples=300, deadline=None)
@given(control=rankings, treatment=rankings, query=st.text(max_size=8), seed=st.integers(0, 9))
def test_team_draft_properties(
    control: list[int], treatment: list[int], query: str, seed: int
) -> None:
    result = team_draft(control, treatment, query, seed=seed)
    items, teams = result.items, result.teams
    assert len(items) == len(teams) == len(set(items))  # no item shown twice
    # fairness: at every prefix the team sizes differ by at most one
    difference = 0
    for team in teams:
        difference += 1 if team == "control" else -1
        assert abs(difference) <= 1
    # each team's items appear in its ranking's order, each the first not yet placed
    placed: set[int] = set()
    for item, team in zip(items, teams, strict=True):
        ranking = control if team == "control" else treatment
        assert item == next(x for x in ranking if x not in placed)
        placed.add(item)
    # stops exactly when one ranking has nothing new left
    assert set(control) <= placed or set(treatment) <= placed
    if not control or not treatment:
        assert items == ()
    # determinism by query id and seed
    assert team_draft(control, treatment, query, seed=seed) == result


def test_empty_and_unequal_lengths() -> None:
    assert team_draft([], ["a"], "q") == Interleaving((), ())
    result = team_draft(["a"], ["b", "c", "d"], "q")
    # once control is used up the loop stops (the paper's condition)
    assert set(result.items) <= {"a", "b", "c"} and "a" in result.items
    assert (
        team_draft(["a", "b"], ["c", "d"], "q", limit=3).items
        == (team_draft(["a", "b"], ["c", "d"], "q").items[:3])
    )
    with pytest.raises(ConfigError, match="limit"):
        team_draft(["a"], ["b"], "q", limit=-1)


def test_shared_item_is_credited_to_the_team_that_placed_it() -> None:
    for query in map(str, range(40)):
        result = team_draft(["x", "a"], ["x", "b"], query)
        first = result.teams[0]
        assert result.items[0] == "x" and result.team_of("x") == first
        control, treatment = result.credit(["x"])
        assert (control, treatment) == ((1, 0) if first == "control" else (0, 1))
        assert result.team_of("zzz") is None


def test_coins_depend_on_query_and_seed() -> None:
    control, treatment = [f"a{i}" for i in range(10)], [f"b{i}" for i in range(10)]
    first_team = {team_draft(control, treatment, f"q{i}").teams[0] for i in range(50)}
    assert first_team == {"control", "treatment"}
    by_seed = {team_draft(control, treatment, "q", seed=s).teams for s in range(20)}
    assert len(by_seed) > 1
    assert team_draft(control, treatment, "q").teams == team_draft(control, treatment, "q").teams


def test_credit_with_known_clicks() -> None:
    result = Interleaving(
        items=("a1", "b1", "b2", "a2", "a3"),
        teams=("control", "treatment", "treatment", "control", "control"),
    )
    assert result.credit([]) == (0, 0) and result.outcome([]) == "tie"
    assert result.credit(["b1", "b2", "a3"]) == (1, 2) and result.outcome(["b1", "b2"]) == "win"
    assert result.outcome(["a1", "a2", "b1"]) == "loss"
    assert result.outcome(["a1", "b1", "b1", "zz"]) == "tie"  # repeats and unshown ignored


def test_summary_sign_test_and_preference() -> None:
    win: list[Outcome] = ["win"]
    loss: list[Outcome] = ["loss"]
    tie: list[Outcome] = ["tie"]
    outcomes = win * 30 + loss * 14 + tie * 56
    summary = summarise(outcomes)
    assert (summary.wins, summary.ties, summary.losses, summary.queries) == (30, 56, 14, 100)
    assert summary.pvalue == pytest.approx(stats.binomtest(30, 44, 0.5).pvalue)
    assert summary.pvalue < 0.05
    assert summary.preference == pytest.approx((30 + 28) / 100 - 0.5)
    low, high = summary.interval
    assert low > 0.5 and high < 1.0
    empty = summary_from_counts(0, 5, 0)
    assert empty.pvalue == 1.0 and empty.preference == 0.0 and empty.interval == (0.0, 1.0)
    assert summary_from_counts(0, 0, 0).preference == 0.0


def test_summary_inputs_are_checked() -> None:
    with pytest.raises(ConfigError, match="outcome"):
        summarise(["draw"])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="wins"):
        summary_from_counts(-1, 0, 0)
    with pytest.raises(ConfigError, match="alpha"):
        summarise([], alpha=1.0)


# --- lists of unequal length: credit only to the depth both reach -------------------------


@settings(max_examples=300, deadline=None)
@given(
    control=rankings,
    treatment=rankings,
    query=st.text(max_size=8),
    limit=st.none() | st.integers(0, 20),
)
def test_common_depth_draft_properties(
    control: list[int], treatment: list[int], query: str, limit: int | None
) -> None:
    result = team_draft_common_depth(control, treatment, query, limit=limit)
    depth = common_depth(control, treatment)
    top_a, top_b = list(dict.fromkeys(control))[:depth], list(dict.fromkeys(treatment))[:depth]
    credited = result.credited
    assert credited is not None
    # the credited part is the paper's team draft of both rankings cut to the common depth
    assert result.shown[:credited] == team_draft(top_a, top_b, query, limit=limit).shown
    assert len(result.items) == len(set(result.items))
    assert limit is None or len(result.items) <= limit
    for item, team in result.shown:  # every item from its team's ranking
        assert item in (control if team == CONTROL else treatment)
    for item, team in result.shown[:credited]:  # credited: above the common depth only
        assert item in (top_a if team == CONTROL else top_b)
    if len(set(control)) == len(set(treatment)) == len(control) == len(treatment):
        # equal lengths, the proxy's cap: the paper's draft, all of it credited
        cap = min(len(set(control) | set(treatment)), len(control))
        same = team_draft(control, treatment, query, limit=cap)
        assert team_draft_common_depth(control, treatment, query, limit=cap) == Interleaving(
            same.items, same.teams, len(same.items)
        )


def test_uncredited_tail_and_checks() -> None:
    result = Interleaving(("a", "b", "c"), ("control", "treatment", "control"), credited=2)
    assert result.credit(["a", "b", "c"]) == (1, 1) and result.outcome(["c"]) == "tie"
    assert result.team_of("c") == "control"  # shown and labelled, but not credited
    with pytest.raises(ValueError, match="credited"):
        Interleaving(("a",), ("control",), credited=2)
    with pytest.raises(ValueError, match="teams"):
        Interleaving(("a",), ())


def _padded(control: list[str], treatment: list[str], query: str) -> Interleaving[str]:
    """The rule before the fix: team draft of the full lists, then the longer list's rest
    appended to its own team and credited, ``max(|A|, |B|)`` items in all."""
    limit = min(len(set(control) | set(treatment)), max(len(control), len(treatment)))
    drafted = team_draft(control, treatment, query, limit=limit)
    items, teams = list(drafted.items), list(drafted.teams)
    for ranking, team in ((control, CONTROL), (treatment, TREATMENT)):
        for item in ranking:
            if len(items) < limit and item not in items:
                items.append(item)
                teams.append(team)
    return Interleaving(tuple(items), tuple(teams))


def _preference(
    interleave: Callable[[list[str], list[str], str], Interleaving[str]],
    lengths: tuple[int, int],
    impressions: int,
    seed: int,
    better: Team | None = None,
) -> tuple[float, float]:
    """Mean credit ``+1`` (control wins) / ``0`` / ``-1`` over simulated impressions, and its
    standard error. Each query has 30 documents, 3 relevant; each ranker returns its
    ``lengths`` documents at random (the ``better`` one puts the relevant first). Without
    ``better`` the clicker is random: one click, uniform over the shown list; with it the
    clicker clicks each shown relevant document with probability 0.5, others 0.02."""
    rng = np.random.default_rng(seed)
    pool = [f"d{i}" for i in range(30)]
    relevant = set(pool[:3])
    values = np.zeros(impressions)
    for at in range(impressions):
        lists = []
        for team, length in zip((CONTROL, TREATMENT), lengths, strict=True):
            ranking = [pool[i] for i in rng.permutation(30)]
            if team == better:
                ranking.sort(key=lambda doc: doc not in relevant)
            lists.append(ranking[:length])
        shown = interleave(lists[0], lists[1], f"q{at}")
        if better is None:
            clicked = [shown.items[rng.integers(len(shown.items))]]
        else:
            chance = [0.5 if doc in relevant else 0.02 for doc in shown.items]
            clicked = [d for d, p in zip(shown.items, chance, strict=True) if rng.random() < p]
        control, treatment = shown.credit(clicked)
        values[at] = np.sign(control - treatment)
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(impressions))


def test_a_random_clicker_prefers_neither_list_whatever_their_lengths() -> None:
    """Equally good rankers returning 10 and 4 results, a random clicker: padding the
    shorter list with the longer one's rest preferred the longer by about 0.20; credited
    to the depth both reach, the preference is within Monte-Carlo error of 0."""
    before, before_se = _preference(_padded, (10, 4), 20_000, seed=1)
    assert before > 0.15 and before > 10 * before_se  # 0.26: overlap exhausts B sooner
    for lengths, seed in (((10, 4), 1), ((4, 10), 2), ((10, 10), 3)):
        after, after_se = _preference(team_draft_common_depth, lengths, 20_000, seed=seed)
        assert abs(after) < 3 * after_se, (lengths, after, after_se)


def test_a_better_ranker_still_wins_longer_or_shorter() -> None:
    for lengths, better in (((10, 4), TREATMENT), ((10, 4), CONTROL), ((4, 10), TREATMENT)):
        mean, se = _preference(team_draft_common_depth, lengths, 2_000, seed=4, better=better)
        assert (mean if better == CONTROL else -mean) > 10 * se, (lengths, better, mean)


def test_stored_pairs_credit_to_the_common_depth_and_count_unequal_lengths() -> None:
    at = datetime(2025, 1, 1, tzinfo=UTC)
    shown = [("a1", "control"), ("b1", "treatment"), ("a2", "control"), ("a3", "control")]
    even_shown = [("a1", "control"), ("b1", "treatment"), ("a2", "control"), ("b2", "treatment")]
    base = {"created_at": at, "control_error": None, "treatment_error": None}
    rows = [
        {
            **base,
            "query_id": "new",
            "control_results": ["a1", "a2", "a3"],
            "treatment_results": ["b1"],
            "interleaved": shown[:3],
            "interleaved_credited": 2,
        },
        {
            **base,
            "query_id": "old",
            "control_results": ["a1", "a2", "a3"],
            "treatment_results": ["b1"],
            "interleaved": shown[:3],
        },
        {
            **base,
            "query_id": "even",
            "control_results": ["a1", "a2"],
            "treatment_results": ["b1", "b2"],
            "interleaved": even_shown,
        },
        {**base, "query_id": "plain", "control_results": ["a1"], "treatment_results": []},
    ]
    clicks = [
        FeedbackEvent(query, "read_after_search", at, doc_id="a2")
        for query in ("new", "old", "even")
    ]
    new, old, even, plain = score_pairs(rows, clicks)
    assert new.credit == (0, 0) and new.outcome is None  # a2 is below the common depth
    assert old.credit == (0, 0) and old.outcome is None  # the same, for a row without it
    assert even.credit == (1, 0) and even.outcome == "loss"
    assert credited_prefix(shown[:3], ["a1", "a2", "a3"], ["b1"]) == 2
    assert credited_prefix(even_shown, ["a1", "a2"], ["b1", "b2"]) == 4
    assert credited_prefix(shown, ["a1", "a3"], ["b1", "a2"]) == 2  # a2 is not control's
    assert [s.lengths for s in (new, even, plain)] == [(3, 1), (2, 2), (1, 0)]
    assert (new.unequal_lengths, even.unequal_lengths) == (True, False)
    assert unequal_length_share([new, old, even, plain]) == pytest.approx(2 / 3)
    assert unequal_length_share([plain]) is None
    assert team_credit(shown, ["a3"], credited=3) == ((0, 0), None)
    with pytest.raises(ValueError, match="interleaved_credited"):
        team_credit(shown, ["a3"], credited=5)


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 400), data=st.data(), alpha=st.sampled_from([0.05, 0.1, 0.01]))
def test_the_sign_test_is_the_exact_binomial_test(n: int, data: Any, alpha: float) -> None:
    """Against exact rational arithmetic, and scipy.stats.binomtest with its exact
    (Clopper-Pearson) interval, which sign_test mirrors without importing scipy.stats."""
    wins = data.draw(st.integers(0, n))
    pvalue, (low, high) = sign_test(wins, n, alpha)
    tail = min(wins, n - wins)
    exact = 1.0 if 2 * wins == n else min(1.0, float(2 * Fraction(
        sum(math.comb(n, i) for i in range(tail + 1)), 2**n
    )))  # fmt: skip
    assert pvalue == pytest.approx(exact, rel=1e-10, abs=1e-300)
    reference = stats.binomtest(wins, n, 0.5)
    interval = reference.proportion_ci(confidence_level=1 - alpha, method="exact")
    assert pvalue == pytest.approx(reference.pvalue, rel=1e-10, abs=1e-300)
    assert (low, high) == pytest.approx((interval.low, interval.high), abs=1e-12)
