"""Run a dataset against a system under test and record everything it returns."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime

from recallbench import __version__
from recallbench.core import (
    Dataset,
    QueryResult,
    RecallbenchError,
    Run,
    RunSpec,
    SystemUnderTestError,
)
from recallbench.runner._revision import git_revision
from recallbench.systems import SystemUnderTest

Progress = Callable[[int, int], None]
"""Called with (queries done, queries in all) after each query."""


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


async def run_dataset(
    dataset: Dataset,
    system: SystemUnderTest,
    k: int = 100,
    progress: Progress | None = None,
) -> Run:
    """Ingest the dataset's documents, then search every query once, in dataset order.

    A query whose search raises is recorded with its error and the run goes on; it scores 0.
    Latency is the wall time of the ``search`` call on the monotonic clock; output bytes are
    the size of the hits as compact JSON. The system is closed whatever happens.
    """
    started = datetime.now(UTC)
    results: list[QueryResult] = []
    try:
        ingest_start = time.perf_counter()
        try:
            await system.setup(dataset.documents)
        except RecallbenchError:
            raise
        except Exception as error:
            raise SystemUnderTestError(
                f"system {system.name!r} failed to ingest the corpus: {_describe(error)}"
            ) from error
        ingest_seconds = time.perf_counter() - ingest_start
        for done, query in enumerate(dataset.queries, start=1):
            before = time.perf_counter_ns()
            try:
                hits = tuple(await system.search(query, k))
            except Exception as error:  # a failing query is data, not a crash
                elapsed = (time.perf_counter_ns() - before) / 1e6
                results.append(
                    QueryResult(query_id=query.id, latency_ms=elapsed, error=_describe(error))
                )
            else:
                elapsed = (time.perf_counter_ns() - before) / 1e6
                size = len(json.dumps([hit.model_dump(mode="json") for hit in hits]).encode())
                results.append(
                    QueryResult(query_id=query.id, hits=hits, latency_ms=elapsed, output_bytes=size)
                )
            if progress is not None:
                progress(done, len(dataset.queries))
    finally:
        await system.close()
    spec = RunSpec(
        system=system.name,
        settings=system.settings(),
        dataset=dataset.ref,
        k=k,
        recallbench_version=__version__,
        git_revision=git_revision(),
        started_at=started,
        finished_at=datetime.now(UTC),
        ingest_seconds=ingest_seconds,
    )
    return Run(spec=spec, results=tuple(results))
