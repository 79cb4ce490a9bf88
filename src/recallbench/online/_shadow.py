"""Shadow mode of ``recallbench proxy`` (``--shadow PROFILE``): a second memory server, the
candidate, is kept in step with the agent's and answers a sample of its searches, in the
dark, so that the two rankings can be compared on real traffic.

* Writes: every call of the primary profile's ingest tool that the primary accepted goes to
  the candidate too. With the same ingest tool and item template the arguments go as they
  came; otherwise each item is read back through the primary's template (the strings that
  are exactly ``{id}``, ``{text}``, ``{title}``) and written with the candidate's. When the
  candidate is the same server as the primary (the same install and command, another
  store or settings), every other call the primary accepted but its search and read tools
  goes to the candidate as it came, so that updates and deletes keep both stores in step
  (tools the server annotates ``readOnlyHint`` are not mirrored);
  between different servers there is no mapping for them, and they are not mirrored.
* Searches: sampled by the sha256 of the query text (:func:`sampled`), so the same query
  is always in or always out; the candidate gets the primary's arguments (same tool and
  template) or its own template filled with the query and ``k``.
* Off the agent's path: the agent's answer is returned first; the handler only puts a job
  in a bounded queue (full: the job is dropped and counted). One task sends the jobs to the
  candidate in order (a search sees the writes before it); the pair of ranked lists is
  parsed, compared and written to ``shadow_runs`` from the proxy's logging thread, in
  batches (:data:`BATCH_ROWS` pairs or :data:`BATCH_SECONDS`, one transaction each: the
  commit and its sync to disk were 5 ms per pair), the last batch when the proxy stops. A
  stdio candidate is reached as JSON-RPC lines (:class:`~recallbench.online._relay.
  LineClient`, not the SDK's session on the proxy's event loop) and runs niced (unless
  interleaving), so that its CPU goes after the agent's server's and the proxy's.
* Nothing lost uncounted: when the proxy stops, the jobs queued and in flight get the
  grace its calls get (:meth:`Shadow.drain`); what is unfinished then is counted as
  dropped, at its stage, and never written later (:meth:`Shadow.close`,
  :mod:`~recallbench.online._shadow_ledger`). Each sampled search ends as one row or one
  dropped pair, so the exit line's written and dropped add up to the searches sampled
  and the written are the rows.

Interleaving (``--interleave``, Radlinski, Kurup & Joachims 2008): a sampled search is put
in the candidate's queue *before* the agent's call goes to the primary (so it still comes
after the writes before it), and the primary's answer waits for the candidate at most
``wait`` seconds more (:class:`Pending`). With both ranked lists ``A`` (control) and ``B``
(treatment) the agent is shown the team-draft interleaving of the two cut to the depth
both reach (:func:`recallbench.stats._interleaving.team_draft_common_depth`, coins seeded by
the query id), then the rest of the longer list, up to ``max(|A|, |B|)`` items
(:func:`interleave_ids`); only the drafted part is credited, so that a list is not
preferred for being longer. The answer keeps the primary's shape: the
hit list at ``[results].hits`` (structured content and the JSON of its text block, written
back in the server's own formatting), or one text block per hit, is replaced by the
interleaved items, the candidate's hits converted to the primary's shape
(:func:`rewrite_answer`). When a shape cannot be rewritten safely (formatting not
recognised, a hit without an id, a candidate hit that cannot be expressed as the primary's)
or the candidate is late or failed, the agent gets the primary's answer unchanged and the
reason is counted. ``shadow_runs.interleaved`` holds the shown list with each item's team
and ``interleaved_credited`` how many of its leading items are credited, so that a later
read or validation of a credited item credits the system that placed it (Chapelle,
Joachims, Radlinski & Yue 2012: ``c_A`` vs ``c_B`` per query, wins, ties and losses).
Without ``--interleave`` the agent's answers are the primary's, byte for byte.

A side that gave no readable search (a JSON-RPC error, ``isError``, a timeout, a server
that exited) is stored with no results, a NULL latency and a short message in its error
column (``control_error``, ``treatment_error``: the exception's type and message, the
tool's error text, or ``timeout``), and counted as an error; the candidate's failures are
also said on standard error (the first of each kind) and counted in the summary line at
exit, never passed to the agent.
"""

