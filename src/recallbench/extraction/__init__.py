"""The write path: what a memory system extracts from documents (events, entities,
observations, graph connections), scored against ground truth.

- formats: ``recallbench.extraction/v1`` ground truth and ``recallbench.extraction-output/v1``
  system output, validated with located errors;
- matching: a selectable, reported rule (exact, lcs, fuzzy, embedding; the gameable
  jaccard, containment and fuzzy-set by explicit name), exact names with declared aliases,
  and one optimal one-to-one assignment;
- measures: event, entity, deduplication (B-cubed), observation and connection
  scores per document and aggregated with bootstrap intervals;
- LoCoMo's events and observations as ground truth, and a deterministic baseline extractor;
- decision tests for memory writes (ADD / UPDATE / DELETE / NOOP) with a bundled fixture,
  a scorer and a deterministic baseline decider; a bundled meeting corpus (``data/``);
- systems under test: the extractor and decider protocols, resolved from a spec
  (``baseline``, ``llm``, ``python:...``, ``command:...``, ``mcp:PROFILE``), and the LLM
  extractor and decider through the judge provider layer.

Names are imported on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recallbench._lazy import lazy_exports

if TYPE_CHECKING:
    from recallbench.extraction._baseline import BaselineExtractor, extract_document
    from recallbench.extraction._counting import bcubed
    from recallbench.extraction._decisions import (
        DECISIONS_FORMAT,
        Decision,
        DecisionCase,
        DecisionFixture,
        DecisionScores,
        Memory,
        baseline_decisions,
        bundled_decisions,
        decide,
        load_decisions,
        score_decisions,
        validated_decisions,
    )
    from recallbench.extraction._extractors import (
        BaselineDecider,
        Decider,
        Extractor,
        resolve_decider,
        resolve_extractor,
    )
    from recallbench.extraction._formats import (
        GROUND_TRUTH_FORMAT,
        OUTPUT_FORMAT,
        Evidence,
        Expansion,
        ExpectedConnection,
        ExpectedEntity,
        ExpectedEvent,
        ExpectedObservation,
        ExtractedConnection,
        ExtractedDocument,
        ExtractedEntity,
        ExtractedEvent,
        ExtractedObservation,
        ExtractionGroundTruth,
        ExtractionOutput,
        GoldDocument,
        GraphCase,
        load_ground_truth,
        load_output,
        validated_ground_truth,
        validated_output,
    )
    from recallbench.extraction._llm import LLMDecider, LLMExtractor
    from recallbench.extraction._locomo import load_locomo_extraction
    from recallbench.extraction._matching import (
        DEFAULT_NAME_RULE,
        DEFAULT_RULE,
        DEFAULT_RULES,
        MatchRule,
        NameRule,
        assign,
        match,
        names_match,
        similarity,
    )
    from recallbench.extraction._measures import (
        MEASURES,
        SCORES_FORMAT,
        Aggregate,
        ExtractionScores,
        UnitScores,
        score_extraction,
    )
    from recallbench.extraction._normalise import normalise, tokens

__all__ = [
    "DECISIONS_FORMAT",
    "DEFAULT_NAME_RULE",
    "DEFAULT_RULE",
    "DEFAULT_RULES",
    "GROUND_TRUTH_FORMAT",
    "MEASURES",
    "OUTPUT_FORMAT",
    "SCORES_FORMAT",
    "Aggregate",
    "BaselineDecider",
    "BaselineExtractor",
    "Decider",
    "Decision",
    "DecisionCase",
    "DecisionFixture",
    "DecisionScores",
    "Evidence",
    "Expansion",
    "ExpectedConnection",
    "ExpectedEntity",
    "ExpectedEvent",
    "ExpectedObservation",
    "ExtractedConnection",
    "ExtractedDocument",
    "ExtractedEntity",
    "ExtractedEvent",
    "ExtractedObservation",
    "ExtractionGroundTruth",
    "ExtractionOutput",
    "ExtractionScores",
    "Extractor",
    "GoldDocument",
    "GraphCase",
    "LLMDecider",
    "LLMExtractor",
    "MatchRule",
    "Memory",
    "NameRule",
    "UnitScores",
    "assign",
    "baseline_decisions",
    "bcubed",
    "bundled_decisions",
    "decide",
    "extract_document",
    "load_decisions",
    "load_ground_truth",
    "load_locomo_extraction",
    "load_output",
    "match",
    "names_match",
    "normalise",
    "resolve_decider",
    "resolve_extractor",
    "score_decisions",
    "score_extraction",
    "similarity",
    "tokens",
    "validated_decisions",
    "validated_ground_truth",
    "validated_output",
]

__getattr__ = lazy_exports(
    __name__,
    (
        "_formats",
        "_matching",
        "_measures",
        "_counting",
        "_normalise",
        "_locomo",
        "_baseline",
        "_decisions",
        "_extractors",
        "_llm",
    ),
    __all__,
)
