"""The report format, `recallbench.report/v1`: everything needed to trust and reuse a result."""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal

from pydantic import Field

from recallbench.core import DatasetRef, RunSpec
from recallbench.core._judged import JudgeSummary
from recallbench.core._model import Record
from recallbench.report._channels import ChannelAnalysis

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
    unmatched: int = Field(default=0, ge=0, exclude_if=lambda value: not value)
    """Returned results that matched no document of the dataset (not scored), over every
    search including repeats, as the system counted them (an MCP server's); left out when
    none did."""
    returned: int | None = Field(default=None, exclude_if=lambda value: value is None)
    """Results returned in all, matched or not, when some matched no document."""
    not_ingested: int = Field(default=0, ge=0, exclude_if=lambda value: not value)
    """Documents the system refused to store (``[ingest] on_error = "skip"``)."""


class Distribution(Record):
    """Percentiles use linear interpolation between order statistics (numpy's default)."""

    n: int
    mean: float
    p50: float
    p95: float
    p99: float
    max: float


SMALL_N: Final = 30
"""Fewer queries than this: a bootstrap interval of a mean tends to be too narrow (it covers
the true mean less often than its level says); reports flag such intervals."""


class Interval(Record):
    """The bootstrap confidence interval of one mean (``Report.bootstrap`` says how it was
    made). ``low`` and ``high`` are null when there is none, and ``reason`` says why."""

    n: int
    """Queries the mean takes."""
    low: float | None = None
    high: float | None = None
    small: bool = False
    """n < ``Bootstrap.small_n``: the interval tends to cover the mean less often than its
    level says."""
    reason: str | None = None
    """Why there is no interval (n < 2, or an aggregate that is not a mean of per-query
    values)."""


class Bootstrap(Record):
    """How every interval of a report was made."""

    method: Literal["bca", "percentile"]
    level: float
    """Confidence level (0.95)."""
    resamples: int
    seed: int
    small_n: int = SMALL_N
    """Groups with fewer queries are flagged: their intervals under-cover."""
    description: str
    """The procedure in words, with its citation."""


class Group(Record):
    name: str
    n: int
    """Queries of the group that enter the means."""
    excluded: int
    """Queries of the group left out of the means."""
    means: dict[str, float | None]
    intervals: dict[str, Interval] = Field(default_factory=dict)
    """Per measure, the bootstrap interval of its mean over the group's queries."""


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


class SessionLift(Record):
    """What the session's earlier queries bring (``run --session-lift``): the same system on
    the same dataset with and without session context, paired per query."""

    measure: str
    """The measure compared (``mrr@10`` by default)."""
    n: int
    """Paired queries where context can matter: in the measure's population, with a
    session that asked an earlier query (in the same unit)."""
    n_all: int
    """All queries in the measure's population."""
    mean_with: float | None
    """Mean over the n paired queries with session context; null when n = 0."""
    mean_without: float | None
    """Mean over the same queries, each asked alone."""
    delta: float | None
    """mean_with - mean_without."""
    delta_all: float | None
    """The mean difference over all n_all queries."""
    ci_low: float | None
    ci_high: float | None
    p: float | None
    """Two-sided paired randomisation test of delta; null when n < 2."""
    wins: int
    """Paired queries better with session context."""
    ties: int
    losses: int
    method: str
    """How the runs, the interval and the test were made, in words."""


class Report(Record):
    """One system evaluated on one dataset (`recallbench.report/v1`)."""

    format: Literal["recallbench.report/v1"] = REPORT_FORMAT
    created_at: datetime
    recallbench_version: str
    git_revision: str | None
    dataset: DatasetRef
    relevance_threshold: int
    system: RunSpec
    k_searched: int | None = Field(default=None, exclude_if=lambda value: value is None)
    """How many results each search asked for when the system caps it below ``system.k``
    (an MCP profile's ``[search] max_k``): measures at cutoffs above it see at most that
    many results. Left out when searches asked for ``k``."""
    system_scores: bool = True
    """Whether the system returned scores; without them results are evaluated in the order
    the system returned them (unranked MCP servers, for example)."""
    rules: dict[str, str]
    """The metric rules applied (DESIGN §4), in words."""
    measures: list[MeasureInfo]
    counts: Counts
    means: dict[str, float | None]
    """Mean per measure over the evaluated queries (null when none)."""
    intervals: dict[str, Interval] = Field(default_factory=dict)
    """Per measure, the bootstrap interval of its mean (empty in reports made before
    intervals were added)."""
    bootstrap: Bootstrap | None = None
    """How the intervals were made: method, level, resamples, seed."""
    latency_ms: Distribution | None
    output_bytes: Distribution | None
    breakdowns: dict[str, list[Group]] = Field(default_factory=dict)
    """Means by query ``category`` and by ``intent``."""
    worst_queries: list[str]
    """Ids of the evaluated queries with the lowest mean over all measures."""
    details: dict[str, dict[str, list[str]]] = Field(default_factory=dict)
    """Per measure, per query, what the report lists: the must-surface memories a query
    missed, the chain members that did not come back."""
    warnings: list[str] = Field(default_factory=list)
    """What a reader must know before trusting the numbers: a k that reaches the whole
    haystack, questions the dataset's loader dropped or altered, and the like."""
    stability: Stability | None = None
    """With ``run --repeat N`` (N > 1): how often the system's answers changed."""
    session_lift: SessionLift | None = None
    """With ``run --session-lift``, for a system that accepts sessions: with minus without
    session context."""
    labels: dict[str, int] = Field(default_factory=dict, exclude_if=lambda value: not value)
    """Judged pairs by where their labels came from (``dataset``: the authors'; ``llm``:
    a judge's, see ``judge``), when the dataset says (its ``label_sources``)."""
    judge: JudgeSummary | None = Field(default=None, exclude_if=lambda value: value is None)
    """The judge behind the ``llm`` labels: model, prompt, failures and cost."""
    channels: ChannelAnalysis | None = None
    """Which retrieval channels produced the top results and how fusion reordered them;
    null when no hit carries a channel or only one channel appears in the whole run."""
    queries: list[QueryReport]
