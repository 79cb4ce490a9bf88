"""Ground truth for the write path (``recallbench.extraction/v1``) and what a system under
test extracted (``recallbench.extraction-output/v1``).

The schemas follow the V7 quality benchmark design (``../shared/seeds``): expected events
per document (category, description, actor, optional due date, optional evidence), expected
entities (name, type, role, mentions), expected connections from a seed document (target
document or event, reason, entity or event through which it connects, relevance) and
documents expected *not* to be connected; plus the neural-memory notes' observations (facts
a memory should capture, with the turn they came from).

Both files are validated like datasets: pydantic for structure and types, then the
cross-references on the raw JSON, every problem located by file and JSON path in one
:class:`~recallbench.core.DatasetError`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import Field, JsonValue, model_validator

from recallbench.core import DatasetError, Problem
from recallbench.core._model import Record
from recallbench.core._validation import json_path, read_json, validate

GROUND_TRUTH_FORMAT: Final = "recallbench.extraction/v1"
OUTPUT_FORMAT: Final = "recallbench.extraction-output/v1"

Relevance = Literal["high", "medium", "low"]
Confidence = Literal["high", "medium", "low"]


class Evidence(Record):
    """Where a fact is stated: a source id (a LoCoMo ``dia_id``), a character span of the
    document's text (``start`` inclusive, ``end`` exclusive), or both."""

    ref: str | None = None
    """An id in the source (a turn, a message, a line)."""
    start: int | None = Field(default=None, ge=0)
    end: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _located(self) -> Evidence:
        if self.ref is None and self.start is None:
            raise ValueError("evidence needs a ref, a start and end, or both")
        if (self.start is None) != (self.end is None):
            raise ValueError("a span needs both start and end")
        if self.start is not None and self.end is not None and self.end < self.start:
            raise ValueError(f"span end {self.end} is before its start {self.start}")
        return self


class ExpectedEvent(Record):
    """An event the document states: a decision, commitment, something that happened."""

    description: str = Field(min_length=1)
    """What happened or was decided, in a sentence; matched under the selected rule."""
    category: str | None = None
    """``Decision``, ``Commitment``, ...; None when the ground truth has no categories
    (LoCoMo), which leaves the event out of category accuracy."""
    actor: str | None = None
    """Who did, decided or committed; None leaves the event out of actor accuracy."""
    due_date: str | None = None
    """When a commitment is due (ISO 8601 date), if it has a date."""
    date: str | None = None
    """When the event happened or was stated (ISO 8601), if known."""
    confidence: Confidence | None = None
    evidence: tuple[Evidence, ...] = ()


class ExpectedObservation(Record):
    """A fact a memory should capture from the document (observation coverage)."""

    text: str = Field(min_length=1)
    actor: str | None = None
    evidence: tuple[Evidence, ...] = ()


class ExpectedEntity(Record):
    """One real-world entity and every surface form the document uses for it."""

    name: str = Field(min_length=1)
    type: str = Field(min_length=1)
    """``PERSON``, ``ORG``, ``PROJECT``, ..."""
    role: str | None = None
    mentions: tuple[str, ...] = ()
    """Surface forms (``Alice``, ``Alice Chen``, ``AC``): the gold cluster for B-cubed; the
    name counts as a mention even when not listed."""


class GoldDocument(Record):
    """A document and what a perfect extractor takes out of it."""

    id: str = Field(min_length=1)
    text: str
    title: str | None = None
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    """Free-form; ``cluster`` (or ``conversation``, as LoCoMo's loader writes) groups
    documents that are not independent draws: intervals and rank tests resample the
    groups, not the documents."""
    events: tuple[ExpectedEvent, ...] = ()
    entities: tuple[ExpectedEntity, ...] = ()
    observations: tuple[ExpectedObservation, ...] = ()