from __future__ import annotations

import copy
import json
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import anyio

from recallbench.core._query_key import query_digest
from recallbench.online._feedback import result_ids
from recallbench.online._proxy import hits_of, parsed_hits, query_path, text_id, warn
from recallbench.online._shadow_ledger import (
    AFTER_EXIT,
    AGENT_WAITED,
    FAILED,
    IN_FLIGHT,
    LOG_FULL,
    NO_STORE,
    NOT_RECORDED,
    QUEUE_FULL,
    STORE_FAILED,
    OpenWork,
    ShadowStats,
)
from recallbench.stats._interleaving import Interleaving, team_draft_common_depth
from recallbench.stats._rankdiff import rank_difference
from recallbench.systems._answers import fill, hit_text, select, text_of

if TYPE_CHECKING:
    from recallbench.online._relay import LineClient
    from recallbench.online._upstream import Upstream
    from recallbench.store import Store
    from recallbench.systems._profile import Ingest, Profile
    from recallbench.systems._profile import Search as SearchSpec

SHADOW_QUEUE = 1_000
"""Jobs (writes and sampled searches) waiting for the candidate, at most; beyond, dropped."""
DEFAULT_PERCENT = 10.0
"""Searches mirrored by default (the design note's 10%)."""
DEFAULT_K = 10
"""``k`` for a candidate whose template needs it when the agent's search gave none."""
ERROR_CHARS = 500
"""A side's stored error message is cut to this many characters."""
IDLE_WAIT = 0.05
"""Seconds a mirrored job waits for the agent's calls in flight to end, at most: the
candidate's request goes between the agent's calls when there is a gap."""
DEFAULT_WAIT = 0.5
"""Seconds the primary's answer waits for the candidate's in interleaving mode, at most."""
BATCH_ROWS = 64
"""Pairs written to ``shadow_runs`` in one transaction, at most."""
BATCH_SECONDS = 0.25
"""Seconds a pair waits at most before its batch is written (fewer pairs than BATCH_ROWS)."""
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w.]*)\}")


def sampled(query: str, percent: float) -> bool:
    """Whether a search of ``query`` is mirrored: the first 8 bytes of the sha256 of its
    words (:func:`recallbench.core._query_key.words`, the normalisation a test's unit of
    analysis uses), modulo a million, below ``percent`` * 10,000 (a pure function of the
    text: never re-drawn, and the same for "Kestrel decision" and "kestrel decision?")."""
    if percent >= 100:
        return True
    digest = query_digest(query)
    return int.from_bytes(digest[:8], "big") % 1_000_000 < percent * 10_000


def bindings(template: Any, value: Any) -> dict[str, Any]:
    """What the placeholders of an arguments template stood for in ``value`` (the inverse
    of ``fill`` for strings that are exactly one placeholder; a one-item list template
    such as ``["{text}"]`` binds the whole list, joined)."""
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        return {} if whole is None or value is None else {whole.group(1): value}
    found: dict[str, Any] = {}
    if isinstance(template, list) and isinstance(value, list):
        if len(template) == 1 and isinstance(template[0], str):
            return bindings(template[0], text_of(value)) if value else {}
        for part, item in zip(template, value, strict=False):
            found.update(bindings(part, item))
    elif isinstance(template, dict) and isinstance(value, dict):
        for key, part in template.items():
            found.update(bindings(part, value.get(key)))
    return found


