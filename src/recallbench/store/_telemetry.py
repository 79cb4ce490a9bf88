"""Rows of the online telemetry: what agents asked, what memory returned, what they did next.

The SDK logger (``recallbench.telemetry``) and the MCP proxy write them; ``recallbench
harvest`` reads them into a golden dataset. Plain frozen dataclasses, so that writing does
not pay for validation on the caller's thread.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

FeedbackKind = Literal[
    "read_after_search",
    "re_search",
    "scroll_past",
    "reference",
    "validated_useful",
    "validated_not_useful",
]
FEEDBACK_KINDS: tuple[FeedbackKind, ...] = (
    "read_after_search",
    "re_search",
    "scroll_past",
    "reference",
    "validated_useful",
    "validated_not_useful",
)

JudgmentSource = Literal["manual", "implicit", "bootstrapped", "validated", "llm"]
JUDGMENT_SOURCES: tuple[JudgmentSource, ...] = (
    "manual",
    "implicit",
    "bootstrapped",
    "validated",
    "llm",
)


@dataclass(frozen=True, slots=True)
class QueryLogEntry:
    """One search an agent made, with the ranked results it got."""

    query_id: str
    """Unique id (the SDK uses a uuid4 hex); feedback refers to it."""
    text: str
    created_at: datetime
    """When the search was made (UTC, timezone-aware)."""
    results: tuple[str, ...] = ()
    """Returned memory ids, best first."""
    intent: str | None = None
    mode: str | None = None
    """How the search was made (hybrid, lexical, ... as the system names it)."""
    session_id: str | None = None
    tool: str | None = None
    """The MCP tool (or function) that served it."""
    channels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Per retrieval channel, the ids it contributed."""
    texts: dict[str, str] = field(default_factory=dict)
    """Result id -> the memory's text as the system returned it (what harvest turns into the
    dataset's documents); may be empty when the caller logs ids only."""
    latency_ms: float | None = None
    trace_id: str | None = None
    golden: bool = False
    """Whether the query is in the golden set (set by harvest or by hand)."""
    category: str | None = None


@dataclass(frozen=True, slots=True)
class FeedbackEvent:
    """What the agent did with a result: read it, searched again, scrolled past, ..."""

    query_id: str
    kind: FeedbackKind
    created_at: datetime
    doc_id: str | None = None
    """The result concerned (None for a re-search, which concerns the whole list)."""
    rank: int | None = None
    """1-based rank of ``doc_id`` in the query's results."""
    session_id: str | None = None
    event_id: str = field(default_factory=lambda: uuid.uuid4().hex, compare=False)
    """The event's own id, drawn when it is made (unique per workspace, m012): a batch
    written again after a failure that came after its commit stores nothing twice. Not
    compared: two events saying the same thing are equal whatever their ids."""


@dataclass(frozen=True, slots=True)
class Judgment:
    """A graded judgment of a memory for a logged query; unique per (query, doc, source)."""

    query_id: str
    doc_id: str
    grade: int
    """0-3."""
    source: JudgmentSource
    created_at: datetime
    annotator: str | None = None
    confidence: float | None = None