class ExpectedConnection(Record):
    """An item graph expansion from the seed should reach, and why."""

    document_id: str | None = None
    """The document reached; None when only the event is known."""
    event: str | None = None
    """The event reached (or shared), by description."""
    reason: str = Field(min_length=1)
    """``shared_entity``, ``shared_event``, ``shared_actor``, ..."""
    entity: str | None = None
    """The entity the connection goes through (for ``shared_entity``)."""
    hops: int | None = Field(default=None, ge=1)
    relevance: Relevance = "medium"

    @model_validator(mode="after")
    def _target(self) -> ExpectedConnection:
        if self.document_id is None and self.event is None:
            raise ValueError("a connection needs a document_id, an event, or both")
        return self


class GraphCase(Record):
    """Expansion from one seed: what it should reach and what it should not."""

    seed_document: str = Field(min_length=1)
    seed_event: str | None = None
    expected_connections: tuple[ExpectedConnection, ...] = ()
    expected_not_connected: tuple[str, ...] = ()
    """Documents that expansion from the seed must not reach (false-positive rate)."""


class ExtractionGroundTruth(Record):
    """A ``recallbench.extraction/v1`` file."""

    format: Literal["recallbench.extraction/v1"] = GROUND_TRUTH_FORMAT
    name: str = Field(min_length=1)
    version: str = "1"
    description: str = ""
    documents: tuple[GoldDocument, ...]
    graph: tuple[GraphCase, ...] = ()
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    """Free-form; a loader of a third-party source writes ``metadata["loader"]`` (its
    rules and changes, as retrieval loaders do)."""


class ExtractedEvent(Record):
    """An event a system extracted."""

    description: str
    category: str | None = None
    actor: str | None = None
    due_date: str | None = None
    date: str | None = None


class ExtractedEntity(Record):
    """An entity a system extracted; its mentions are the system's cluster (B-cubed)."""

    name: str
    type: str | None = None
    mentions: tuple[str, ...] = ()


class ExtractedObservation(Record):
    """A fact a system stored as a memory."""

    text: str
    actor: str | None = None


class ExtractedDocument(Record):
    """What a system extracted from one document."""

    id: str = Field(min_length=1)
    events: tuple[ExtractedEvent, ...] = ()
    entities: tuple[ExtractedEntity, ...] = ()
    observations: tuple[ExtractedObservation, ...] = ()


class ExtractedConnection(Record):
    """An item a system's graph expansion returned from a seed."""

    document_id: str | None = None
    event: str | None = None
    reason: str | None = None
    entity: str | None = None
    hops: int | None = None


class Expansion(Record):
    """A system's expansion from one seed document."""

    seed_document: str = Field(min_length=1)
    connections: tuple[ExtractedConnection, ...] = ()


class ExtractionOutput(Record):
    """A ``recallbench.extraction-output/v1`` file: one system's extraction of a corpus."""

    format: Literal["recallbench.extraction-output/v1"] = OUTPUT_FORMAT
    system: str = Field(min_length=1)
    documents: tuple[ExtractedDocument, ...] = ()
    expansions: tuple[Expansion, ...] = ()
    metadata: dict[str, JsonValue] = Field(default_factory=dict)


def _unique(items: Any, field: str, key: str) -> Iterator[Problem]:
    """A located problem for every repeated ``key`` among the objects of list ``field``."""
    if not isinstance(items, list):
        return
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        value = item.get(key) if isinstance(item, dict) else None
        if not isinstance(value, str):
            continue
        if value in seen:
            yield Problem(
                json_path([field, index, key]),
                f"duplicate {key} {json.dumps(value)} (first at {field}[{seen[value]}])",
            )
        else:
            seen[value] = index


def _ids(items: Any) -> set[str]:
    if not isinstance(items, list):
        return set()
    return {i["id"] for i in items if isinstance(i, dict) and isinstance(i.get("id"), str)}