def write_calls(primary: Ingest, candidate: Ingest, arguments: Mapping[str, Any]) -> list[Any]:
    """The candidate's ingest arguments for one of the agent's writes (none when nothing in
    it has a text)."""
    if (primary.tool, primary.item, primary.batch_field) == (
        candidate.tool,
        candidate.item,
        candidate.batch_field,
    ):
        return [dict(arguments)]  # the same kind of server: the agent's call as it was
    items = arguments.get(primary.batch_field) if primary.batch_field else [arguments]
    documents = []
    for item in items if isinstance(items, list) else []:
        found = bindings(primary.item, item)
        if found.get("text") is None:
            continue
        text = text_of(found["text"])
        values = {"title": "", **found, "text": text}
        values["id"] = str(found.get("id") or text_id(text))
        documents.append(fill(candidate.item, values))
    if not candidate.batch_field:
        return documents
    size = candidate.batch_size
    return [
        {candidate.batch_field: documents[at : at + size]} for at in range(0, len(documents), size)
    ]


def search_arguments(
    primary: SearchSpec, candidate: SearchSpec, arguments: Mapping[str, Any], query: str
) -> dict[str, Any]:
    """The candidate's arguments for the agent's search of ``query``."""
    if (primary.tool, primary.arguments) == (candidate.tool, candidate.arguments):
        return dict(arguments)
    k = bindings(primary.arguments, dict(arguments)).get("k")
    k = k if isinstance(k, int) and not isinstance(k, bool) and k > 0 else DEFAULT_K
    if candidate.max_k is not None:
        k = min(k, candidate.max_k)
    filled: dict[str, Any] = fill(candidate.arguments, {"query": query, "k": k})
    return filled


def mirrored_reader(profile: Profile) -> Profile:
    """How the candidate's hits are read in shadow mode: by the id the mirrored writes gave
    them (:func:`write_calls` fills the candidate's ingest template with the primary's ids)
    when the candidate's ``[results].id`` is where its template puts ``{id}``, so that both
    lists name a memory alike; otherwise as the proxy reads that server (``[proxy].id``).
    agentrecall, for one, keeps the id given at ``metadata.doc_id`` while its proxy view
    uses its own row ids (an agent's memories carry no doc_id)."""
    id_path = profile.results.id
    if not id_path or profile.proxy.id in (None, id_path):
        return profile
    if select(profile.ingest.item, id_path) != "{id}":
        return profile
    return profile.model_copy(update={"proxy": profile.proxy.model_copy(update={"id": id_path})})


