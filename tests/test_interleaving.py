"""Team-draft interleaving: properties on generated rankings, determinism, credit, the test."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from recallbench.core._errors import ConfigError
from recallbench.stats._interleaving import (
    Interleaving,
    Outcome,
    summarise,
    summary_from_counts,
    team_draft,
)

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
