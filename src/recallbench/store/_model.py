"""What the store hands back for a recorded run: its summary, without per-query values."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class StoredRun:
    """One evaluation run as recorded in the history store.

    Per-query values are fetched separately (``Store.query_values``): a gate reading the
    summaries of a hundred runs must not pull a million values.
    """

    id: int
    workspace: str
    system: str
    dataset_name: str
    dataset_version: str
    dataset_sha256: str
    created_at: datetime
    """When the report was made (tz-aware UTC); history is ordered by it."""
    recorded_at: datetime
    """When the report entered the store (tz-aware UTC)."""
    accepted: bool
    """Whether the run was accepted as a baseline."""
    accepted_at: datetime | None
    k: int | None
    recallbench_version: str
    git_revision: str | None
    source: str | None
    """Where the report came from (a path, a CI job), as the recorder said."""
    queries: int
    evaluated: int
    failed: int
    missing: int
    no_relevant: int
    error_rate: float
    """``failed / queries`` (0 when there are no queries)."""
    latency_p50: float | None
    latency_p95: float | None
    latency_p99: float | None
    means: dict[str, float | None]
    """Measure -> mean, in the report's measure order."""
    higher_is_better: dict[str, bool]
    judge_model: str | None = None
    """The LLM judge that labelled some of the dataset's pairs (``recallbench judge``);
    None, like every ``judge_`` field, when the run used the dataset authors' labels alone
    or was recorded before the store kept the judge."""
    judge_prompt: str | None = None
    """The judge's task and prompt version, e.g. ``relevance v1``."""
    llm_labels: int | None = None
    """Judged pairs whose label came from the judge."""
    judge_failure_rate: float | None = None
    """The share of the judge's judgments that failed (gave no label)."""
    judge_unreliable: bool | None = None
    """The failure rate was above the judge's limit: the judged numbers are mostly filler."""
    judge_tokens: int | None = None
    """Tokens the judgments took, in and out."""
    judge_cost: float | None = None
    """What the judgments cost in USD at the configured prices."""