@dataclass(frozen=True, slots=True)
class Mirrored:
    """One of the agent's searches, as the primary answered it."""

    query_id: str
    query: str
    arguments: Mapping[str, Any]
    answer: dict[str, Any] | None
    """The primary's answer (None: it failed)."""
    latency_ms: float
    error: str | None = None
    """Why the primary gave no answer (see :func:`describe`), when it raised."""


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
        self.store = store
        """Where the runs go (None: nowhere, e.g. the store could not be opened)."""
        self.submit: Callable[[Callable[[], None]], None] = lambda job: job()
        """Runs the row writing; the proxy sets its logging thread's queue here."""
        self.stats = ShadowStats()
        self._query_path = query_path(primary.search.arguments)
        kind = (primary.install, primary.server.command)
        self._verbatim = kind == (profile.install, profile.server.command)
        """Mirror the primary's other accepted calls as they came (updates, deletes)."""
        self._not_mirrored = {primary.search.tool, *(r.tool for r in primary.proxy.read_tools)}
        self._reader = mirrored_reader(profile)
        self._send, self._receive = anyio.create_memory_object_stream[Job](size)
        self._work = OpenWork(self.stats)
        """The jobs not done yet: what is open when the proxy stops is counted dropped."""
        self._closed = False
        self._draining = False
        self._drained = anyio.Event()
        """Set once nothing is open while the proxy stops (:meth:`drain`)."""
        self._deadline = 0.0
        """When the exit grace ends (``time.monotonic``)."""
        self._handed = 0
        """Pairs handed to the logging thread (event loop)."""
        self._recorded = 0
        """Of those, the ones the logging thread took (logging thread)."""
        self._warned: set[str] = set()
        self._calls = 0
        self._idle = anyio.Event()
        self._idle.set()
        """Set while none of the agent's calls is in flight."""
        self._rows: list[dict[str, Any]] = []
        """Pairs not written yet (the logging thread's: see :meth:`flush`)."""
        self._timer: threading.Timer | None = None
        self._final = False

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
            lambda: self._record(control, answer, latency, failure, interleaved, session_id),
        )

    def _hand(self, key: Job | Pending, record: Callable[[], None]) -> None:
        """The pair of ``key`` is complete: to the logging thread, once (a pair counted as
        dropped at :meth:`close` is not written after it)."""
        if self._closed or not self._work.settle(key):
            return
        if self._draining and not self._work:
            self._drained.set()
        if self.store is None:
            self.stats.drop(NO_STORE)
            return
        self._handed += 1
        self.submit(lambda: self._take(record))

    def _take(self, record: Callable[[], None]) -> None:
        """In the logging thread: a pair's row, or its drop counted when it cannot be."""
        self._recorded += 1
        try:
            record()
        except Exception as error:
            self.stats.drop(NOT_RECORDED)
            self._warn("record", f"a shadow run was not recorded: {_describe(error)}")

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
                    self._warn("run", f"could not mirror a call: {_describe(error)}")
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
                self._warn("write", f"the candidate failed a write: {_describe(error)}")

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
            self._warn("search", f"the candidate failed a search: {_describe(error)}")
        latency_ms = (time.perf_counter() - started) * 1000
        if answer is None or answer.get("isError"):
            self.stats.errors += 1
        return answer, latency_ms, failure

    async def _search(self, job: Job, search: Mirrored, session_id: str | None = None) -> None:
        answer, latency_ms, failure = await self._ask(search.arguments, search.query)
        self._hand(job, lambda: self._record(search, answer, latency_ms, failure, None, session_id))

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

    def _record(
        self,
        search: Mirrored,
        answer: dict[str, Any] | None,
        latency_ms: float,
        failure: str | None = None,
        interleaved: Interleaving[str] | None = None,
        session_id: str | None = None,
    ) -> None:
        """In the proxy's logging thread: parse both answers, write the pair (``failure``:
        why the candidate gave no answer, when it raised; ``interleaved``: what the agent
        was shown, by team, and how much of it is credited, in interleaving mode)."""
        control = _ids(self.primary, search.answer)
        treatment = _ids(self._reader, answer)
        run: dict[str, Any] = {
            "query_id": search.query_id,
            "control_results": control or [],
            "treatment_results": treatment or [],
            "control_latency_ms": None if control is None else search.latency_ms,
            "treatment_latency_ms": None if treatment is None else latency_ms,
            "control_error": None if control is not None else _error(search.answer, search.error),
            "treatment_error": None if treatment is not None else _error(answer, failure),
            "session_id": session_id,
            "control": self.primary.name,
            "treatment": self.profile.name,
        }
        if interleaved is not None:
            run["interleaved"] = list(interleaved.shown)
            run["interleaved_credited"] = interleaved.credited
        if control is not None and treatment is not None:
            k = max(len(control), len(treatment), 1)
            difference = rank_difference(search.query_id, control, treatment, k)
            run["kendall_tau"] = difference.kendall_tau
            run["jaccard"] = difference.jaccard
            run["top1_changed"] = difference.top1_changed
        run["created_at"] = datetime.now(UTC)
        self._rows.append(run)
        if len(self._rows) >= BATCH_ROWS:
            self.flush()
        elif self._timer is None and not self._final:
            self._timer = threading.Timer(BATCH_SECONDS, self._flush_soon)
            self._timer.daemon = True
            self._timer.start()

    def _flush_soon(self) -> None:
        """The batch's time is up: its writing joins the logging thread's queue."""
        if not self._final:
            self.submit(self.flush)

    def flush(self, final: bool = False) -> None:
        """Write the pairs waiting, in one transaction (in the logging thread, or once it
        has stopped: ``final``, after which nothing waits any more). Batching makes a pair
        cost a share of one commit and one sync to disk rather than its own: the store's
        durability is unchanged (WAL, SQLite's default synchronous mode)."""
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        if final:
            self._final = True
        rows, self._rows = self._rows, []
        if final:  # the logging thread has stopped: what it never took was lost there
            self.stats.drop(LOG_FULL, self._handed - self._recorded)
            self._handed = self._recorded
        if not rows:
            return
        if self.store is None:
            self.stats.drop(NO_STORE, len(rows))
            return
        try:
            self.store.log_shadow_runs(rows)
        except Exception as error:  # the agent's calls are not concerned
            self.stats.drop(STORE_FAILED, len(rows))
            warn(f"{len(rows)} shadow runs were not stored: {type(error).__name__}: {error}")
        else:
            self.stats.stored(len(rows))

    def _warn(self, kind: str, message: str) -> None:
        """The first message of each kind (the rest are counted in the summary)."""
        if kind not in self._warned:
            self._warned.add(kind)
            warn(message)


