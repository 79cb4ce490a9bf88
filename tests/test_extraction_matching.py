"""Normalisation, matching rules and the one-to-one assignment, on hand-made cases."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from numpy.typing import NDArray

from recallbench.core import ConfigError
from recallbench.extraction import (
    DEFAULT_RULES,
    MatchRule,
    NameRule,
    assign,
    match,
    names_match,
    normalise,
    similarity,
)
from recallbench.extraction._matching import GAMEABLE, is_slug


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
    assert MatchRule.parse("lcs").label == "lcs>=0.7"
    assert MatchRule.parse("fuzzy-set").label == "fuzzy-set>=85"
    assert MatchRule.parse("fuzzy").kind == "fuzzy"
    assert not MatchRule.parse("embedding").deterministic
    assert [rule.label for rule in DEFAULT_RULES] == ["exact", "lcs>=0.7", "fuzzy>=85"]
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
        ("Alice Chen", "alice chen.", True),
        ("Alice Chen", "Alice", False),  # an alias counts only when declared
        ("Alice Chen", "AC", False),
        ("Jon", "Jon", True),
        ("Jon", "Gina", False),
        ("Alice Chen", None, False),
        (None, None, False),
        ("Zoë", "Zoe", True),
        ("Ｚｏë", "ZOE", True),  # compatibility forms and case
        ("O'Brien", "o brien", True),  # punctuation
        ("Quarry", "dr-7-quarry", False),  # a slug is an identifier
        ("Dr 7 Quarry", "dr-7-quarry", False),
        ("Jon", "jon loses his job as a banker", False),
    ],
)
def test_names_match_exactly_after_normalisation(
    left: str | None, right: str | None, same: bool
) -> None:
    assert names_match(left, right) is same


def test_declared_aliases_count_as_names() -> None:
    assert names_match("Alice Chen", "AC", aliases=("Alice", "AC"))
    assert names_match("Alice Chen", "alice", aliases=("Alice", "AC"))
    assert not names_match("Alice Chen", "Bob", aliases=("Alice", "AC"))


def test_fuzzy_names_are_symmetric_and_need_a_minimum_length() -> None:
    fuzzy = NameRule.parse("fuzzy>=85")
    assert fuzzy.label.startswith("fuzzy>=85")
    assert names_match("Katherine", "Katharine", rule=fuzzy)
    assert names_match("Katharine", "Katherine", rule=fuzzy)
    assert not names_match("Jon", "Joan", rule=fuzzy)  # under the minimum length
    assert not names_match("Jon", "Jon Smith and the whole family", rule=fuzzy)
    assert not names_match("Quarry", "dr-7-quarry", rule=fuzzy)
    assert not names_match("Katherine", "Katharine")  # exact by default
    with pytest.raises(ConfigError, match="name rule"):
        NameRule.parse("token_set")


@pytest.mark.parametrize("text", ["dr-7-quarry", "alice_chen", "q3-plan"])
def test_slugs(text: str) -> None:
    assert is_slug(text)


@pytest.mark.parametrize("text", ["Dr 7 Quarry", "Jean-Luc", "alice", "Q3-plan"])
def test_names_that_are_not_slugs(text: str) -> None:
    assert not is_slug(text)


SYMMETRIC = ["exact", "lcs>=0.7", "fuzzy>=85", "jaccard>=0.5"]
TEXTS = [
    "Jon loses his job as a banker",
    "jon",
    "banker job loses jon as his a",
    "Jon lost his job as a banker.",
    "the",
    "Gina opens an online clothing store and Jon loses his job as a banker",
    "",
]


@pytest.mark.parametrize("rule_text", SYMMETRIC)
def test_both_directions_score_alike(rule_text: str) -> None:
    rule = MatchRule.parse(rule_text)
    forward = similarity(rule, TEXTS, TEXTS)
    assert np.allclose(forward, forward.T)


@pytest.mark.parametrize(
    ("extracted", "why"),
    [
        ("jon", "a name"),
        ("the", "a stop word"),
        ("Gina opens an online clothing store and Jon loses his job as a banker", "a superset"),
        ("banker job loses jon as his a", "the words shuffled"),
        ("Jon loses his job", "a subset"),
    ],
)
@pytest.mark.parametrize("rule", DEFAULT_RULES, ids=lambda r: r.label)
def test_default_rules_refuse_what_no_person_would_accept(
    rule: MatchRule, extracted: str, why: str
) -> None:
    assert match(rule, ["Jon loses his job as a banker"], [extracted]) == [], why


@pytest.mark.parametrize("rule_text", ["lcs>=0.7", "fuzzy>=85"])
def test_default_rules_accept_a_close_paraphrase(rule_text: str) -> None:
    pairs = match(
        MatchRule.parse(rule_text),
        ["Jon loses his job as a banker"],
        ["Jon lost his job as a banker."],
    )
    assert len(pairs) == 1


@pytest.mark.parametrize(
    ("rule_text", "extracted"),
    [
        ("fuzzy-set>=85", "jon"),
        (
            "containment>=0.7",
            "Gina opens an online clothing store and Jon loses his job as a banker",
        ),
        ("jaccard>=0.5", "banker job loses jon as his a"),
    ],
)
def test_gameable_rules_are_gamed_and_say_how(rule_text: str, extracted: str) -> None:
    rule = MatchRule.parse(rule_text)
    assert rule.gameable is not None and rule.gameable == GAMEABLE[rule.kind]
    assert match(rule, ["Jon loses his job as a banker"], [extracted]) != []


def test_lcs_is_the_common_subsequence_over_the_longer_item() -> None:
    rule = MatchRule.parse("lcs>=0.7")
    # 10 tokens against 8: 7 in order in common -> 7 / 10
    scores = similarity(rule, ["a b c d e f g h"], ["a b x c d e y f g z"])
    assert scores[0, 0] == pytest.approx(7 / 10)
    assert match(rule, ["a b c d e f g h"], ["a b x c d e y f g z"]) == [(0, 0, pytest.approx(0.7))]


def test_embedding_refuses_pairs_of_very_unequal_length() -> None:
    def embed(texts: Sequence[str]) -> NDArray[np.float32]:
        return np.ones((len(texts), 2), dtype=np.float32) / np.sqrt(2)

    rule = MatchRule.parse("embedding>=0.8")
    scores = similarity(rule, ["a b"], ["a b c d", "a b c d e"], embed)
    assert scores[0, 0] == pytest.approx(1.0)  # 2 of 4 tokens: within a factor of two
    assert scores[0, 1] == 0.0
