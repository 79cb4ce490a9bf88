"""The report format, `recallbench.report/v1`: everything needed to trust and reuse a result."""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal

from pydantic import Field

from recallbench.core import DatasetRef, RunSpec
from recallbench.core._model import Record

REPORT_FORMAT: Final = "recallbench.report/v1"

QueryStatus = Literal["ok", "failed", "missing", "no_relevant"]


class MeasureInfo(Record):
    name: str
    """Canonical name, the measure's identity (``ndcg@10``)."""
    definition: str
    higher_is_better: bool = True


class Counts(Record):
    queries: int
    """Queries in the dataset."""
    evaluated: int
    """Queries that enter the means."""
    no_relevant: int
    """Queries without a relevant judged document (left out of the means)."""
    failed: int
    """Queries whose search raised an error (scored 0, in the means)."""
    missing: int
    """Queries the run lacks (scored 0, in the means)."""
    duplicates: int
    """Returned documents that repeated an earlier one of the same query."""


class Distribution(Record):
    """Percentiles use linear interpolation between order statistics (numpy's default)."""

    n: int
    mean: float
    p50: float
    p95: float
    p99: float
    max: float


class Group(Record):
    name: str
    n: int
    """Queries of the group that enter the means."""
    excluded: int
    """Queries of the group left out of the means."""
    means: dict[str, float | None]


class QueryReport(Record):
    id: str
    text: str
    category: str | None = None
    intent: str | None = None
    status: QueryStatus
    included: bool
    """Whether the query enters the means."""
    error: str | None = None
    values: dict[str, float | None]
    """Per measure; null when the query is left out of the means."""
    latency_ms: float | None = None
    returned: list[str]
    """Returned document ids, best first (the first 20)."""
    relevant: dict[str, int]
    """Judged documents at or above the relevance threshold, with their grades."""
    min_recall: float | None = None
    """The least recall the dataset asks of this query (checked by ``recallbench gate``)."""


class Stability(Record):
    """Whether the system answered alike when each query was asked N times in a row
    (``run --repeat N``); the measures score the first answer."""

    repeats: int
    """N: how many times each query was asked."""
    queries: int
    """Queries compared: answered without error every time."""
    stable: int
    """Compared queries whose returned ids, in order, were identical in all N answers."""
    rate: float | None
    """stable / queries; null when no query was compared."""
    changed: list[str]
    """Ids of the compared queries whose ranking changed, in dataset order."""
    failed_in_some: int
    """Queries that failed in some but not all of the N answers (not compared)."""


class Report(Record):
    """One system evaluated on one dataset (`recallbench.report/v1`)."""

    format: Literal["recallbench.report/v1"] = REPORT_FORMAT
    created_at: datetime
    recallbench_version: str
    git_revision: str | None
    dataset: DatasetRef
    relevance_threshold: int
    system: RunSpec
    system_scores: bool = True
    """Whether the system returned scores; without them results are evaluated in the order
    the system returned them (unranked MCP servers, for example)."""
    rules: dict[str, str]
    """The metric rules applied (DESIGN §4), in words."""
    measures: list[MeasureInfo]
    counts: Counts
    means: dict[str, float | None]
    """Mean per measure over the evaluated queries (null when none)."""
    latency_ms: Distribution | None
    output_bytes: Distribution | None
    breakdowns: dict[str, list[Group]] = Field(default_factory=dict)
    """Means by query ``category`` and by ``intent``."""
    worst_queries: list[str]
    """Ids of the evaluated queries with the lowest mean over all measures."""
    warnings: list[str] = Field(default_factory=list)
    """What a reader must know before trusting the numbers: a k that reaches the whole
    haystack, questions the dataset's loader dropped or altered, and the like."""
    stability: Stability | None = None
    """With ``run --repeat N`` (N > 1): how often the system's answers changed."""
    queries: list[QueryReport]