def _pairs(count: int) -> str:
    return "1 pair" if count == 1 else f"{count} pairs"


def _ids(profile: Profile, answer: dict[str, Any] | None) -> list[str] | None:
    """Ranked ids of a search answer (hits without an id are skipped); None when it is not
    a readable search."""
    if answer is None:
        return None
    hits = hits_of(profile, answer, quiet=True)
    if hits is None:
        return None
    return list(result_ids(hit_id for hit_id, _ in hits))


def _describe(error: BaseException) -> str:
    message = getattr(getattr(error, "error", None), "message", None) or str(error)
    return f"{type(error).__name__}: {message}"


def describe(error: BaseException) -> str:
    """A short message for a failed call: ``timeout`` for the upstream's call timeout,
    otherwise the exception's type and message."""
    from mcp_types import REQUEST_TIMEOUT

    inner = getattr(error, "error", None)
    if isinstance(error, TimeoutError) or getattr(inner, "code", None) == REQUEST_TIMEOUT:
        return "timeout"
    return _short(_describe(error))


def _error(answer: dict[str, Any] | None, failure: str | None) -> str:
    """What a side that gave no readable search stores as its error: the call's failure,
    or the text of an ``isError`` answer, or that the answer could not be read as a search
    (with its text: a profile's error pattern matched it, or its hits were unreadable)."""
    if failure is not None:
        return failure
    if answer is None:
        return "no answer"
    content = answer.get("content")
    texts = (
        [c.get("text") for c in content if isinstance(c, dict)] if isinstance(content, list) else []
    )
    text = text_of([t for t in texts if isinstance(t, str)]).strip()
    if answer.get("isError"):
        return _short(text or "isError")
    return _short(f"not a readable search: {text}" if text else "not a readable search")


def _short(message: str) -> str:
    return message if len(message) <= ERROR_CHARS else message[: ERROR_CHARS - 1] + "…"


# --- interleaving: the lists and the answer ----------------------------------------------


