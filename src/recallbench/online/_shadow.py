"""Shadow mode of ``recallbench proxy`` (``--shadow PROFILE``): a second memory server, the
candidate, is kept in step with the agent's and answers a sample of its searches, in the
dark, so that the two rankings can be compared on real traffic.

The shadow observes the proxy's sessions: it implements
:class:`~recallbench.online._session_observer.SessionObserver`, the calls the proxy makes,
and knows nothing else of the proxy; the serving code starts both and hands it over.

* Writes: every call of the primary profile's ingest tool that the primary accepted goes to
  the candidate too, mapped to the candidate's ingest tool
  (:func:`~recallbench.online._shadow_calls.write_calls`). When the candidate is the same
  server as the primary (the same install and command, another store or settings), every
  other call the primary accepted but its search and read tools goes to the candidate as
  it came, so that updates and deletes keep both stores in step (tools the server
  annotates ``readOnlyHint`` are not mirrored); between different servers there is no
  mapping for them, and they are not mirrored.
* Searches: sampled by the sha256 of the query text
  (:func:`~recallbench.online._shadow_calls.sampled`), so the same query is always in or
  always out; the candidate gets the primary's arguments (same tool and template) or its
  own template filled with the query and ``k``.
* Off the agent's path: the agent's answer is returned first; the handler only puts a job
  in a bounded queue (full: the job is dropped and counted). One task sends the jobs to the
  candidate in order (a search sees the writes before it); the pair of ranked lists is
  parsed, compared and written to ``shadow_runs`` from the proxy's logging thread, in
  batches, the last batch when the proxy stops
  (:class:`~recallbench.online._shadow_rows.ShadowRuns`). A stdio candidate is reached as
  JSON-RPC lines (:class:`~recallbench.online._wire.LineClient`, not the SDK's session on
  the proxy's event loop) and runs niced (unless interleaving), so that its CPU goes after
  the agent's server's and the proxy's.
* Nothing lost uncounted: when the proxy stops, the jobs queued and in flight get the
  grace its calls get (:meth:`Shadow.drain`); what is unfinished then is counted as
  dropped, at its stage, and never written later (:meth:`Shadow.close`,
  :mod:`~recallbench.online._shadow_ledger`). Each sampled search ends as one row or one
  dropped pair, so the exit line's written and dropped add up to the searches sampled
  and the written are the rows.

Interleaving (``--interleave``, Radlinski, Kurup & Joachims 2008): a sampled search is put
in the candidate's queue *before* the agent's call goes to the primary (so it still comes
after the writes before it), and the primary's answer waits for the candidate at most
``wait`` seconds more (:class:`Pending`). With both ranked lists the agent is shown their
team-draft interleaving in the primary's answer shape
(:mod:`~recallbench.online._shadow_interleave`); when a shape cannot be rewritten safely
or the candidate is late or failed, the agent gets the primary's answer unchanged and the
reason is counted. ``shadow_runs.interleaved`` holds the shown list with each item's team
and ``interleaved_credited`` how many of its leading items are credited, so that a later
read or validation of a credited item credits the system that placed it (Chapelle,
Joachims, Radlinski & Yue 2012: ``c_A`` vs ``c_B`` per query, wins, ties and losses).
Without ``--interleave`` the agent's answers are the primary's, byte for byte.

A side that gave no readable search is stored with no results and a short message in its
error column (:mod:`~recallbench.online._shadow_rows`), and counted as an error; the
candidate's failures are also said on standard error (the first of each kind) and counted
in the summary line at exit, never passed to the agent.

The module is over 500 lines because :class:`Shadow` reads better whole: its methods keep
one account (each job offered is queued, staged, settled and handed over once, or counted
dropped at its stage), on the event loop. What stands alone is apart: the candidate's
calls (:mod:`~recallbench.online._shadow_calls`), the interleaved list and answer
(:mod:`~recallbench.online._shadow_interleave`), the rows written in the logging thread
(:mod:`~recallbench.online._shadow_rows`), the counts (:mod:`~recallbench.online._shadow_ledger`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import anyio

from recallbench.online._hits import query_path
from recallbench.online._shadow_calls import (
    mirrored_reader,
    sampled,
    search_arguments,
    write_calls,
)
from recallbench.online._shadow_interleave import NotInterleaved, interleave_answer
from recallbench.online._shadow_ledger import (
    AFTER_EXIT,
    AGENT_WAITED,
    FAILED,
    IN_FLIGHT,
    QUEUE_FULL,
    OpenWork,
    ShadowStats,
)
from recallbench.online._shadow_rows import Mirrored, ShadowRuns, describe, describe_error
from recallbench.online._wire import warn
from recallbench.systems._answers import select, text_of

if TYPE_CHECKING:
    from recallbench.online._upstream import Upstream
    from recallbench.online._wire import LineClient
    from recallbench.stats._interleaving import Interleaving
    from recallbench.store import Store
    from recallbench.systems._profile import Profile

SHADOW_QUEUE = 1_000
"""Jobs (writes and sampled searches) waiting for the candidate, at most; beyond, dropped."""
DEFAULT_PERCENT = 10.0
"""Searches mirrored by default (the design note's 10%)."""
IDLE_WAIT = 0.05
"""Seconds a mirrored job waits for the agent's calls in flight to end, at most: the
candidate's request goes between the agent's calls when there is a gap."""
DEFAULT_WAIT = 0.5
"""Seconds the primary's answer waits for the candidate's in interleaving mode, at most."""


@dataclass(eq=False)
class Pending:
    """An interleaved search: queued for the candidate before the primary is asked. The
    pair is written once both sides are known, by whichever comes second (the candidate's
    task, or the agent's call when it waited long enough)."""

    query_id: str
    query: str
    arguments: Mapping[str, Any]
    session_id: str | None = None
    started: float = field(default_factory=time.perf_counter)
    done: anyio.Event = field(default_factory=anyio.Event)
    """Set when the candidate has answered (or failed)."""
    answer: dict[str, Any] | None = None
    latency_ms: float = 0.0
    failure: str | None = None
    control: Mirrored | None = None
    """The primary's side, once the agent's call is answered."""
    interleaved: Interleaving[str] | None = None
    """What the agent was shown, by team, and what of it is credited (None: the primary's
    answer as it was)."""


@dataclass(frozen=True, slots=True, eq=False)
class Job:
    """One piece of the candidate's work (hashed by identity: it is tracked until done)."""

    kind: Literal["write", "search"]
    calls: tuple[Any, ...] = ()
    """For a write: the candidate's arguments, one call each."""
    tool: str | None = None
    """For a write: the candidate's tool (None: its ingest tool)."""
    search: Mirrored | None = None
    pending: Pending | None = None
    """For an interleaved search (``search`` is then None)."""
    session_id: str | None = None
    """The agent's session of a search."""


class Shadow:
    """Mirrors the agent's writes and sampled searches to ``candidate`` (see the module)."""

    def __init__(
        self,
        candidate: Upstream | LineClient,
        primary: Profile,
        profile: Profile,
        percent: float = DEFAULT_PERCENT,
        store: Store | None = None,
        size: int = SHADOW_QUEUE,
        interleave: bool = False,
        wait: float = DEFAULT_WAIT,
    ) -> None:
        self.candidate = candidate
        self.primary = primary
        self.profile = profile
        self.percent = percent
        self.interleave = interleave
        """Interleaving mode: sampled searches are shown team-draft interleaved."""
        self.wait = wait
        """Seconds the agent's answer waits for the candidate in interleaving mode."""
        self.stats = ShadowStats()
        self._query_path = query_path(primary.search.arguments)
        kind = (primary.install, primary.server.command)
        self._verbatim = kind == (profile.install, profile.server.command)
        """Mirror the primary's other accepted calls as they came (updates, deletes)."""
        self._not_mirrored = {primary.search.tool, *(r.tool for r in primary.proxy.read_tools)}
        self._reader = mirrored_reader(profile)
        self._warned: set[str] = set()
        self.runs = ShadowRuns(primary, self._reader, profile.name, self.stats, store, self._warn)
        """The pairs' rows, written in the proxy's logging thread."""
        self._send, self._receive = anyio.create_memory_object_stream[Job](size)
        self._work = OpenWork(self.stats)
        """The jobs not done yet: what is open when the proxy stops is counted dropped."""
        self._closed = False
        self._draining = False
        self._drained = anyio.Event()
        """Set once nothing is open while the proxy stops (:meth:`drain`)."""
        self._deadline = 0.0
        """When the exit grace ends (``time.monotonic``)."""
        self._calls = 0
        self._idle = anyio.Event()
        self._idle.set()
        """Set while none of the agent's calls is in flight."""

    @property
    def store(self) -> Store | None:
        """Where the runs go (None: nowhere, e.g. the store could not be opened)."""
        return self.runs.store

    @store.setter
    def store(self, store: Store | None) -> None:
        self.runs.store = store

    @property
    def submit(self) -> Callable[[Callable[[], None]], None]:
        """Runs the row writing: the proxy's logging thread (:meth:`attach`)."""
        return self.runs.submit

    @submit.setter
    def submit(self, submit: Callable[[Callable[[], None]], None]) -> None:
        self.runs.submit = submit

    def attach(self, submit: Callable[[Callable[[], None]], None]) -> None:
        """The proxy's logging thread (``submit``) writes the rows."""
        self.submit = submit

    async def check_tools(self) -> None:
        """SystemUnderTestError when the candidate lacks its ingest or search tool."""
        from recallbench.core import SystemUnderTestError

        tools = await self.candidate.tools()
        names = {str(tool.get("name")) for tool in tools}
        # what the server marks read-only changes nothing: not worth mirroring verbatim
        self._not_mirrored |= {
            str(tool.get("name"))
            for tool in tools
            if (tool.get("annotations") or {}).get("readOnlyHint") is True
        }
        for tool in (self.profile.ingest.tool, self.profile.search.tool):
            if tool not in names:
                raise SystemUnderTestError(
                    f"--shadow {self.profile.name}: the server has no tool {tool!r}"
                )

    def observe(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        answer: dict[str, Any] | None,
        latency_ms: float,
        query_id: str | None,
        error: BaseException | None = None,
        session_id: str | None = None,
    ) -> None:
        """After the agent's call was answered (or failed with ``error``, ``answer`` None):
        queue what the candidate must see. Never raises (the agent's call is done). In
        interleaving mode searches went through :meth:`begin` and are ignored here."""
        try:
            if tool == self.primary.ingest.tool and answer is not None:
                if not answer.get("isError"):  # the primary refused it: so does the shadow
                    calls = write_calls(self.primary.ingest, self.profile.ingest, arguments)
                    if calls:
                        self._offer(Job("write", calls=tuple(calls)))
            elif self._verbatim and tool not in self._not_mirrored and answer is not None:
                if not answer.get("isError"):
                    self._offer(Job("write", calls=(dict(arguments),), tool=tool))
            elif tool == self.primary.search.tool and not self.interleave:
                query = self._query(tool, arguments)
                if query is None:
                    return
                failure = None if error is None else describe(error)
                search = Mirrored(query_id or "", query, arguments, answer, latency_ms, failure)
                self._offer(Job("search", search=search, session_id=session_id))
        except Exception as error:
            self._warn("observe", f"could not mirror {tool}: {type(error).__name__}: {error}")

    def missed(self, tool: str, arguments: Mapping[str, Any]) -> None:
        """One of the agent's calls handed over once the shadow was closed (or the proxy's
        loop had stopped): counted as dropped when it would have been mirrored (a sampled
        search, a write), so that the exit line still holds it."""
        try:
            if tool == self.primary.search.tool:
                if self._query(tool, arguments) is not None:
                    self.stats.searches += 1
                    self.stats.drop(AFTER_EXIT)
            elif tool == self.primary.ingest.tool or (
                self._verbatim and tool not in self._not_mirrored
            ):
                self.stats.writes_dropped += 1
        except Exception as error:
            self._warn("observe", f"could not mirror {tool}: {type(error).__name__}: {error}")

    def _query(self, tool: str, arguments: Mapping[str, Any]) -> str | None:
        """The query of a search to mirror; None when ``tool`` is not the search, the query
        is missing or not sampled (counted)."""
        if tool != self.primary.search.tool or self._query_path is None:
            return None
        query = select(dict(arguments), ".".join(self._query_path))
        if query is None:
            return None
        if not sampled(str(query), self.percent):
            self.stats.sampled_out += 1
            return None
        return str(query)

    # --- interleaving ------------------------------------------------------------------

    def begin(
        self, tool: str, arguments: Mapping[str, Any], query_id: str, session_id: str | None
    ) -> Pending | None:
        """Interleaving mode, before the agent's call goes to the primary: queue a sampled
        search for the candidate (None: not a sampled search, or the queue is full)."""
        try:
            query = self._query(tool, arguments) if self.interleave else None
            if query is None:
                return None
            pending = Pending(query_id, query, dict(arguments), session_id)
            return pending if self._offer(Job("search", pending=pending)) else None
        except Exception as error:
            self._warn("observe", f"could not mirror {tool}: {type(error).__name__}: {error}")
            return None

    async def shown(
        self, pending: Pending, answer: dict[str, Any], latency_ms: float
    ) -> dict[str, Any]:
        """The answer the agent sees for an interleaved search the primary answered: the
        interleaving, once the candidate answers within ``wait``; else the primary's."""
        remaining = self.wait - (time.perf_counter() - pending.started)
        if not pending.done.is_set() and remaining > 0:
            with anyio.move_on_after(remaining):
                await pending.done.wait()
        shown = answer
        try:
            if not pending.done.is_set():
                self.stats.not_interleaved["late candidate"] += 1
            else:
                shown, pending.interleaved = self._interleave(pending, answer)
        except Exception as error:  # the agent gets the primary's answer, whatever happens
            self.stats.not_interleaved["errors"] += 1
            self._warn("interleave", f"could not interleave: {type(error).__name__}: {error}")
            shown, pending.interleaved = answer, None
        control = Mirrored(pending.query_id, pending.query, pending.arguments, answer, latency_ms)
        self._settle(pending, control)
        return shown

    def failed(self, pending: Pending, latency_ms: float, error: BaseException) -> None:
        """The primary failed an interleaved search: the pair is stored with its error."""
        control = Mirrored(
            pending.query_id, pending.query, pending.arguments, None, latency_ms, describe(error)
        )
        self._settle(pending, control)

    def _interleave(
        self, pending: Pending, answer: dict[str, Any]
    ) -> tuple[dict[str, Any], Interleaving[str] | None]:
        try:
            shown, interleaved = interleave_answer(
                self.primary, self._reader, answer, pending.answer, pending.query_id
            )
        except NotInterleaved as refusal:
            self.stats.not_interleaved[refusal.reason] += 1
            return answer, None
        self.stats.interleaved += 1
        return shown, interleaved

    def _settle(self, pending: Pending, control: Mirrored) -> None:
        pending.control = control
        if pending.done.is_set():  # the candidate was first: the pair is complete
            self._submit_pending(pending)

    def _submit_pending(self, pending: Pending) -> None:
        control = pending.control
        if control is None:
            return
        answer, latency, failure = pending.answer, pending.latency_ms, pending.failure
        interleaved, session_id = pending.interleaved, pending.session_id
        self._hand(
            pending,
            lambda: self.runs.record(control, answer, latency, failure, interleaved, session_id),
        )

    def _hand(self, key: Job | Pending, record: Callable[[], None]) -> None:
        """The pair of ``key`` is complete: to the logging thread, once (a pair counted as
        dropped at :meth:`close` is not written after it)."""
        if self._closed or not self._work.settle(key):
            return
        if self._draining and not self._work:
            self._drained.set()
        self.runs.hand(record)

    def _offer(self, job: Job) -> bool:
        """Queue ``job`` without waiting; False (counted as dropped) when it cannot be."""
        search = job.kind == "search"
        if search:
            self.stats.searches += 1
        if self._closed:
            self._dropped(search, AFTER_EXIT)
            return False
        try:
            self._send.send_nowait(job)
        except anyio.WouldBlock:  # the candidate is slower than the agent: never wait
            self._dropped(search, QUEUE_FULL)
            self._warn("full", "the shadow's queue is full: calls are not mirrored")
            return False
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):  # no task serves it
            self._dropped(search, AFTER_EXIT)
            return False
        self._work.open(job.pending or job, search)
        return True

    def _dropped(self, search: bool, reason: str) -> None:
        if search:
            self.stats.drop(reason)
        else:
            self.stats.writes_dropped += 1

    def calls_started(self) -> None:
        """The proxy forwards one of the agent's calls (mirroring waits: :data:`IDLE_WAIT`)."""
        self._calls += 1
        if self._idle.is_set():  # an anyio event cannot be cleared: a new one
            self._idle = anyio.Event()

    def calls_ended(self) -> None:
        """One of the agent's calls was answered."""
        self._calls -= 1
        if self._calls <= 0:
            self._calls = 0
            self._idle.set()

    async def run(self) -> None:
        """Send the queued jobs to the candidate, in order, until :meth:`close`. Outside
        interleaving a job waits until no call of the agent is in flight (at most
        :data:`IDLE_WAIT`), so that the candidate's request and answer are handled between
        the agent's calls rather than during them."""
        async with self._receive:
            async for job in self._receive:
                if self._closed:
                    return
                self._work.stage(job.pending or job, IN_FLIGHT)
                if not self.interleave and not self._idle.is_set():
                    with anyio.move_on_after(IDLE_WAIT):
                        await self._idle.wait()
                    if self._closed:
                        return
                try:
                    if job.kind == "write":
                        await self._write(job.calls, job.tool)
                    elif job.pending is not None:
                        await self._answer(job.pending)
                    elif job.search is not None:
                        await self._search(job, job.search, job.session_id)
                except Exception as error:  # the next job still goes
                    self._warn("run", f"could not mirror a call: {describe_error(error)}")
                if job.pending is None and self._work.settle(job):
                    if job.kind == "search":  # not handed to the store: why is counted
                        self.stats.drop(FAILED)
                    else:
                        self.stats.writes += 1
                if self._draining and not self._work:
                    self._drained.set()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (a call handed over now is counted dropped)."""
        return self._closed

    async def drain(self, grace: float, settle: Callable[[], None] | None = None) -> None:
        """The proxy stops: the candidate gets ``grace`` seconds to finish the jobs queued
        and in flight, and those the agent's last answered calls still bring (``settle``,
        run in a thread first: returns once they are handed over, e.g. by the logging
        thread), whose pairs are written. What is still open then is counted as dropped by
        :meth:`close`, at its stage. A second call (a signal, then the end of input) waits
        out the same grace; nothing after :meth:`close`."""
        if self._closed:
            return
        first = not self._draining
        if first:
            self._draining = True
            self._deadline = time.monotonic() + grace
            self._work.exiting(grace)
        if settle is not None:
            with anyio.move_on_after(max(0.0, self._deadline - time.monotonic())):
                await anyio.to_thread.run_sync(settle, abandon_on_cancel=True)
            await anyio.sleep(0)  # the calls it handed over are queued
        if first and self.stats.unfinished:
            warn(
                f"shadow: stopping: {_pairs(self.stats.unfinished)} unfinished, the "
                f"candidate has {grace:g} s to finish them (the rest are counted dropped)"
            )
        if not self._work:
            return
        with anyio.move_on_after(max(0.0, self._deadline - time.monotonic())):
            await self._drained.wait()

    def close(self) -> None:
        """No more jobs; those still open (queued, in flight, or an interleaved pair whose
        agent's call is unanswered) are counted as dropped, at their stage, and are not
        written later. Calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        self._work.close()
        self._send.close()

    async def _call(self, tool: str, arguments: Any) -> dict[str, Any]:
        if self.candidate.lost.is_set():
            raise RuntimeError(f"{self.profile.name} exited")
        return await self.candidate.call_tool(tool, arguments)

    async def _write(self, calls: tuple[Any, ...], tool: str | None = None) -> None:
        for arguments in calls:
            try:
                answer = await self._call(tool or self.profile.ingest.tool, arguments)
                if answer.get("isError"):
                    raise RuntimeError(text_of([c.get("text") for c in answer.get("content", [])]))
            except Exception as error:
                self.stats.errors += 1
                self._warn("write", f"the candidate failed a write: {describe_error(error)}")

    async def _ask(
        self, arguments: Mapping[str, Any], query: str
    ) -> tuple[dict[str, Any] | None, float, str | None]:
        """The candidate's (answer, latency in ms, failure) for the agent's search."""
        profile = self.profile
        mapped = search_arguments(self.primary.search, profile.search, arguments, query)
        started = time.perf_counter()
        answer: dict[str, Any] | None
        failure: str | None = None
        try:
            answer = await self._call(profile.search.tool, mapped)
        except Exception as error:
            answer = None
            failure = describe(error)
            self._warn("search", f"the candidate failed a search: {describe_error(error)}")
        latency_ms = (time.perf_counter() - started) * 1000
        if answer is None or answer.get("isError"):
            self.stats.errors += 1
        return answer, latency_ms, failure

    async def _search(self, job: Job, search: Mirrored, session_id: str | None = None) -> None:
        answer, latency_ms, failure = await self._ask(search.arguments, search.query)
        self._hand(
            job, lambda: self.runs.record(search, answer, latency_ms, failure, None, session_id)
        )

    async def _answer(self, pending: Pending) -> None:
        """An interleaved search: ask the candidate, wake the agent's call (if it still
        waits), write the pair if the agent's side is known already."""
        try:
            answer, latency_ms, failure = await self._ask(pending.arguments, pending.query)
            pending.answer, pending.latency_ms, pending.failure = answer, latency_ms, failure
            if pending.control is not None:  # the agent's call gave up waiting
                self._submit_pending(pending)
            else:
                self._work.stage(pending, AGENT_WAITED)
        finally:
            pending.done.set()

    def flush(self, final: bool = False) -> None:
        """Write the pairs waiting (:meth:`ShadowRuns.flush
        <recallbench.online._shadow_rows.ShadowRuns.flush>`)."""
        self.runs.flush(final)

    def finish(self) -> None:
        """The proxy's logging thread has stopped: the last batch is written, the exit line
        said, the store closed."""
        self.runs.finish()

    def _warn(self, kind: str, message: str) -> None:
        """The first message of each kind (the rest are counted in the summary)."""
        if kind not in self._warned:
            self._warned.add(kind)
            warn(message)


def _pairs(count: int) -> str:
    return "1 pair" if count == 1 else f"{count} pairs"
