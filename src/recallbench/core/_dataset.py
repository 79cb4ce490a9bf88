"""Documents, queries, graded judgments and the dataset that holds them (DESIGN §3)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any, Final, Literal

from pydantic import Field, JsonValue, StrictBool, StrictInt, StrictStr

from recallbench.core._fingerprint import sha256_of
from recallbench.core._model import Record

DATASET_FORMAT: Final = "recallbench.dataset/v1"
TIERS = ("constitutional", "critical", "important", "normal", "temporary")
MAX_GRADE: Final = 3
"""The highest grade of the format (0 not relevant .. 3 highly relevant); a dataset with a
higher one is refused when loaded."""

Qrels = Mapping[str, Mapping[str, int]]
"""Query id -> {document id -> integer grade}. Grades 0..3; a negative grade means judged
non-relevant (trec_eval: in the pool, never relevant)."""


class Document(Record):
    """A memory: what a system under test ingests and returns."""

    id: StrictStr = Field(min_length=1)
    """Unique id; what runs and judgments refer to."""
    text: StrictStr
    """The memory's content."""
    title: StrictStr | None = None
    """Optional short title."""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    """Free metadata; recallbench reads `tier`, `folder`, `created_at`, `session_id`, `type`."""


class Query(Record):
    """A question put to the system under test."""

    id: StrictStr = Field(min_length=1)
    """Unique id; the key of the query's judgments."""
    text: StrictStr
    """What is sent to the system."""
    intent: StrictStr | None = None
    """The task the agent was doing (add_feature, fix_bug, find_decision, ...)."""
    category: StrictStr | None = None
    """The query's category in the dataset's taxonomy (reports break results down by it)."""
    session_id: StrictStr | None = None
    """The agent session the query belongs to, if any."""
    tags: tuple[StrictStr, ...] = ()
    """Free labels, for example `first-in-session`. The tag `abstention` marks the query
    unanswerable, as ``answerable: false`` does (files written before that field)."""
    answerable: StrictBool = True
    """False when the source says memory holds no answer to this question (LongMemEval's
    ``_abs`` questions, LoCoMo's adversarial ones): ``false_surface`` is averaged over these
    queries only. A query that is answerable but has no relevant judgment is not one of
    them: it is counted as "no relevant judgments" and left out of every mean."""
    unit: StrictStr | None = None
    """The unit (own haystack) the query is asked in, when the dataset has units."""
    chain: StrictStr | None = None
    """The decision chain (in the dataset's ``chains``) a decision query asks about: its
    members should come back together (causal chain completeness)."""
    min_recall: float | None = Field(default=None, ge=0, le=1)
    """The least recall this query must reach: `recallbench gate` fails when it does not
    (at the configured ``gates.min_recall_measure``, recall@10 by default)."""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    """Free metadata."""

    @property
    def unanswerable(self) -> bool:
        """Marked unanswerable, by ``answerable: false`` or the tag ``abstention``."""
        return not self.answerable or "abstention" in self.tags


class LabelSource(Record):
    """Where a label came from when not from the dataset's authors: a judge model filling
    unjudged results (``recallbench judge``), or an annotator."""

    source: Literal["llm", "manual", "harvest"]
    by: StrictStr | None = None
    """The judge model, or the annotator."""
    prompt: StrictStr | None = None
    """The judge's task and prompt version (``relevance v1``)."""
    confidence: float | None = Field(default=None, ge=0, le=1)
    """The judge's stated confidence."""


class DatasetRef(Record):
    """Identifies the exact dataset a run or report was made on."""

    name: str
    version: str
    sha256: str
    """Fingerprint of the dataset's content (see :attr:`Dataset.sha256`)."""
    loader: str | None = None
    """The loader that converted it from a third-party format and its version
    (``locomo/1``); None for datasets in recallbench's own format."""