class NotInterleaved(Exception):
    """The agent gets the primary's answer as it was; ``reason`` is counted."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def interleave_ids(
    control: Sequence[str], treatment: Sequence[str], query_id: str
) -> Interleaving[str]:
    """The shown list: the team-draft interleaving (Radlinski, Kurup & Joachims 2008) of
    ``control`` (A) and ``treatment`` (B) to the depth both reach, coins seeded by
    ``query_id``, then the rest of the longer list, ``L = max(|A|, |B|)`` distinct items in
    all (:func:`~recallbench.stats._interleaving.team_draft_common_depth`).

    Only the drafted part is credited (``credited``): documents below the depth both lists
    reach are shown, with the team whose list holds them, but a read of them credits no
    one. So a system is neither padded by its rival's results nor preferred for returning
    more of them, the agent is not shown fewer results than either system would give it,
    and an item both lists hold belongs to the team that placed it first."""
    limit = len(dict.fromkeys((*control, *treatment)))
    limit = min(limit, max(len(control), len(treatment)))
    return team_draft_common_depth(control, treatment, query_id, limit=limit)


def interleave_answer(
    primary: Profile,
    candidate: Profile,
    answer: dict[str, Any],
    candidate_answer: dict[str, Any] | None,
    query_id: str,
) -> tuple[dict[str, Any], Interleaving[str]]:
    """The primary's ``answer`` with its hits replaced by the interleaving of both lists
    (:func:`interleave_ids`), and that interleaving. The answer is the primary's
    own object when the interleaved order is the primary's. Raises :class:`NotInterleaved`
    (with the reason) when it cannot be done safely."""
    control = parsed_hits(primary, answer, quiet=True)
    if control is None:
        raise NotInterleaved("primary answer not a readable search")
    if candidate_answer is None:
        raise NotInterleaved("candidate failed")
    treatment = parsed_hits(candidate, candidate_answer, quiet=True)
    if treatment is None:
        raise NotInterleaved("candidate answer not a readable search")
    if any(hit_id is None for hit_id, _, _ in control):
        raise NotInterleaved("primary hit without an id")
    items: dict[str, Any] = {}
    control_ids: list[str] = []
    for hit_id, _, raw in control:
        assert hit_id is not None
        items.setdefault(hit_id, raw)
        control_ids.append(hit_id)
    treatment_ids: list[str] = []
    same_shape = _shape(primary) == _shape(candidate)
    for hit_id, text, raw in treatment:
        if hit_id is None:
            continue  # cannot be credited: not shown
        treatment_ids.append(hit_id)
        if hit_id not in items:
            items[hit_id] = raw if same_shape else as_primary_hit(primary, hit_id, text)
    interleaved = interleave_ids(control_ids, treatment_ids, query_id)
    shown = list(interleaved.items)
    if shown == control_ids:
        return answer, interleaved
    if any(items[doc_id] is None for doc_id in shown):
        raise NotInterleaved("candidate hit not expressible in the primary's shape")
    rewritten = rewrite_answer(primary, answer, [items[doc_id] for doc_id in shown])
    if rewritten is None:
        raise NotInterleaved("primary answer shape not rewritable")
    return rewritten, interleaved


def _shape(profile: Profile) -> tuple[Any, ...]:
    """What makes two servers' hits interchangeable: where they are and how they are read."""
    results = profile.results
    return (
        results.source,
        results.hits,
        profile.proxy.id or results.id,
        profile.proxy.text or results.text,
    )


def as_primary_hit(primary: Profile, doc_id: str, text: str) -> Any:
    """A candidate's hit in the primary's shape, or None when that cannot be done safely.

    A text-block server's hit is its text. Otherwise the primary's ingest item template is
    filled with the hit's id and text (the memory as the primary would hold it had the agent
    written it there: server-memory's entity) and kept only if the primary's own paths read
    the same id and text back from it."""
    if primary.results.source == "text_blocks":
        return {"text": text}
    id_path = primary.proxy.id or primary.results.id
    if not id_path:
        return None
    item = fill(primary.ingest.item, {"id": doc_id, "text": text, "title": ""})
    text_path = primary.proxy.text or primary.results.text
    if not isinstance(item, dict) or select(item, id_path) != doc_id:
        return None
    if hit_text(item, text_path) != text:
        return None
    return item


