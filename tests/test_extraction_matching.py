"""Normalisation, matching rules and the one-to-one assignment, on hand-made cases."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from numpy.typing import NDArray

from recallbench.core import ConfigError
from recallbench.extraction import MatchRule, assign, match, names_match, normalise, similarity


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Launch product on April 1st!", "launch product on --04-01"),
        ("Deliver API by March 25th, 2024", "deliver api by 2024-03-25"),
        ("due 2024-3-25", "due 2024-03-25"),
        ("25 March 2024", "2024-03-25"),
        ("1,000 users, twenty of them", "1000 users 20 of them"),
        ("the 3rd time, 007", "the 3 time 7"),
        ("Café STRASSE Straße", "cafe strasse strasse"),
        ("I may go", "i may go"),
        ("", ""),
        ("...!", ""),
    ],
)
def test_normalisation(text: str, expected: str) -> None:
    assert normalise(text) == expected


def test_rules_parse_and_print() -> None:
    assert MatchRule.parse("exact").label == "exact"
    assert MatchRule.parse("jaccard").label == "jaccard>=0.5"
    assert MatchRule.parse("containment >= 0.7").label == "containment>=0.7"
    assert MatchRule.parse("FUZZY>=90").threshold == 90
    assert not MatchRule.parse("embedding").deterministic
    with pytest.raises(ConfigError, match="unknown matching rule"):
        MatchRule.parse("cosine")
    with pytest.raises(ConfigError, match="threshold"):
        MatchRule.parse("jaccard>=1.5")


def test_exact_after_normalisation() -> None:
    pairs = match(MatchRule.parse("exact"), ["Launch on April 1st."], ["launch on april 1"])
    assert pairs == [(0, 0, 1.0)]


def test_jaccard_and_containment_differ() -> None:
    expected, extracted = ["alice met bob"], ["alice met bob at the cafe today"]
    # jaccard 3/7, containment 3/3
    assert match(MatchRule.parse("jaccard>=0.5"), expected, extracted) == []
    assert match(MatchRule.parse("containment>=0.7"), expected, extracted) == [(0, 0, 1.0)]
    scores = similarity(MatchRule.parse("jaccard"), expected, extracted)
    assert scores[0, 0] == pytest.approx(3 / 7)


def test_duplicates_match_once() -> None:
    """Two identical extractions of one expected event: one true positive, one false."""
    pairs = match(MatchRule.parse("exact"), ["bob quit"], ["Bob quit.", "bob quit"])
    assert pairs == [(0, 0, 1.0)]


def test_ties_are_resolved_the_same_way_every_time() -> None:
    rule = MatchRule.parse("exact")
    first = match(rule, ["a b", "a b"], ["a b", "a b"])
    assert first == [(0, 0, 1.0), (1, 1, 1.0)]
    assert match(rule, ["a b", "a b"], ["a b", "a b"]) == first


def test_assignment_maximises_the_number_of_pairs_before_similarity() -> None:
    # greedy would take (0, 0) at 0.9 and leave expected 1 unmatched
    scores = np.array([[0.9, 0.8], [0.85, 0.0]])
    assert assign(scores, 0.5) == [(0, 1, 0.8), (1, 0, 0.85)]


def test_empty_sides() -> None:
    rule = MatchRule.parse("fuzzy")
    assert match(rule, [], ["x"]) == []
    assert match(rule, ["x"], []) == []
    assert similarity(rule, [], []).shape == (0, 0)
    assert match(MatchRule.parse("exact"), [""], [""]) == []


def test_unicode_and_fuzzy() -> None:
    rule = MatchRule.parse("fuzzy>=85")
    assert match(rule, ["Zoë went to Zürich"], ["zoe went to zurich!"]) == [(0, 0, 100.0)]
    assert match(rule, ["Zoë went to Zürich"], ["Bob stayed home"]) == []


def test_embedding_rule_takes_an_embedder() -> None:
    table = {"park visit": [1.0, 0.0], "went to the park": [0.8, 0.6], "tax": [0.0, 1.0]}

    def embed(texts: Sequence[str]) -> NDArray[np.float32]:
        return np.array([table[t] for t in texts], dtype=np.float32)

    pairs = match(
        MatchRule.parse("embedding>=0.75"), ["park visit"], ["tax", "went to the park"], embed
    )
    assert pairs == [(0, 1, pytest.approx(0.8))]


@pytest.mark.parametrize(
    ("left", "right", "same"),
    [
        ("Alice Chen", "Alice", True),
        ("Alice Chen", "alice chen.", True),
        ("Alice Chen", "AC", True),
        ("Jon", "Jon", True),
        ("Jon", "Gina", False),
        ("Alice Chen", None, False),
        (None, None, False),
        ("Zoë", "Zoe", True),
    ],
)
def test_actor_names(left: str | None, right: str | None, same: bool) -> None:
    assert names_match(left, right) is same
