"""What a system returned for each query, with enough context to recompute every measure."""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal

from pydantic import Field, JsonValue, StrictStr, model_validator

from recallbench.core._dataset import DatasetRef
from recallbench.core._model import Record

RUN_FORMAT: Final = "recallbench.run/v1"


class Hit(Record):
    """One returned document, in the order the system returned it."""

    doc_id: StrictStr
    score: float | None = Field(default=None, allow_inf_nan=False)
    """The system's own score, when it gives one: a finite number (JSON has no NaN or
    infinity, and a TREC file holding one would be refused)."""
    channels: tuple[str, ...] = ()
    """Retrieval channels that produced this hit (lexical, dense, graph, ...)."""
    channel_ranks: dict[str, int] = Field(default_factory=dict, exclude_if=lambda value: not value)
    """The hit's 1-based rank in each channel's own ranking, before fusion (only the channels
    that found it). Left out of the file when the system does not say."""


class QueryResult(Record):
    """A query's ranked results, or the error that prevented them."""

    query_id: StrictStr
    hits: tuple[Hit, ...] = ()
    latency_ms: float | None = None
    """Wall time of the search call (monotonic clock)."""
    output_bytes: int | None = None
    """Size of the results as the system returned them."""
    error: str | None = None
    """Why the query failed; a failed query scores 0 and counts in the means."""
    pre_expansion: tuple[str, ...] | None = Field(
        default=None, exclude_if=lambda value: value is None
    )
    """Returned document ids the query alone would have got, when the system expanded it
    (with its session's earlier queries, for example); left out of the file otherwise."""

    @property
    def failed(self) -> bool:
        return self.error is not None


class RepeatedResult(Record):
    """The later answers to a query asked several times in a row (``run --repeat N``):
    kept to check that the system answers alike, never scored."""

    query_id: StrictStr
    rankings: tuple[tuple[str, ...], ...]
    """Returned document ids of answers 2..N, in order; empty for an answer that failed."""
    errors: tuple[str | None, ...] = ()
    """Empty when every one of these answers succeeded; otherwise one per ranking: why
    that answer failed, or null."""

    @model_validator(mode="after")
    def _aligned(self) -> RepeatedResult:
        if self.errors and len(self.errors) != len(self.rankings):
            raise ValueError("errors must be empty or hold one entry per ranking")
        return self


class RunSpec(Record):
    """How the run was made: system, settings, dataset, software, time."""

    system: str
    """Name of the system under test (for imported TREC runs: the run tag)."""
    settings: dict[str, JsonValue] = Field(default_factory=dict)
    dataset: DatasetRef | None = None
    k: int | None = None
    """Number of results requested per query."""
    recallbench_version: str | None = None
    git_revision: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    ingest_seconds: float | None = None
    ordering: Literal["as-returned", "score-desc-docid-desc"] = "as-returned"
    """How hits were ordered: as the system returned them, or trec_eval's rule for imports."""
    replayed_from: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """The recording the answers were replayed from (``run --replay``), or null for a live
    run. A replayed run's latencies are those recorded with the live system."""
    restarts: int = Field(default=0, ge=0, exclude_if=lambda value: not value)
    """How many times the system's process was restarted during the run because it hung
    (no answer within its call timeout) or died; left out of the file when none was."""


class Run(Record):
    """A recorded run (`recallbench.run/v1`)."""

    format: Literal["recallbench.run/v1"] = RUN_FORMAT
    spec: RunSpec
    results: tuple[QueryResult, ...]
    repeats: tuple[RepeatedResult, ...] = Field(default=(), exclude_if=lambda value: not value)
    """With ``--repeat N``: each query's answers 2..N (``results`` holds the first, the one
    scored). Left out of the file when the run asked each query once."""

    def ranking(self, query_id: str) -> list[str] | None:
        """The returned document ids of a query, or None when the run lacks it."""
        for result in self.results:
            if result.query_id == query_id:
                return [hit.doc_id for hit in result.hits]
        return None