def rewrite_answer(
    profile: Profile, answer: dict[str, Any], hits: Sequence[Any]
) -> dict[str, Any] | None:
    """``answer`` (a search answer of ``profile``'s server) with its list of hits replaced
    by ``hits`` (raw items in that server's shape), everything else kept; None when the
    shape is not one this can rewrite faithfully.

    * ``text_blocks``: every content block must be text and there must be no structured
      content; the new content is one text block per hit (an original block reused, with
      its annotations, for a hit it held).
    * ``structured`` / ``json_text``: the list at ``[results].hits`` is replaced in the
      structured content (when present) and in the JSON of the text blocks: a single
      block holding the whole JSON, or one block per hit holding that hit (as FastMCP 1.x
      answers). Text is re-serialised only in a formatting recognised by reproducing the
      server's text exactly from its parsed JSON (two-space indented, compact, or
      ``json.dumps`` default separators); otherwise None."""
    content = answer.get("content")
    if not isinstance(content, list) or not all(isinstance(b, dict) for b in content):
        return None
    results = profile.results
    if results.source == "text_blocks":
        if "structuredContent" in answer or any(b.get("type") != "text" for b in content):
            return None
        by_text = {b.get("text"): b for b in content}
        blocks = [
            by_text.get(h.get("text")) or {"type": "text", "text": h.get("text")} for h in hits
        ]
        return {**answer, "content": blocks}
    texts = [b for b in content if b.get("type") == "text"]
    new_content: list[Any] = list(content)
    structured = answer.get("structuredContent")
    rewritten: dict[str, Any] = dict(answer)
    if structured is not None and results.source != "json_text":
        new_structured = _replace_at(structured, results.hits, list(hits))
        if new_structured is None:
            return None
        rewritten["structuredContent"] = new_structured
    if texts:
        parsed = [_loads(b.get("text")) for b in texts]
        whole = parsed[0]
        if (
            len(texts) == 1
            and whole is not _NOT_JSON
            and isinstance(whole, (dict, list))
            and (structured is None or whole == structured or results.source == "json_text")
        ):
            replaced = _replace_at(whole, results.hits, list(hits))
            style = _style(texts[0].get("text"), whole)
            if replaced is None or style is None:
                return None
            block = {**texts[0], "text": _dumps(replaced, style)}
            new_content = [block if b is texts[0] else b for b in content]
        elif structured is not None and results.source != "json_text":
            old = select(structured, results.hits) if results.hits else structured
            if not isinstance(old, list) or len(old) != len(texts) or parsed != old:
                return None  # text blocks that are not one hit each: unknown
            styles = {_style(b.get("text"), item) for b, item in zip(texts, old, strict=True)}
            if len(styles) != 1 or None in styles or len(content) != len(texts):
                return None
            (style,) = styles
            assert style is not None
            template = {k: v for k, v in texts[0].items() if k != "text"}
            new_content = [{**template, "text": _dumps(hit, style)} for hit in hits]
        else:
            return None
    elif structured is None:
        return None
    rewritten["content"] = new_content
    return rewritten


_NOT_JSON = object()
_STYLES: dict[str, dict[str, Any]] = {
    "indent2": {"indent": 2, "ensure_ascii": False},
    "compact": {"separators": (",", ":"), "ensure_ascii": False},
    "python": {"ensure_ascii": False},
    "python-ascii": {},
    "indent2-ascii": {"indent": 2},
}


def _loads(text: Any) -> Any:
    if not isinstance(text, str):
        return _NOT_JSON
    try:
        return json.loads(text)
    except ValueError:
        return _NOT_JSON


def _style(text: Any, value: Any) -> str | None:
    """The name of the serialisation that reproduces ``text`` from ``value`` exactly."""
    for name, options in _STYLES.items():
        if json.dumps(value, **options) == text:
            return name
    return None


def _dumps(value: Any, style: str) -> str:
    return json.dumps(value, **_STYLES[style])


def _replace_at(value: Any, path: str, items: list[Any]) -> Any:
    """A copy of ``value`` with the list at dotted ``path`` replaced; None when no list is
    there."""
    parts = [part for part in path.split(".") if part]
    if not parts:
        return items if isinstance(value, list) else None
    copied = copy.deepcopy(value)
    node = copied
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, dict) or not isinstance(node.get(parts[-1]), list):
        return None
    node[parts[-1]] = items
    return copied
