"""Run a dataset against a system under test and record everything it returns."""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime

from recallbench._version import __version__
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
    """One line for a failed query; an error with a ``brief`` (a ``python:`` plugin's,
    naming its frames) gives that."""
    brief = getattr(error, "brief", None)
    if isinstance(brief, str):
        return brief
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _groups(
    dataset: Dataset, only: Collection[str] | None = None
) -> list[tuple[Sequence[Document], list[Query]]]:
    """(documents to ingest, queries to ask) in turn: the whole dataset at once, or, when
    it has units, each unit with its own queries (units in order of their first query).
    With ``only`` (a shard's query ids), just those queries, and the units that have any."""
    chosen = [q for q in dataset.queries if only is None or q.id in only]
    if not dataset.units:  # a shard with no query sets nothing up; a whole run always does
        return [(dataset.documents, chosen)] if chosen or only is None else []
    asked: dict[str, list[Query]] = {}
    for query in chosen:
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
    concurrency: int = 1,
    only: Collection[str] | None = None,
) -> Run:
    """Ingest the dataset's documents, then search every query once, in dataset order; for
    a dataset with units, each unit in turn gets a fresh store with only its documents.

    With ``repeat`` > 1 each query is searched that many times in a row, on the same store:
    the first answer is the one recorded in ``results`` (and scored), the later ones go to
    ``repeats``, only to check that the system answers alike. ``progress`` counts queries.

    With ``session_context=False`` every query is asked without its ``session_id`` (a
    copy; the dataset is not changed), so a session-aware system answers each query alone.

    With ``concurrency`` > 1, up to that many queries are out at once when the system says
    it takes concurrent calls (:func:`width`); the run is the same as a sequential one:
    results in dataset order, each latency the wall time of its own call, a query's repeats
    right after it. Queries that carry a session, asked with session context of a system
    that uses sessions, go one at a time (each is expanded with the ones before it).

    A system whose process hung or died says so (``needs_restart``); it is then set up
    afresh with the same documents before the next query, at most ``restarts`` times in
    all, and the run's spec counts the restarts. The query that hit the fault keeps its
    error (asking it again could hang again). With several queries out, a fault cannot be
    told from its bystanders: the answers from the first one that saw it on are dropped,
    the system is set up afresh (not counted) and those queries are asked again one at a
    time, so that errors and restarts fall on the same queries as in a sequential run.

    With ``only`` (the query ids of a shard, :mod:`._shard`), just those queries are asked,
    in dataset order, and only the units that hold them are set up; the run's spec still
    names the whole dataset (`recallbench merge` joins the shards' runs).

    A query whose search raises is recorded with its error and the run goes on; it scores 0.
    Latency is the wall time of the ``search`` call on the monotonic clock (for a replayed
    system, the latency recorded with the live one); output bytes are the size of the hits
    as compact JSON. The system is closed whatever happens.
    """
    if repeat < 1:
        raise ConfigError(f"repeat must be at least 1, not {repeat}")
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, not {concurrency}")
    started = datetime.now(UTC)
    groups = _groups(dataset, only)
    state = _State(system, k, repeat, restarts, progress, sum(len(q) for _, q in groups))
    ingest_seconds = 0.0
    try:
        for documents, queries in groups:
            if ingesting is not None:
                ingesting(len(documents))
            ingest_start = time.perf_counter()
            await _setup(system, documents)
            ingest_seconds += time.perf_counter() - ingest_start
            if not session_context:
                queries = [
                    q.model_copy(update={"session_id": None}) if q.session_id is not None else q
                    for q in queries
                ]
            state.documents = documents
            wide = width(system, concurrency, queries, session_context)
            if wide > 1:
                await state.concurrently(queries, wide)
            else:
                await state.in_turn(queries)
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
        restarts=state.restarted,
    )
    return Run(spec=spec, results=tuple(state.results), repeats=tuple(state.repeats))


def width(
    system: SystemUnderTest, concurrency: int, queries: Sequence[Query], session_context: bool
) -> int:
    """How many queries may be out at once: ``concurrency``, capped by the system's
    ``max_concurrency`` (None: no cap; a system without the attribute takes one call at a
    time); 1 when a query's answer depends on the ones asked before it (session context)."""
    if concurrency <= 1:
        return 1
    sessions = any(query.session_id is not None for query in queries)
    if sessions and session_context and getattr(system, "accepts_session", False):
        return 1
    cap = getattr(system, "max_concurrency", 1)
    return concurrency if cap is None else max(1, min(concurrency, int(cap)))


Answer = tuple[QueryResult, RepeatedResult | None]


class _State:
    """What a run has gathered so far, and how it asks a unit's queries."""

    def __init__(
        self,
        system: SystemUnderTest,
        k: int,
        repeat: int,
        restarts: int,
        progress: Progress | None,
        total: int,
    ) -> None:
        self.system, self.k, self.repeat, self.restarts = system, k, repeat, restarts
        self.progress, self.total = progress, total
        self.documents: Sequence[Document] = ()
        self.results: list[QueryResult] = []
        self.repeats: list[RepeatedResult] = []
        self.restarted = 0

    async def answer(self, query: Query) -> Answer:
        """The query's answer, then its repeats (in a row, as sequentially)."""
        result = await _ask(self.system, query, self.k)
        again = (
            await _repeat(self.system, query, self.k, self.repeat - 1) if self.repeat > 1 else None
        )
        return result, again

    def keep(self, answer: Answer) -> None:
        result, again = answer
        self.results.append(result)
        if again is not None:
            self.repeats.append(again)
        if self.progress is not None:
            self.progress(len(self.results), self.total)

    @property
    def broken(self) -> bool:
        return bool(getattr(self.system, "needs_restart", False))

    async def after(self) -> None:
        """What follows each query asked alone: a restart when the system needs one."""
        if self.restarted < self.restarts and self.broken:
            self.restarted += 1
            await _restart(self.system, self.documents)

    async def in_turn(self, queries: Sequence[Query]) -> None:
        for query in queries:
            self.keep(await self.answer(query))
            await self.after()
            # a system that never suspends would hold off Ctrl-C until the run ends
            await asyncio.sleep(0)

    async def concurrently(self, queries: Sequence[Query], wide: int) -> None:
        """Up to ``wide`` queries out at once, kept in order. When an answer comes while the
        system needs a restart, it and every later one are dropped (forgotten by a
        recording), the system is set up afresh, and the queries that were out are asked
        again in turn; then the rest, concurrently again."""
        position = 0
        while position < len(queries):
            if self.restarted >= self.restarts and hasattr(self.system, "needs_restart"):
                # no restart left: as sequentially, a broken system stays broken
                await self.in_turn(queries[position:])
                return
            pending: deque[asyncio.Task[Answer]] = deque()
            issued = position
            try:
                while position < len(queries):
                    while issued < len(queries) and len(pending) < wide:
                        pending.append(asyncio.create_task(self.answer(queries[issued])))
                        issued += 1
                    answer = await pending[0]
                    pending.popleft()
                    if self.broken:
                        break
                    self.keep(answer)
                    position += 1
            finally:
                for task in pending:
                    task.cancel()
                if pending:
                    await asyncio.gather(*pending, return_exceptions=True)
            if position < len(queries):  # the loop broke: a fault with queries out
                self._forget(queries[position:issued])
                await _restart(self.system, self.documents)
                await self.in_turn(queries[position:issued])
                position = issued

    def _forget(self, queries: Sequence[Query]) -> None:
        forget = getattr(self.system, "forget", None)
        if callable(forget):
            for query in queries:
                forget(query.id)


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
