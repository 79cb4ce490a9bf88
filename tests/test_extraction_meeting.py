"""The bundled meeting corpus: it loads and validates, the CLI finds it by name, and the
baseline extractor scores all three components on it, deterministically."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import recallbench.extraction as extraction
from recallbench.cli._extract import extract
from recallbench.extraction import (
    BaselineExtractor,
    ExtractionGroundTruth,
    MatchRule,
    load_ground_truth,
    score_extraction,
)

CORPUS = Path(extraction.__file__).parent / "data" / "meeting-sample.json"


@pytest.fixture(scope="module")
def truth() -> ExtractionGroundTruth:
    return load_ground_truth(CORPUS)


def test_corpus_loads_with_full_gold(truth: ExtractionGroundTruth) -> None:
    assert truth.name == "meeting-sample" and len(truth.documents) == 10
    assert all(d.events and d.entities for d in truth.documents)
    assert len(truth.graph) == 3 and all(c.expected_not_connected for c in truth.graph)
    categories = {e.category for d in truth.documents for e in d.events}
    assert categories == {"Decision", "Commitment", "Status"}


def test_evidence_spans_and_mentions_are_in_the_text(truth: ExtractionGroundTruth) -> None:
    for document in truth.documents:
        spans = [s for e in document.events for s in e.evidence]
        spans += [s for o in document.observations for s in o.evidence]
        for span in spans:
            assert span.start is not None and span.end is not None
            assert document.text[span.start : span.end].strip()
        for entity in document.entities:
            assert all(mention in document.text for mention in entity.mentions)


def test_aliases_exercise_deduplication(truth: ExtractionGroundTruth) -> None:
    alice = {
        m for d in truth.documents for e in d.entities if e.name == "Alice Chen" for m in e.mentions
    }
    assert {"Alice Chen", "Alice", "AC"} <= alice


@pytest.mark.parametrize("rule", ["exact", "fuzzy>=85"])
def test_baseline_scores_all_three_components(truth: ExtractionGroundTruth, rule: str) -> None:
    output = BaselineExtractor().extract(truth.documents)
    first = score_extraction(truth, output, MatchRule.parse(rule), resamples=50)
    again = score_extraction(truth, output, MatchRule.parse(rule), resamples=50)
    assert first == again
    for name in ("event_f1", "entity_f1", "dedup_bcubed_f1", "connection_recall", "connection_fpr"):
        value = first.aggregate(name).macro
        assert value is not None and 0.0 <= value <= 1.0, name
    # The baseline keeps each surface form apart (B-cubed precision 1) and expands nothing.
    assert first.aggregate("dedup_bcubed_precision").macro == 1.0
    assert first.aggregate("connection_recall").macro == 0.0
    assert first.aggregate("connection_precision").macro is None


def test_baseline_numbers_on_the_corpus(truth: ExtractionGroundTruth) -> None:
    output = BaselineExtractor().extract(truth.documents)
    scores = score_extraction(truth, output, MatchRule.parse("lcs>=0.7"), resamples=50)
    assert scores.aggregate("event_f1").macro == pytest.approx(0.144, abs=1e-3)
    assert scores.aggregate("entity_f1").macro == pytest.approx(0.396, abs=1e-3)
    assert scores.aggregate("dedup_bcubed_f1").macro == pytest.approx(0.961, abs=1e-3)
    assert scores.aggregate("observation_f1").macro == pytest.approx(0.029, abs=1e-3)
    # the old default, by its explicit name: a subset of an event's words is the event
    gameable = score_extraction(truth, output, MatchRule.parse("fuzzy-set>=85"), resamples=50)
    assert gameable.gameable is not None
    assert gameable.aggregate("event_f1").macro == pytest.approx(0.516, abs=1e-3)


def test_cli_loads_the_corpus_by_name(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        extract,
        [
            *("--ground-truth", "meeting-sample", "--rule", "exact", "--resamples", "20"),
            *("--out", str(tmp_path), "--quiet"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "extraction.json").exists()
