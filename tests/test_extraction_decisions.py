"""Memory-write decision tests: the bundled fixture, the scorer on hand-made cases, and
the deterministic baseline decider's accuracy on the fixture."""

from __future__ import annotations

import pytest

from recallbench.core import DatasetError
from recallbench.extraction import (
    Decision,
    DecisionFixture,
    Memory,
    baseline_decisions,
    bundled_decisions,
    decide,
    score_decisions,
    validated_decisions,
)


def _fixture() -> DecisionFixture:
    return validated_decisions(
        {
            "name": "hand",
            "cases": [
                {
                    "id": "a",
                    "kind": "exact_duplicate",
                    "existing": [{"id": "m1", "content": "x"}],
                    "incoming": "x",
                    "expected": {"action": "NOOP", "target": "m1"},
                },
                {
                    "id": "b",
                    "kind": "rewording",
                    "existing": [{"id": "m1", "content": "x"}, {"id": "m2", "content": "y"}],
                    "incoming": "y'",
                    "expected": {"action": "UPDATE", "target": "m2"},
                },
                {"id": "c", "kind": "new_fact", "incoming": "z", "expected": {"action": "ADD"}},
            ],
        },
        "hand",
    )


def test_bundled_fixture_loads_and_covers_every_action() -> None:
    fixture = bundled_decisions()
    assert len(fixture.cases) == 22
    assert {case.expected.action for case in fixture.cases} == {"ADD", "UPDATE", "DELETE", "NOOP"}


def test_validation_locates_bad_targets_and_duplicates() -> None:
    data = {
        "name": "bad",
        "cases": [
            {
                "id": "a",
                "kind": "k",
                "incoming": "x",
                "expected": {"action": "NOOP", "target": "m9"},
            },
            {"id": "a", "kind": "k", "incoming": "x", "expected": {"action": "ADD"}},
        ],
    }
    with pytest.raises(DatasetError) as error:
        validated_decisions(data, "bad.json")
    text = str(error.value)
    assert "m9" in text and "duplicate case id" in text


def test_scorer_on_hand_made_decisions() -> None:
    fixture = _fixture()
    decisions = {
        "a": Decision(action="NOOP", target="m1"),
        "b": Decision(action="UPDATE", target="m1"),  # right action, wrong memory
    }
    scores = score_decisions(fixture, decisions, "hand")
    assert scores.accuracy == pytest.approx(2 / 3)
    assert scores.target_accuracy == pytest.approx(1 / 3)
    assert scores.missing == ("c",) and scores.wrong == ("c",)
    assert scores.confusion["ADD"]["MISSING"] == 1
    assert scores.per_action["ADD"] == {"precision": None, "recall": 0.0, "f1": 0.0, "support": 1.0}
    assert scores.per_action["NOOP"]["precision"] == 1.0
    assert scores.targets["exact_match"]["met"] is True
    assert scores.targets["exact_match"]["target"] == 0.95


def test_scorer_confusion_counts_wrong_actions() -> None:
    decisions = {
        "a": Decision(action="UPDATE", target="m1"),
        "b": Decision(action="UPDATE", target="m2"),
        "c": Decision(action="ADD"),
    }
    scores = score_decisions(_fixture(), decisions)
    assert scores.confusion["NOOP"]["UPDATE"] == 1
    assert scores.per_action["UPDATE"]["precision"] == 0.5
    assert scores.per_action["UPDATE"]["recall"] == 1.0
    assert scores.targets["exact_match"]["met"] is False


def test_baseline_decider_rules() -> None:
    memories = (Memory(id="m1", content="The cutover is on 8 May."),)
    assert decide(memories, "the cutover is on 8 May") == Decision(action="NOOP", target="m1")
    assert decide(memories, "The cutover is cancelled, no longer on 8 May.").action == "DELETE"
    assert decide(memories, "Sam likes tea.") == Decision(action="ADD")
    assert decide((), "anything") == Decision(action="ADD")


def test_baseline_accuracy_on_the_fixture_is_18_of_22() -> None:
    fixture = bundled_decisions()
    scores = score_decisions(fixture, baseline_decisions(fixture), "baseline")
    assert score_decisions(fixture, baseline_decisions(fixture), "baseline") == scores
    assert scores.accuracy == pytest.approx(18 / 22)
    # Similarity alone cannot see a one-character contradiction or a false friend.
    assert set(scores.wrong) == {"contra-1", "false-friend-1", "false-friend-2", "false-friend-3"}
    assert scores.targets["exact_match"]["met"] is True
    assert scores.targets["similarity"]["met"] is False