def ground_truth_problems(data: Any) -> Iterator[Problem]:
    """What pydantic cannot see: duplicate document ids, graph cases naming unknown
    documents, a document both expected connected and not connected, empty mentions."""
    if not isinstance(data, dict):
        return
    documents = data.get("documents")
    if isinstance(documents, list) and not documents:
        yield Problem("documents", "the ground truth has no documents: there is nothing to score")
    yield from _unique(documents, "documents", "id")
    known = _ids(documents)
    for index, document in enumerate(documents if isinstance(documents, list) else []):
        entities = document.get("entities") if isinstance(document, dict) else None
        for e_index, entity in enumerate(entities if isinstance(entities, list) else []):
            mentions = entity.get("mentions") if isinstance(entity, dict) else None
            for m_index, mention in enumerate(mentions if isinstance(mentions, list) else []):
                if isinstance(mention, str) and not mention.strip():
                    where: list[int | str] = [
                        "documents",
                        index,
                        "entities",
                        e_index,
                        "mentions",
                        m_index,
                    ]
                    yield Problem(json_path(where), "empty mention")
    cases = data.get("graph")
    for index, case in enumerate(cases if isinstance(cases, list) else []):
        if not isinstance(case, dict):
            continue
        yield from _graph_case_problems(case, index, known)


def _graph_case_problems(case: dict[str, Any], index: int, known: set[str]) -> Iterator[Problem]:
    seed = case.get("seed_document")
    if isinstance(seed, str) and seed not in known:
        yield Problem(json_path(["graph", index, "seed_document"]), f"unknown document {seed!r}")
    reached: set[str] = set()
    connections = case.get("expected_connections")
    for c_index, connection in enumerate(connections if isinstance(connections, list) else []):
        target = connection.get("document_id") if isinstance(connection, dict) else None
        if not isinstance(target, str):
            continue
        reached.add(target)
        where = json_path(["graph", index, "expected_connections", c_index, "document_id"])
        if target not in known:
            yield Problem(where, f"unknown document {target!r}")
        elif target == seed:
            yield Problem(where, "the seed itself is not a connection")
    excluded = case.get("expected_not_connected")
    for x_index, target in enumerate(excluded if isinstance(excluded, list) else []):
        if not isinstance(target, str):
            continue
        where = json_path(["graph", index, "expected_not_connected", x_index])
        if target not in known:
            yield Problem(where, f"unknown document {target!r}")
        elif target in reached:
            yield Problem(where, f"{target!r} is also an expected connection")


def output_problems(data: Any) -> Iterator[Problem]:
    """Duplicate document ids and duplicate seeds in a system's output."""
    if not isinstance(data, dict):
        return
    yield from _unique(data.get("documents"), "documents", "id")
    yield from _unique(data.get("expansions"), "expansions", "seed_document")


def _check_format(data: Any, expected: str, source: str) -> None:
    if isinstance(data, dict) and data.get("format", expected) != expected:
        found = json.dumps(data.get("format"))
        raise DatasetError(source, [Problem("format", f"expected {expected!r}, got {found}")])


def validated_ground_truth(data: Any, source: str) -> ExtractionGroundTruth:
    """Validate raw JSON as extraction ground truth; every problem located, in one error."""
    _check_format(data, GROUND_TRUTH_FORMAT, source)
    return validate(ExtractionGroundTruth, data, source, list(ground_truth_problems(data)))


def validated_output(data: Any, source: str) -> ExtractionOutput:
    """Validate raw JSON as a system's extraction output; every problem located."""
    _check_format(data, OUTPUT_FORMAT, source)
    return validate(ExtractionOutput, data, source, list(output_problems(data)))


def load_ground_truth(path: Path) -> ExtractionGroundTruth:
    """Read and validate a ``recallbench.extraction/v1`` file."""
    return validated_ground_truth(read_json(path), str(path))


def load_output(path: Path) -> ExtractionOutput:
    """Read and validate a ``recallbench.extraction-output/v1`` file."""
    return validated_output(read_json(path), str(path))
