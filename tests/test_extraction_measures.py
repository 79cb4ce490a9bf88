"""Extraction measures on a tiny fixture worked by hand, and B-cubed on Bagga & Baldwin's
own example."""

from __future__ import annotations

from typing import Any

import pytest

from recallbench.extraction import (
    ExtractionGroundTruth,
    ExtractionOutput,
    MatchRule,
    NameRule,
    bcubed,
    score_extraction,
    validated_ground_truth,
    validated_output,
)

GOLD = [set("12345"), set("67"), set("89ABC")]


def test_bcubed_bagga_baldwin_1998_example() -> None:
    """Bagga & Baldwin (1998), section 3: merging the two large chains costs more B³
    precision (7/12 = 58%) than merging the small one into a large one (16/21 = 76%); both
    responses have recall 1 (MUC scores them the same)."""
    p, r, n = bcubed(GOLD, [set("1234589ABC"), set("67")])
    assert n == 12 and p / n == pytest.approx(7 / 12) and r / n == pytest.approx(1.0)
    p, r, n = bcubed(GOLD, [set("12345"), set("6789ABC")])
    assert p / n == pytest.approx(16 / 21) and r / n == pytest.approx(1.0)


def test_bcubed_splitting_costs_recall_and_ignores_unshared_mentions() -> None:
    p, r, n = bcubed([{"a", "b"}], [{"a"}, {"b"}, {"zzz"}])
    assert (p, r, n) == (2.0, 1.0, 2)
    assert bcubed([], []) == (0.0, 0.0, 0)


def _truth() -> ExtractionGroundTruth:
    return validated_ground_truth(
        {
            "name": "tiny",
            "documents": [
                {
                    "id": "d1",
                    "text": "...",
                    "events": [
                        {
                            "description": "Launch product on April 1st",
                            "category": "Decision",
                            "actor": "Alice Chen",
                        },
                        {
                            "description": "Deliver API by March 25th",
                            "category": "Commitment",
                            "actor": "Bob Smith",
                        },
                    ],
                    "entities": [
                        {"name": "Alice Chen", "type": "PERSON", "mentions": ["Alice", "AC"]},
                        {"name": "Project Alpha", "type": "PROJECT", "mentions": ["Alpha"]},
                    ],
                    "observations": [{"text": "Alice leads the launch"}],
                },
                {
                    "id": "d2",
                    "text": "...",
                    "events": [{"description": "Carol reviews the design"}],
                    "observations": [{"text": "Carol is a designer"}],
                },
                {"id": "d3", "text": "..."},
                {"id": "d4", "text": "..."},
            ],
            "graph": [
                {
                    "seed_document": "d1",
                    "expected_connections": [
                        {"document_id": "d2", "reason": "shared_entity", "entity": "Alice Chen"},
                        {"document_id": "d3", "reason": "shared_event"},
                    ],
                    "expected_not_connected": ["d4"],
                }
            ],
        },
        "tiny",
    )


def _output() -> ExtractionOutput:
    return validated_output(
        {
            "system": "hand",
            "documents": [
                {
                    "id": "d1",
                    "events": [
                        {
                            "description": "launch product on april 1",
                            "category": "decision",
                            "actor": "Alice",
                        },
                        # jaccard 3/6 with the expected one: matched at 0.5, wrong
                        # category and actor
                        {
                            "description": "Deliver the API by March 25th, 2024",
                            "category": "Decision",
                            "actor": "Carol",
                        },
                        {"description": "Order pizza"},
                    ],
                    "entities": [
                        {"name": "Alice", "type": "PERSON", "mentions": ["Alice Chen"]},
                        {"name": "AC", "type": "PERSON"},
                        {"name": "Alpha", "type": "ORG", "mentions": ["Project Alpha"]},
                    ],
                    "observations": [{"text": "alice leads the launch."}],
                },
                {"id": "d2"},
                {"id": "zzz"},
            ],
            "expansions": [
                {
                    "seed_document": "d1",
                    "connections": [
                        {"document_id": "d2", "reason": "shared_entity", "entity": "Alice"},
                        {"document_id": "d4", "reason": "shared_actor"},
                        {"document_id": "d3", "reason": "shared_entity"},
                    ],
                }
            ],
        },
        "hand",
    )


