"""LoCoMo's events and observations as extraction ground truth (counts checked against the
file and ../shared/data/locomo/SOURCE.md), and the baseline extractor scored on conv-30."""

from __future__ import annotations

from collections import Counter

import pytest

from conftest import shared_data
from recallbench.extraction import (
    BaselineExtractor,
    ExtractionGroundTruth,
    GoldDocument,
    MatchRule,
    extract_document,
    load_locomo_extraction,
    score_extraction,
)


@pytest.fixture(scope="module")
def locomo() -> ExtractionGroundTruth:
    return load_locomo_extraction(shared_data("locomo", "locomo10.json"))


def test_counts(locomo: ExtractionGroundTruth) -> None:
    """272 sessions (SOURCE.md); 669 event strings of which one is empty (dropped); 2,541
    observations (the issue's "about 670" and "about 2,540")."""
    documents = locomo.documents
    assert len(documents) == 272
    assert len({d.metadata["conversation"] for d in documents}) == 10
    assert sum(len(d.events) for d in documents) == 668
    assert sum(len(d.observations) for d in documents) == 2541
    assert sum(not d.events for d in documents) == 2
    assert sum(len(d.text.splitlines()) for d in documents) >= 5882  # turns; some span lines
    events = [e for d in documents for e in d.events]
    assert all(e.category is None and e.due_date is None for e in events)
    assert all(e.date is not None and e.actor for e in events)
    # every event's date is its session's date
    assert all(e.date == str(d.metadata["date_time"])[:10] for d in documents for e in d.events)
    loader = locomo.metadata["loader"]
    assert isinstance(loader, dict) and loader["name"] == "locomo-events"
    changes = loader["changes"]
    assert isinstance(changes, list)
    actions = Counter(c["action"] for c in changes if isinstance(c, dict))
    assert actions == {"dropped": 1, "altered": 5}
    # the 5 comma-joined evidence strings are split, none names a missing turn
    observations = [o for d in documents for o in d.observations]
    assert all(o.evidence for o in observations)
    assert sum(len(o.evidence) > 1 for o in observations) == 15


def test_one_conversation(locomo: ExtractionGroundTruth) -> None:
    truth = load_locomo_extraction(shared_data("locomo", "locomo10.json"), ["conv-30"])
    assert truth.name == "locomo10-events:conv-30"
    assert [d.id for d in truth.documents][:2] == ["conv-30:S1", "conv-30:S2"]
    assert len(truth.documents) == 19
    assert sum(len(d.events) for d in truth.documents) == 29
    assert sum(len(d.observations) for d in truth.documents) == 169
    first = truth.documents[0]
    assert first.text.startswith("Gina: ") and first.metadata["speakers"] == ["Jon", "Gina"]
    assert first.events[0].actor in {"Jon", "Gina"}


def test_baseline_on_conv_30() -> None:
    truth = load_locomo_extraction(shared_data("locomo", "locomo10.json"), ["conv-30"])
    runs = []
    for _ in range(2):
        output = BaselineExtractor().extract(truth.documents)
        runs.append(
            [
                score_extraction(truth, output, MatchRule.parse(rule), resamples=300)
                for rule in ("exact", "jaccard>=0.5", "containment>=0.7", "fuzzy>=85")
            ]
        )
    assert runs[0] == runs[1]
    for scores in runs[0]:
        shown = []
        for name in (
            "event_precision",
            "event_recall",
            "event_f1",
            "actor_accuracy",
            "observation_coverage",
        ):
            item = scores.aggregate(name)
            for value in (item.macro, item.micro, *(item.macro_interval or ())):
                assert value is None or 0.0 <= value <= 1.0
            shown.append(f"{name}={item.macro if item.macro is None else round(item.macro, 3)}")
        print(scores.rule, *shown)
    assert runs[0][1].aggregate("event_recall").macro > 0  # jaccard finds something


def test_baseline_rules() -> None:
    document = GoldDocument(
        id="d",
        text="Ann: I went hiking with my dog. Nice weather! We will visit Paris next week.\n"
        "no speaker",
    )
    out = extract_document(document)
    assert [(e.description, e.category, e.actor) for e in out.events] == [
        ("Ann went hiking with Ann's dog.", "past", "Ann"),
        ("Ann will visit Paris next week.", "plan", "Ann"),
    ]
    assert {(e.name, e.type) for e in out.entities} == {("Ann", "PERSON"), ("Paris", "UNKNOWN")}
