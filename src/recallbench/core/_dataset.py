"""Documents, queries, graded judgments and the dataset that holds them (DESIGN §3)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Final, Literal

from pydantic import Field, JsonValue, StrictInt, StrictStr

from recallbench.core._fingerprint import sha256_of
from recallbench.core._model import Record

DATASET_FORMAT: Final = "recallbench.dataset/v1"
TIERS = ("constitutional", "critical", "important", "normal", "temporary")

Qrels = Mapping[str, Mapping[str, int]]
"""Query id -> {document id -> integer grade}. Grades 0..3 by convention."""


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
    """Free labels, for example `abstention` or `first-in-session`."""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    """Free metadata."""


class DatasetRef(Record):
    """Identifies the exact dataset a run or report was made on."""

    name: str
    version: str
    sha256: str
    """Fingerprint of the dataset's content (see :attr:`Dataset.sha256`)."""


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
    documents: tuple[Document, ...]
    queries: tuple[Query, ...]
    qrels: dict[StrictStr, dict[StrictStr, StrictInt]]
    """Query id -> {document id -> grade}; documents not listed are unjudged (grade 0)."""

    @cached_property
    def sha256(self) -> str:
        """sha256 of the canonical JSON of the whole dataset: equal content, equal hash."""
        return sha256_of(self.model_dump(mode="json"))

    @cached_property
    def documents_by_id(self) -> Mapping[str, Document]:
        return {document.id: document for document in self.documents}

    @property
    def ref(self) -> DatasetRef:
        return DatasetRef(name=self.name, version=self.version, sha256=self.sha256)

    def relevant(self, query_id: str) -> dict[str, int]:
        """The query's documents graded at or above the relevance threshold."""
        judged = self.qrels.get(query_id, {})
        return {doc: grade for doc, grade in judged.items() if grade >= self.relevance_threshold}
