"""Run a dataset against a system under test and record everything it returns."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from recallbench import __version__
from recallbench.core import (
    ConfigError,
    Dataset,
    Document,
    Query,
    QueryResult,
    RecallbenchError,
    Run,
    RunSpec,
    SystemUnderTestError,
)
from recallbench.core._run import RepeatedResult
from recallbench.runner._revision import git_revision
from recallbench.systems import SystemUnderTest

Progress = Callable[[int, int], None]
"""Called with (queries done, queries in all) after each query."""

Ingesting = Callable[[int], None]
"""Called with the number of documents before each ingestion (so a long one shows)."""

DEFAULT_RESTARTS = 3
"""How many times a run restarts a system whose process hung or died, at most."""


async def _ask(system: SystemUnderTest, query: Query, k: int) -> QueryResult:
    before = time.perf_counter_ns()
    try:
        hits = tuple(await system.search(query, k))
    except Exception as error:  # a failing query is data, not a crash
        elapsed = _latency(system, query, (time.perf_counter_ns() - before) / 1e6)
        return QueryResult(query_id=query.id, latency_ms=elapsed, error=_describe(error))
    elapsed = _latency(system, query, (time.perf_counter_ns() - before) / 1e6)
    pre_expansion = getattr(system, "last_pre_expansion", None)
    size = len(json.dumps([hit.model_dump(mode="json") for hit in hits]).encode())
    return QueryResult(
        query_id=query.id,
        hits=hits,
        latency_ms=elapsed,
        output_bytes=size,
        pre_expansion=pre_expansion,
    )


def _latency(system: SystemUnderTest, query: Query, measured: float) -> float | None:
    """The measured wall time, or, for a replayed system, the latency recorded with the live
    system (None when the recording has none): reading an answer back is not searching."""
    recorded = getattr(system, "recorded_latency_ms", None)
    return recorded(query.id) if callable(recorded) else measured


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _groups(dataset: Dataset) -> list[tuple[Sequence[Document], list[Query]]]:
    """(documents to ingest, queries to ask) in turn: the whole dataset at once, or, when
    it has units, each unit with its own queries (units in order of their first query)."""
    if not dataset.units:
        return [(dataset.documents, list(dataset.queries))]
    asked: dict[str, list[Query]] = {}
    for query in dataset.queries:
        asked.setdefault(query.unit or "", []).append(query)
    return [(dataset.unit_documents(unit), queries) for unit, queries in asked.items()]


async def run_dataset(
    dataset: Dataset,
    system: SystemUnderTest,
    k: int = 100,
    progress: Progress | None = None,
    repeat: int = 1,
    session_context: bool = True,
    restarts: int = DEFAULT_RESTARTS,
    ingesting: Ingesting | None = None,
) -> Run:
    """Ingest the dataset's documents, then search every query once, in dataset order; for
    a dataset with units, each unit in turn gets a fresh store with only its documents.

    With ``repeat`` > 1 each query is searched that many times in a row, on the same store:
    the first answer is the one recorded in ``results`` (and scored), the later ones go to
    ``repeats``, only to check that the system answers alike. ``progress`` counts queries.

    With ``session_context=False`` every query is asked without its ``session_id`` (a
    copy; the dataset is not changed), so a session-aware system answers each query alone.

    A system whose process hung or died says so (``needs_restart``); it is then set up
    afresh with the same documents before the next query, at most ``restarts`` times in
    all, and the run's spec counts the restarts. The query that hit the fault keeps its
    error (asking it again could hang again).

    A query whose search raises is recorded with its error and the run goes on; it scores 0.
    Latency is the wall time of the ``search`` call on the monotonic clock (for a replayed
    system, the latency recorded with the live one); output bytes are the size of the hits
    as compact JSON. The system is closed whatever happens.
    """
    if repeat < 1:
        raise ConfigError(f"repeat must be at least 1, not {repeat}")
    started = datetime.now(UTC)
    results: list[QueryResult] = []
    repeats: list[RepeatedResult] = []
    ingest_seconds = 0.0
    done, total = 0, len(dataset.queries)
    restarted = 0
    try:
        for documents, queries in _groups(dataset):
            if ingesting is not None:
                ingesting(len(documents))
            ingest_start = time.perf_counter()
            await _setup(system, documents)
            ingest_seconds += time.perf_counter() - ingest_start
            for query in queries:
                if not session_context and query.session_id is not None:
                    query = query.model_copy(update={"session_id": None})
                results.append(await _ask(system, query, k))
                if repeat > 1:
                    repeats.append(await _repeat(system, query, k, repeat - 1))
                done += 1
                if progress is not None:
                    progress(done, total)
                if restarted < restarts and getattr(system, "needs_restart", False):
                    restarted += 1
                    await _restart(system, documents)
                # a system that never suspends would hold off Ctrl-C until the run ends
                await asyncio.sleep(0)
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
        replayed_from=getattr(system, "replayed_from", None),
        restarts=restarted,
    )
    return Run(spec=spec, results=tuple(results), repeats=tuple(repeats))


async def _setup(system: SystemUnderTest, documents: Sequence[Document]) -> None:
    try:
        await system.setup(documents)
    except RecallbenchError:
        raise
    except Exception as error:
        raise SystemUnderTestError(
            f"system {system.name!r} failed to ingest the corpus: {_describe(error)}"
        ) from error


async def _restart(system: SystemUnderTest, documents: Sequence[Document]) -> None:
    """Set the system up afresh; when that fails, the later queries fail with its error
    (and are counted), the run goes on."""
    try:
        await system.setup(documents)
    except Exception:  # the next search reports the system as not running
        return


async def _repeat(system: SystemUnderTest, query: Query, k: int, times: int) -> RepeatedResult:
    """Ask a query ``times`` more times; keep the returned ids and errors only."""
    answers = [await _ask(system, query, k) for _ in range(times)]
    errors = tuple(answer.error for answer in answers)
    return RepeatedResult(
        query_id=query.id,
        rankings=tuple(tuple(hit.doc_id for hit in answer.hits) for answer in answers),
        errors=errors if any(error is not None for error in errors) else (),
    )