def test_measures_on_the_tiny_fixture() -> None:
    scores = score_extraction(_truth(), _output(), MatchRule.parse("jaccard>=0.5"), seed=3)
    assert scores.rule == "jaccard>=0.5" and scores.headline == "macro"
    assert scores.missing_documents == ("d3", "d4") and scores.unknown_documents == ("zzz",)
    d1, d2, d3, _ = scores.documents
    assert d1.values["event_precision"] == pytest.approx(2 / 3)
    assert d1.values["event_recall"] == 1.0 and d1.values["event_f1"] == pytest.approx(0.8)
    assert d1.values["category_accuracy"] == 0.5 and d1.values["actor_accuracy"] == 0.5
    assert d1.values["entity_precision"] == pytest.approx(2 / 3)
    assert d1.values["entity_recall"] == 1.0 and d1.values["type_accuracy"] == 0.5
    assert d1.values["dedup_bcubed_precision"] == 1.0
    assert d1.values["dedup_bcubed_recall"] == pytest.approx(11 / 15)
    assert d1.values["dedup_bcubed_f1"] == pytest.approx(11 / 13)
    assert d1.values["observation_coverage"] == 1.0
    # stored: the observation and the three event descriptions; one of four is a fact
    assert d1.values["observation_precision"] == pytest.approx(1 / 4)
    assert d1.values["observation_f1"] == pytest.approx(2 / 5)
    assert d2.values["observation_precision"] is None and d2.values["observation_f1"] == 0.0
    # nothing extracted: precision undefined, recall 0
    assert d2.values["event_precision"] is None and d2.values["event_recall"] == 0.0
    assert d2.values["event_f1"] == 0.0 and d2.values["category_accuracy"] is None
    # nothing expected, nothing extracted: every measure undefined
    assert set(d3.values.values()) == {None}

    macro = {a.measure: a.macro for a in scores.aggregates}
    micro = {a.measure: a.micro for a in scores.aggregates}
    assert macro["event_precision"] == pytest.approx(2 / 3)
    assert macro["event_recall"] == 0.5 and macro["event_f1"] == pytest.approx(0.4)
    assert micro["event_recall"] == pytest.approx(2 / 3)
    assert micro["event_f1"] == pytest.approx(2 / 3)
    assert macro["observation_coverage"] == 0.5
    assert scores.aggregate("event_recall").units == 2
    assert scores.aggregate("event_precision").units == 1

    (seed,) = scores.seeds
    assert seed.values == {
        "connection_precision": pytest.approx(2 / 3),
        "connection_recall": 1.0,
        "connection_fpr": 1.0,
        "hop_accuracy": 0.5,
    }


def _one_document(events: list[str], observations: list[str], entities: list[Any]) -> Any:
    return validated_output(
        {
            "system": "attack",
            "documents": [
                {
                    "id": "d1",
                    "events": [{"description": text} for text in events],
                    "observations": [{"text": text} for text in observations],
                    "entities": entities,
                }
            ],
        },
        "attack",
    )


def test_a_fact_stored_as_event_and_observation_is_one_memory() -> None:
    text = "Alice leads the launch"
    scores = score_extraction(_truth(), _one_document([text], [text.upper()], []), resamples=50)
    values = scores.documents[0].values
    assert scores.documents[0].counts["observations_stored"] == 1.0
    assert values["observation_precision"] == 1.0 and values["observation_coverage"] == 1.0


def test_copies_cover_one_fact_and_cost_precision() -> None:
    copies = ["Alice leads the launch"] * 50
    values = score_extraction(_truth(), _one_document([], copies, []), resamples=50)
    d1 = values.documents[0].values
    assert d1["observation_coverage"] == 1.0  # one distinct memory, one fact
    observations = _one_document([], [f"Alice leads the launch {i}" for i in range(50)], [])
    d1 = score_extraction(_truth(), observations, resamples=50).documents[0].values
    assert d1["observation_precision"] <= 1 / 50
    assert d1["observation_f1"] < 0.05


def test_an_entity_matches_by_its_name_not_by_the_mentions_it_lists() -> None:
    everything = ["Alice Chen", "Alice", "AC", "Project Alpha", "Alpha"]
    greedy = [{"name": "Widget", "mentions": everything} for _ in range(6)]
    d1 = score_extraction(_truth(), _one_document([], [], greedy), resamples=50).documents[0]
    assert d1.values["entity_recall"] == 0.0 and d1.values["entity_precision"] == 0.0
    slug = [{"name": "alice-chen"}, {"name": "ALICE CHEN"}]
    d1 = score_extraction(_truth(), _one_document([], [], slug), resamples=50).documents[0]
    assert d1.counts["entities_matched"] == 1.0  # the slug is not a name; the capitals are


def test_the_name_rule_is_recorded_and_fuzzy_names_are_opt_in() -> None:
    typo = _one_document([], [], [{"name": "Alice Chenn", "type": "PERSON"}])
    exact = score_extraction(_truth(), typo, resamples=50)
    assert exact.name_rule == "exact+aliases"
    assert exact.documents[0].counts["entities_matched"] == 0.0
    fuzzy = score_extraction(_truth(), typo, resamples=50, names=NameRule.parse("fuzzy>=90"))
    assert fuzzy.name_rule.startswith("fuzzy>=90")
    assert fuzzy.documents[0].counts["entities_matched"] == 1.0


