"""A golden set from trace files, and trace files into the store.

:func:`harvest_traces` reads the files as a query log (:func:`~recallbench.online._traces.
read_traces`) and applies the harvest's own rules (:func:`~recallbench.online._harvest.
harvest`: de-duplication, sampling by intent, grades from feedback, provenance), so its
dataset is the one a harvest from the store gives after :func:`import_traces` of the same
files. What only traces know is added to each query's metadata:

- ``trace``: ``{"source": "trace", "spans": [{file, trace_id, span_id, convention,
  scores}]}``, one per logged search behind the query;
- ``provenance[memory]["spans"]``: the ids of the tool spans whose reads gave the
  ``read_after_search`` events (empty when there were none).

:func:`import_traces` writes the same query log and feedback into the store, each search
once whatever the number of imports (its id is ``<trace id>:<span id>``), so that the
online measures, ``shadow`` and ``status`` views see the traffic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from recallbench.core import Dataset, Query
from recallbench.online._harvest import (
    HarvestStats,
    NothingHarvestedError,
    harvest,
    nothing_harvested,
)
from recallbench.online._traces import TraceFormat, TraceLog, read_traces


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import of trace files did."""

    log: TraceLog
    queries: int
    """Searches logged now."""
    already: int
    """Searches already in the store (an earlier import), left as they were."""
    events: int
    """Feedback events logged now."""
    store: str
    workspace: str


def harvest_traces(
    paths: Sequence[Path],
    *,
    trace_format: TraceFormat | None = None,
    read_tools: frozenset[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    name: str = "harvested",
    sample_per_intent: int | None = None,
    seed: int = 0,
) -> tuple[Dataset, HarvestStats, TraceLog]:
    """A golden dataset from trace files (module docstring). NothingHarvestedError, saying
    why, when no query could be harvested; TraceFileError for a malformed file."""
    log = read_traces(paths, trace_format, read_tools)
    entries = [
        entry
        for entry in log.entries
        if (since is None or entry.created_at >= since)
        and (until is None or entry.created_at < until)
    ]
    kept = {entry.query_id for entry in entries}
    dataset, stats = harvest(
        entries,
        [event for event in log.feedback if event.query_id in kept],
        (),
        name=name,
        sample_per_intent=sample_per_intent,
        seed=seed,
        metadata={
            "source": "trace",
            "traces": [
                {"file": file.path, "format": file.format, "spans": file.spans}
                for file in log.files
            ],
            "since": since.isoformat() if since else None,
            "until": until.isoformat() if until else None,
        },
    )
    if not dataset.queries:
        where = ", ".join(file.path for file in log.files)
        raise NothingHarvestedError(f"{nothing_harvested(stats, where)}. Nothing written")
    queries = tuple(_with_spans(query, log) for query in dataset.queries)
    return dataset.model_copy(update={"queries": queries}), stats, log


def _with_spans(query: Query, log: TraceLog) -> Query:
    logged: list[str] = [str(qid) for qid in _list(query.metadata.get("logged_query_ids"))]
    spans: list[JsonValue] = []
    for query_id in logged:
        origin = log.origins[query_id]
        spans.append(
            {
                "file": origin.file,
                "trace_id": origin.trace_id,
                "span_id": origin.span_id,
                "convention": origin.convention,
                "scores": list(origin.scores),
            }
        )
    provenance: dict[str, Any] = dict(_dict(query.metadata.get("provenance")))
    for doc, given in provenance.items():
        reads = [span for qid in logged for span in log.read_spans.get((qid, doc), [])]
        provenance[doc] = {**_dict(given), "spans": reads}
    metadata = {
        **query.metadata,
        "provenance": provenance,
        "trace": {"source": "trace", "spans": spans},
    }
    return query.model_copy(update={"metadata": metadata})


def _list(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


def _dict(value: object) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def import_traces(
    paths: Sequence[Path],
    store_url: str | None,
    workspace: str,
    *,
    trace_format: TraceFormat | None = None,
    read_tools: frozenset[str] | None = None,
) -> ImportResult:
    """Read ``paths`` whole, then log their searches and feedback in the store in one
    transaction, skipping searches an earlier import logged (and their feedback)."""
    from recallbench.store import open_store

    log = read_traces(paths, trace_format, read_tools)
    with open_store(store_url, workspace) as store:
        queries, events = store.log_new(log.entries, log.feedback)
        url = store.url
    return ImportResult(log, queries, len(log.entries) - queries, events, url, workspace)