class Dataset(Record):
    """A golden dataset: documents, queries and graded judgments (`recallbench.dataset/v1`)."""

    format: Literal["recallbench.dataset/v1"] = DATASET_FORMAT
    """Format tag; a reader refuses formats it does not know."""
    name: StrictStr = Field(min_length=1)
    version: StrictStr = "1"
    description: StrictStr = ""
    license: StrictStr | None = None
    relevance_threshold: StrictInt = 1
    """Binary measures count a document relevant when its grade is at least this (trec_eval -l)."""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    # at least one of each, checked when a dataset is loaded (see datasets._json_v1); code
    # may still build an empty one
    documents: tuple[Document, ...] = Field(json_schema_extra={"minItems": 1})
    """The memories; at least one."""
    queries: tuple[Query, ...] = Field(json_schema_extra={"minItems": 1})
    """The questions; at least one."""
    qrels: dict[StrictStr, dict[StrictStr, StrictInt]] = Field(
        json_schema_extra={
            "additionalProperties": {
                "type": "object",
                "additionalProperties": {"type": "integer", "maximum": MAX_GRADE},
            }
        }
    )
    """Query id -> {document id -> grade}; documents not listed are unjudged (grade 0).
    Grades run from 0 (judged, not relevant) to 3 (highly relevant); a grade above 3 is
    refused when the dataset is loaded. A negative grade is accepted and means judged
    non-relevant, as in trec_eval: the document is in the judged pool but never relevant,
    whatever the threshold."""
    chains: dict[StrictStr, tuple[StrictStr, ...]] = Field(default_factory=dict)
    """Decision chains: chain id -> the memories of one decision's causal chain (the
    incident or discussion behind it, the decision, its follow-ups)."""
    equivalence: dict[StrictStr, tuple[StrictStr, ...]] = Field(default_factory=dict)
    """Classes of interchangeable memories (near-duplicates, restatements): class id -> its
    members. With the equivalence rule, a hit on any member counts once for the class."""
    label_sources: dict[StrictStr, dict[StrictStr, LabelSource]] = Field(default_factory=dict)
    """Query id -> {document id -> where its grade in ``qrels`` came from}, for labels not
    given by the dataset's authors (an LLM judge's, an annotator's); every entry names a
    judged pair of ``qrels``. Reports count them and measure with and without them."""
    units: dict[StrictStr, tuple[StrictStr, ...]] = Field(default_factory=dict)
    """Separate haystacks: unit id -> the ids of its documents. When there are units,
    every query names its unit and each unit is run against a fresh store holding only
    its documents (LongMemEval: one haystack per question). A document may belong to
    several units."""

    @cached_property
    def sha256(self) -> str:
        """sha256 of the canonical JSON of the whole dataset: equal content, equal hash.
        Fields left at their defaults are left out, so that a field added to the format
        later does not change the hash of datasets that do not use it."""
        return sha256_of(self.model_dump(mode="json", exclude_defaults=True))

    @cached_property
    def documents_by_id(self) -> Mapping[str, Document]:
        return {document.id: document for document in self.documents}

    @property
    def ref(self) -> DatasetRef:
        loader = self.metadata.get("loader")
        made_by = (
            f"{loader.get('name')}/{loader.get('version')}" if isinstance(loader, dict) else None
        )
        return DatasetRef(name=self.name, version=self.version, sha256=self.sha256, loader=made_by)

    def replaced(self, **changes: Any) -> Dataset:
        """A new, validated dataset with ``changes``. Not ``model_copy``: that would carry
        the cached fingerprint and document index of this one over to the new one."""
        fields = {name: getattr(self, name) for name in type(self).model_fields}
        return type(self).model_validate({**fields, **changes})

    def unit_documents(self, unit: str) -> tuple[Document, ...]:
        """The documents of ``unit``, in the unit's order."""
        by_id = self.documents_by_id
        return tuple(by_id[doc_id] for doc_id in self.units[unit])

    def relevant(self, query_id: str) -> dict[str, int]:
        """The query's documents graded at or above the relevance threshold."""
        judged = self.qrels.get(query_id, {})
        return {doc: grade for doc, grade in judged.items() if grade >= self.relevance_threshold}