def test_intervals_are_reported_and_deterministic() -> None:
    first = score_extraction(_truth(), _output(), resamples=500, seed=7)
    again = score_extraction(_truth(), _output(), resamples=500, seed=7)
    assert first == again
    recall = first.aggregate("event_recall")
    assert recall.macro_interval is not None and recall.micro_interval is not None
    low, high = recall.macro_interval
    assert 0.0 <= low <= high <= 1.0
    # one unit: no interval
    assert first.aggregate("event_precision").macro_interval is None
    assert first.interval == {
        "method": "bca",
        "level": 0.95,
        "resamples": 500,
        "seed": 7,
        "resampled": "document",
        "clusters": 4,
    }


def _clustered(conversations: bool) -> tuple[ExtractionGroundTruth, ExtractionOutput]:
    """12 sessions in 3 conversations; the extractor gets every event of the first
    conversation, half of the second's and none of the third's."""
    documents, extracted = [], []
    for c, share in enumerate((1.0, 0.5, 0.0)):
        for s in range(4):
            events = [f"person {c} did thing {s} number {k}" for k in range(4)]
            meta = {"conversation": f"conv-{c}"} if conversations else {}
            documents.append({"id": f"c{c}s{s}", "text": "...", "metadata": meta,
                              "events": [{"description": e} for e in events]})  # fmt: skip
            found = events[: int(share * 4)]
            extracted.append({"id": f"c{c}s{s}", "events": [{"description": e} for e in found]})
    truth = validated_ground_truth({"name": "nested", "documents": documents}, "nested")
    return truth, validated_output({"system": "s", "documents": extracted}, "s")


def test_intervals_resample_conversations_not_their_sessions() -> None:
    flat = score_extraction(*_clustered(False), MatchRule.parse("exact"), seed=1)
    nested = score_extraction(*_clustered(True), MatchRule.parse("exact"), seed=1)
    assert flat.interval["resampled"] == "document" and flat.interval["clusters"] == 12
    assert nested.interval["resampled"] == "conversation" and nested.interval["clusters"] == 3
    recall_flat, recall_nested = flat.aggregate("event_recall"), nested.aggregate("event_recall")
    assert recall_flat.macro == recall_nested.macro == 0.5
    assert recall_flat.macro_interval is not None and recall_nested.macro_interval is not None
    width = [i[1] - i[0] for i in (recall_flat.macro_interval, recall_nested.macro_interval)]
    # sessions of a conversation agree, so 3 draws of conversations vary more than 12 sessions
    assert width[1] > 1.4 * width[0]
    # each resample holds whole conversations: its mean is one of (k/6 for k in 0..6)
    low, high = recall_nested.macro_interval
    assert min(abs(low * 6 - round(low * 6)), abs(high * 6 - round(high * 6))) < 1e-9


def test_one_conversation_resamples_its_sessions() -> None:
    truth, output = _clustered(True)
    one = validated_ground_truth(
        truth.model_dump(mode="json")
        | {"documents": [d.model_dump(mode="json") for d in truth.documents[:4]]},
        "one",
    )
    scores = score_extraction(one, output, MatchRule.parse("exact"), seed=1)
    assert scores.interval["resampled"] == "document" and scores.interval["clusters"] == 4


def test_the_rule_changes_the_score() -> None:
    exact = score_extraction(_truth(), _output(), MatchRule.parse("exact"))
    # only the first event survives exact matching ("april 1st" -> "--04-01" = "april 1")
    assert exact.documents[0].values["event_recall"] == 0.5
    with pytest.raises(KeyError, match="no measure"):
        exact.aggregate("nope")


def test_a_component_the_ground_truth_never_annotates_is_undefined_not_zero() -> None:
    """LoCoMo annotates events but no entities: an extractor's entities cannot be wrong
    against an annotation that was never made, so entity precision and F1 have no value,
    while the same entities against a ground truth that lists some score as usual."""
    from recallbench.extraction._report import build_report

    data = _truth().model_dump(mode="json")
    for document in data["documents"]:
        document["entities"] = []
    truth = validated_ground_truth(data, "no-entities")
    scores = score_extraction(truth, _output(), MatchRule.parse("exact"), resamples=50)
    for name in ("entity_precision", "entity_f1", "entity_recall"):
        aggregate = scores.aggregate(name)
        assert (aggregate.units, aggregate.macro, aggregate.micro) == (0, None, None)
        assert all(d.values[name] is None for d in scores.documents)
    assert scores.aggregate("event_recall").macro is not None
    reasons = build_report(truth, _output(), [scores]).undefined["exact"]
    assert reasons["entity_precision"].startswith("the ground truth annotates no entities")
    full = score_extraction(_truth(), _output(), MatchRule.parse("exact"), resamples=50)
    assert full.aggregate("entity_precision").macro is not None
