"""``recallbench proxy``: an MCP server that stands in front of a memory server, forwards
every request to it, and logs what the agent searched, was shown and read.

Two ways of serving share what is here (the logging, feedback, shadow and own tools): over
stdio in front of a stdio server, :mod:`recallbench.online._relay` relays the JSON-RPC
lines as bytes (issue 22: about a quarter of the SDK path's added latency); otherwise (Streamable
HTTP on either side, ``--interleave``, a terminal) the SDK path described below.

The proxy lists the upstream server's tools and exposes exactly those (names,
descriptions, schemas as the server sent them), plus ``memory_validate`` when asked. A
``tools/call`` goes upstream unchanged and the answer comes back as the JSON the server
sent: content blocks, ``structuredContent`` and ``isError`` are never rebuilt, so a client
gets what it would get from the server directly. Resources, resource templates, prompts
and completions are forwarded when the server declares them. The proxy introduces itself
with the server's own name, version and instructions.

The SDK checks every result against the client's protocol version and dumps it again,
which reorders keys (``type`` of a JSON Schema moves after ``properties``). When the client
speaks the protocol version the server negotiated with the proxy, :class:`Verbatim` keeps
the check but sends the server's JSON as it was; for another version the SDK's shaping for
that version applies.

Around the forwarding, calls of the profile's search tool are logged (query, ranked ids,
texts, latency, tool, the session's id) with :class:`recallbench.telemetry.TelemetryLogger`,
and the feedback of :mod:`recallbench.online._feedback` is inferred from searches and
reads. The query is the argument where ``[search].arguments`` puts ``{query}``; hits are
found as the MCP adapter finds them (``[results]``), their ids and texts at ``[proxy].id``
and ``[proxy].text`` (default ``[results].id`` and ``.text``); a profile without an id path
(servers that answer with text only) identifies a hit by its text (:func:`text_id`).
Without a profile (``-- COMMAND``) nothing is logged. Logging can never fail a call: its
errors go to standard error. It happens in a thread of its own (:class:`Observer`), in the
order the calls were answered, after the answer has gone back.

With ``--shadow``, each answered call is also handed to :class:`~recallbench.online._shadow.
Shadow` (a put in a bounded queue, a few microseconds) which mirrors writes and sampled
searches to a candidate server; the search's ``query_id`` is shared with ``shadow_runs``.

With ``--interleave`` (and ``--shadow``), a sampled search is handed to the shadow before
it goes upstream (:meth:`Shadow.begin`) and the agent gets :meth:`Shadow.shown`: the
team-draft interleaving of both servers' rankings in the primary's answer shape, or the
primary's answer when the candidate is late or the shape cannot be rewritten; the search is
logged as shown, so reads and validations credit the team that placed the memory.

With ``--outcome-tool`` the proxy lists one more tool, :data:`OUTCOME_TOOL`, answered by
itself (never forwarded): the agent records its task's outcome (``success``, a number
``outcome``, a ``note``) for the current session, or the one it names, in the store's
session outcomes with source ``proxy`` (issue 20, design note section 5.4).

Sessions: one per connection: the whole process over stdio; over Streamable HTTP, one per
``Mcp-Session-Id`` (requests without one share a session). A session ends when the proxy
stops, or after ``SESSION_IDLE`` seconds without a request (HTTP).
"""

from __future__ import annotations

import functools
import hashlib
import math
import queue
import re
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from recallbench.core import SystemUnderTestError
from recallbench.online._feedback import Feedback, Search, SessionFeedback, result_ids
from recallbench.systems._answers import answer_texts, hit_text, normalise, raw_hits, select
from recallbench.systems._profile import Profile

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

    from recallbench.online._relay import RelayUpstream
    from recallbench.online._shadow import Shadow
    from recallbench.online._shadow_absent import AbsentShadow
    from recallbench.online._upstream import Upstream
    from recallbench.telemetry import TelemetryLogger, TelemetryStats

VALIDATE_TOOL = "memory_validate"
SESSION_IDLE = 1800.0
"""Seconds without a request after which an HTTP session ends (its last search closes)."""

FORWARDED = (
    ("resources", "resources/list", "PaginatedRequestParams", "ListResourcesRequest"),
    (
        "resources",
        "resources/templates/list",
        "PaginatedRequestParams",
        "ListResourceTemplatesRequest",
    ),
    ("resources", "resources/read", "ReadResourceRequestParams", "ReadResourceRequest"),
    ("prompts", "prompts/list", "PaginatedRequestParams", "ListPromptsRequest"),
    ("prompts", "prompts/get", "GetPromptRequestParams", "GetPromptRequest"),
    ("completions", "completion/complete", "CompleteRequestParams", "CompleteRequest"),
)
"""Requests forwarded when the server declares the capability: (capability, method,
params type, request type) with the SDK's type names."""
Handler = Callable[["ServerRequestContext[Any]", Any], Awaitable[Any]]

OUTCOME_TOOL = "recallbench_record_outcome"
OUTCOME_SCHEMA: dict[str, Any] = {
    "name": OUTCOME_TOOL,
    "description": (
        "Record how the task of this session went: success (true or false) and/or a "
        "numeric outcome, with an optional note. It is recorded to evaluate the memory "
        "system; it changes nothing in memory."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "success": {"type": "boolean", "description": "Whether the task succeeded."},
            "outcome": {"type": "number", "description": "A score of the outcome."},
            "note": {"type": "string", "description": "Why, in a few words."},
            "session_id": {
                "type": ["string", "null"],
                "description": "The session it is about (default: this one).",
            },
        },
    },
}

VALIDATE_SCHEMA: dict[str, Any] = {
    "name": VALIDATE_TOOL,
    "description": (
        "Tell whether a memory returned by a search helped with the task. This feedback "
        "is recorded to evaluate the memory system; it changes nothing in memory."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "The memory's id, as the search gave it."},
            "useful": {"type": "boolean", "description": "Whether it was useful."},
            "query_id": {
                "type": ["string", "null"],
                "description": "The search it came from (default: the latest that returned it).",
            },
        },
        "required": ["id", "useful"],
    },
}


@dataclass(frozen=True, slots=True)
class Watch:
    """What the proxy recognises in calls, from a profile (nothing without one)."""

    name: str
    search_tool: str | None = None
    query_path: tuple[str, ...] | None = None
    """Where the search arguments hold the query (where the template has ``{query}``)."""
    profile: Profile | None = None
    read_tools: Mapping[str, str] = field(default_factory=dict)
    """Read tool -> dotted path of its id argument."""

    @classmethod
    def of(cls, profile: Profile | None, name: str) -> Watch:
        if profile is None:
            return cls(name)
        return cls(
            name=profile.name,
            search_tool=profile.search.tool,
            query_path=query_path(profile.search.arguments),
            profile=profile,
            read_tools={read.tool: read.ids for read in profile.proxy.read_tools},
        )


def query_path(template: Any, path: tuple[str, ...] = ()) -> tuple[str, ...] | None:
    """The path of the first string of an arguments template that contains ``{query}``."""
    if isinstance(template, str):
        return path if "{query}" in template else None
    if isinstance(template, dict):
        for key, value in template.items():
            found = query_path(value, (*path, str(key)))
            if found is not None:
                return found
    return None


def text_id(text: str) -> str:
    """The id of a hit that has none: ``text:`` and a hash of its normalised text."""
    return "text:" + hashlib.sha1(normalise(text).encode()).hexdigest()[:16]


def read_ids(value: Any) -> list[str]:
    """One id or a list of ids from a read tool's argument, as strings."""
    values = value if isinstance(value, list) else [value]
    return [str(item) for item in values if item is not None and not isinstance(item, dict)]


@dataclass
class ProxySession:
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    rules: SessionFeedback = field(default_factory=SessionFeedback)
    seen: float = field(default_factory=time.monotonic)


OBSERVE_QUEUE = 10_000
"""Calls waiting to be logged, at most; beyond, a call is answered but not logged (counted)."""


class Observer:
    """Logs calls in a thread of its own, in the order they were answered, so that the
    answer goes back to the agent without waiting for it (parsing the hits, the feedback
    rules, queueing the records: a third of a millisecond per search, more under load).

    The queue is bounded: when it is full the call is not logged (counted in ``dropped``,
    said once on standard error) rather than held up. A job's error is the proxy's
    warning, never the agent's."""

    def __init__(self, size: int = OBSERVE_QUEUE) -> None:
        self._jobs: queue.Queue[Callable[[], None] | None] = queue.Queue(size)
        self._thread: threading.Thread | None = None
        self._stopped = False
        self.dropped = 0
        self.late = 0
        """Jobs submitted after :meth:`stop` (calls answered once the log was closed)."""

    def submit(self, job: Callable[[], None]) -> None:
        """Queue ``job``; drop it (counted) when the queue is full, or when the observer
        has stopped (the telemetry is written: said on standard error, never silent)."""
        if self._stopped:
            self.late += 1
            if self.late == 1:
                warn("calls answered after the log was closed are not logged (stopping)")
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="proxy-log", daemon=True)
            self._thread.start()
        try:
            self._jobs.put_nowait(job)
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1:
                warn(f"calls arrive faster than they can be logged; {OBSERVE_QUEUE:,} wait")

    def wait(self) -> None:
        """Return once every job queued so far is done (what a later call relies on)."""
        if self._thread is not None:
            self._jobs.join()

    def stop(self) -> None:
        """Do what is queued, then end the thread; later jobs are refused (counted).
        Calling it again does nothing."""
        self._stopped = True
        thread, self._thread = self._thread, None
        if thread is not None:
            self._jobs.put(None)
            thread.join()
        if self.dropped:
            warn(f"{self.dropped} calls were not logged (the log queue was full)")
            self.dropped = 0

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                if job is None:
                    return
                job()
            except Exception as error:  # logging must never stop the proxy
                warn(f"could not log a call: {type(error).__name__}: {error}")
            finally:
                self._jobs.task_done()


CLOSE_TIMEOUT = 5.0
"""Seconds the proxy waits at exit for the store to take the queued records."""


def telemetry_summary(stats: TelemetryStats) -> str:
    """The line the proxy prints at exit: every record accounted for."""
    full = stats.overflowed
    refused = stats.dropped - full
    line = (
        f"telemetry: {stats.written} written, {full} dropped (queue full), "
        f"{stats.lost} lost at exit (store unreachable)"
    )
    if refused:
        line += f", {refused} dropped (refused by the store or malformed; see above)"
    return line


def warn(message: str) -> None:
    print(f"recallbench proxy: {message}", file=sys.stderr, flush=True)


class Verbatim:
    """Server middleware: the answer a handler forwarded goes out as the upstream server's
    JSON, after the SDK's checks, when the client speaks the upstream's protocol version."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.answers: dict[int, dict[str, Any]] = {}
        """id(request context) -> the upstream's answer, kept by the handler."""

    def keep(self, ctx: ServerRequestContext[Any], answer: dict[str, Any]) -> dict[str, Any]:
        self.answers[id(ctx)] = answer
        return answer

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        try:
            result = await call_next(ctx)
            answer = self.answers.get(id(ctx))
        finally:
            self.answers.pop(id(ctx), None)
        if answer is None or ctx.protocol_version != self.version:
            return result
        return answer


class Proxy:
    """Forwards requests to ``upstream`` and logs searches and feedback to ``telemetry``."""

    def __init__(
        self,
        upstream: Upstream | RelayUpstream,
        watch: Watch,
        telemetry: TelemetryLogger | None,
        validate_tool: bool = False,
        shadow: Shadow | None = None,
        outcome_tool: bool = False,
        store_url: str | None = None,
        workspace: str = "default",
        telemetry_off: str | None = None,
        absent: AbsentShadow | None = None,
    ) -> None:
        self.upstream = upstream
        self.watch = watch
        self.telemetry = telemetry
        self.validate_tool = validate_tool
        self.outcome_tool = outcome_tool
        """Serve :data:`OUTCOME_TOOL` (answered by the proxy, never forwarded)."""
        self.store_url = store_url
        self.workspace = workspace
        """Where session outcomes go (the telemetry's store)."""
        self.sessions: dict[str | None, ProxySession] = {}
        initialized = upstream.initialized  # None: the relay (the agent's handshake passes)
        self.verbatim = Verbatim(initialized.protocol_version if initialized else "")
        self.observer = Observer()
        self.shadow = shadow
        """The candidate of ``--shadow``: its rows are written by the logging thread."""
        if shadow is not None:
            shadow.submit = self.observer.submit
        self.absent = absent
        """The ``--shadow`` candidate that did not start (served without it, counted)."""
        self.telemetry_off = telemetry_off
        """Why the store could not be opened (telemetry is None): records are counted."""
        self.not_stored = 0
        """Records not stored because telemetry is off (:attr:`telemetry_off`)."""
        self._count_lock = threading.Lock()
        self._in_flight: set[anyio.CancelScope] = set()
        self.stopping: str | None = None
        """Why the proxy stops (set by :meth:`cut_calls`): calls still waiting get an error."""
        self.cut = 0
        """Calls in flight the proxy answered with an error because it stopped."""

    async def check_tools(self) -> None:
        """Refuse to serve (SystemUnderTestError) when the server lacks the profile's search
        tool, or has a ``memory_validate`` of its own that ours would hide."""
        self.check_names(await self._sdk.tool_names())

    def check_names(self, tools: list[str]) -> None:
        """As :meth:`check_tools`, given the server's tool names (the relay lists them
        itself once the agent's handshake is done)."""
        names = set(tools)
        if self.watch.search_tool is not None and self.watch.search_tool not in names:
            raise SystemUnderTestError(
                f"{self.watch.name}: the server has no tool {self.watch.search_tool!r} "
                f"(it has {sorted(names)})"
            )
        if self.validate_tool and VALIDATE_TOOL in names:
            raise SystemUnderTestError(
                f"{self.watch.name}: the server has a tool {VALIDATE_TOOL!r} already; "
                "drop --validate-tool"
            )
        if self.outcome_tool and OUTCOME_TOOL in names:
            raise SystemUnderTestError(
                f"{self.watch.name}: the server has a tool {OUTCOME_TOOL!r} already; "
                "drop --outcome-tool"
            )

    @property
    def _sdk(self) -> Upstream:
        """The upstream of the SDK path (the relay has its own, and no use of these)."""
        from recallbench.online._upstream import Upstream

        assert isinstance(self.upstream, Upstream)
        return self.upstream

    def server(self) -> Server[Any]:
        """The MCP server the client talks to, introduced as the upstream server."""
        import mcp_types as types
        from mcp.server.lowlevel import Server

        initialized = self._sdk.initialized
        info = initialized.server_info
        server: Server[Any] = Server(
            info.name,
            version=info.version,
            title=info.title,
            description=info.description,
            instructions=initialized.instructions,
            website_url=info.website_url,
            icons=info.icons,
        )
        server.middleware.append(self.verbatim)
        server.add_request_handler("tools/list", types.PaginatedRequestParams, self._list_tools)
        server.add_request_handler("tools/call", types.CallToolRequestParams, self._tools_call)
        for capability, method, params_type, request_type in FORWARDED:
            if getattr(initialized.capabilities, capability, None) is not None:
                server.add_request_handler(
                    method, getattr(types, params_type), self._forward(getattr(types, request_type))
                )
        return server

    async def request(self, request: Any) -> dict[str, Any]:
        """The upstream's answer to one of the agent's requests (SDK path), unless the proxy
        stops first (:meth:`cut_calls`): then an ``MCPError`` saying so, which the agent
        gets as a JSON-RPC error reply rather than a dropped connection."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import INTERNAL_ERROR

        if self.stopping is None:
            with anyio.CancelScope() as scope:
                self._in_flight.add(scope)
                try:
                    return await self._sdk.request(request)
                finally:
                    self._in_flight.discard(scope)
        self.cut += 1
        method = getattr(request, "method", "the request")
        raise MCPError(
            INTERNAL_ERROR,
            f"recallbench proxy: stopping ({self.stopping}): {self.watch.name} had not "
            f"answered {method}; the call was abandoned",
        )

    def cut_calls(self, why: str) -> int:
        """The proxy stops for ``why``: every request still waiting on the upstream server
        (and any later one) gets an error reply. The number of requests cut."""
        self.stopping = why
        scopes = list(self._in_flight)
        for scope in scopes:
            scope.cancel()
        return len(scopes)

    def _forward(self, request_type: type[Any]) -> Handler:
        async def forward(ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
            return self.verbatim.keep(ctx, await self.request(request_type(params=params)))

        return forward

    async def _list_tools(self, ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
        import mcp_types as types

        page = await self.request(types.ListToolsRequest(params=params))
        if not page.get("nextCursor"):  # the proxy's own tools end the last page
            own = [VALIDATE_SCHEMA] if self.validate_tool else []
            own += [OUTCOME_SCHEMA] if self.outcome_tool else []
            if own:
                page = {**page, "tools": [*page.get("tools", []), *own]}
        return self.verbatim.keep(ctx, page)

    async def _tools_call(self, ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
        """``tools/call``, with the shadow told while the agent's call is in flight (its
        background work goes between the agent's calls)."""
        shadow = self.shadow
        if shadow is None or params.name in (VALIDATE_TOOL, OUTCOME_TOOL):
            if self.absent is not None:
                self.absent.count(params.name)
            return await self._call_tool(ctx, params)  # the proxy's own: nothing forwarded
        shadow.calls_started()
        try:
            return await self._call_tool(ctx, params)
        finally:
            shadow.calls_ended()

    async def _call_tool(self, ctx: ServerRequestContext[Any], params: Any) -> dict[str, Any]:
        import mcp_types as types

        session = self._session(ctx)
        if self.validate_tool and params.name == VALIDATE_TOOL:
            self.observer.wait()  # the searches it may refer to are logged first
            return self._validate(session, params.arguments or {})
        if self.outcome_tool and params.name == OUTCOME_TOOL:
            return self._outcome(session, params.arguments or {})
        started, clock = time.perf_counter(), time.monotonic()
        arguments = params.arguments or {}
        query_id = uuid.uuid4().hex  # the search's id in query_log and shadow_runs alike
        shadow = self.shadow
        # interleaving: the candidate is asked now, before the primary (None: not sampled)
        pending = (
            None if shadow is None else shadow.begin(params.name, arguments, query_id, session.id)
        )
        try:
            answer = await self.request(types.CallToolRequest(params=params))
        except Exception as error:
            if shadow is not None:  # a failed search is still compared
                latency_ms = (time.perf_counter() - started) * 1000
                if pending is not None:
                    shadow.failed(pending, latency_ms, error)
                else:
                    shadow.observe(
                        params.name, arguments, None, latency_ms, query_id, error, session.id
                    )
            raise
        latency_ms = (time.perf_counter() - started) * 1000
        if pending is not None and shadow is not None:
            answer = await shadow.shown(pending, answer, latency_ms)
        if self.watch.search_tool is not None:  # a profile: something to recognise
            self.observer.submit(
                functools.partial(
                    self._observe_safely,
                    session,
                    params.name,
                    arguments,
                    answer,
                    clock,
                    latency_ms,
                    query_id,
                )
            )
        if shadow is not None and pending is None:  # queued: asked after we return
            shadow.observe(params.name, arguments, answer, latency_ms, query_id, None, session.id)
        return self.verbatim.keep(ctx, answer)

    def _observe_safely(
        self,
        session: ProxySession,
        tool: str,
        arguments: Mapping[str, Any],
        answer: dict[str, Any],
        clock: float,
        latency_ms: float,
        query_id: str,
    ) -> None:
        try:
            self._observe(session, tool, arguments, answer, clock, latency_ms, query_id)
        except Exception as error:  # logging must never fail the agent's call
            warn(f"could not log the call of {tool}: {type(error).__name__}: {error}")

    # --- sessions ----------------------------------------------------------------------

    def _session(self, ctx: ServerRequestContext[Any]) -> ProxySession:
        headers = getattr(ctx.request, "headers", None)
        return self.session_of(headers.get("mcp-session-id") if headers is not None else None)

    def session_of(self, key: str | None) -> ProxySession:
        """The session of ``key`` (``Mcp-Session-Id``; None over stdio), started if new;
        sessions idle for :data:`SESSION_IDLE` end."""
        now = time.monotonic()
        for other, other_session in list(self.sessions.items()):
            if other != key and now - other_session.seen > SESSION_IDLE:
                # after the calls already queued: the session's rules are the observer's
                self.observer.submit(functools.partial(self._end, self.sessions.pop(other)))
        session = self.sessions.get(key)
        if session is None:
            session = self.sessions[key] = ProxySession()
        session.seen = now
        return session

    def finish(self) -> None:
        """The proxy stops: end every session (closing their last searches), then write
        what is queued. Calling it again does nothing."""
        if self.shadow is not None:
            self.shadow.close()  # no row after the logging thread has stopped
        self.observer.stop()  # every answered call logged first
        shadow, self.shadow = self.shadow, None
        if shadow is not None:
            shadow.flush(final=True)  # the pairs of the last batch
            warn(shadow.stats.line())
            if shadow.store is not None:
                shadow.store.close()
        elif self.absent is not None:
            warn(self.absent.line())
            self.absent = None
        while self.sessions:
            _, session = self.sessions.popitem()
            self._end(session)
        telemetry, self.telemetry = self.telemetry, None
        if self.telemetry_off is not None:
            warn(
                f"telemetry: off (the store could not be opened): {self.not_stored} records "
                "not stored"
            )
            self.telemetry_off = None
        if telemetry is None:
            return
        try:
            telemetry.close(CLOSE_TIMEOUT)
            stats = telemetry.stats
        except Exception as error:
            warn(f"could not write the telemetry: {error}")
            return
        warn(telemetry_summary(stats))

    def _end(self, session: ProxySession) -> None:
        try:
            self._log_feedback(session, session.rules.end())
        except Exception as error:
            warn(f"could not log the end of session {session.id}: {error}")

    # --- what is logged ----------------------------------------------------------------

    def _observe(
        self,
        session: ProxySession,
        tool: str,
        arguments: Mapping[str, Any],
        answer: dict[str, Any],
        clock: float,
        latency_ms: float,
        query_id: str | None = None,
    ) -> None:
        watch = self.watch
        if tool == watch.search_tool and watch.query_path is not None:
            query = select(dict(arguments), ".".join(watch.query_path))
            hits = self._hits(answer)
            if query is None or hits is None:
                return
            ids = result_ids(hit_id for hit_id, _ in hits)
            texts = {hit_id: text for hit_id, text in reversed(hits) if hit_id and text}
            search = Search(query_id or uuid.uuid4().hex, str(query), ids, clock)
            events = session.rules.search(search)
            if self.telemetry is None:
                self._not_stored(1)
            else:
                self.telemetry.log_search(
                    search.text,
                    list(ids),
                    session_id=session.id,
                    tool=tool,
                    latency_ms=latency_ms,
                    texts={hit_id: texts[hit_id] for hit_id in ids if hit_id in texts},
                    query_id=search.query_id,
                )
            self._log_feedback(session, events)
        elif tool in watch.read_tools and not _is_error(answer):
            read = read_ids(select(dict(arguments), watch.read_tools[tool]))
            self._log_feedback(session, session.rules.read(read))

    def _hits(self, answer: dict[str, Any]) -> list[tuple[str | None, str]] | None:
        """(id, text) of each hit of a search answer; None when the answer is an error."""
        profile = self.watch.profile
        return None if profile is None else hits_of(profile, answer)

    def _not_stored(self, records: int) -> None:
        """Count records that telemetry, off because the store could not be opened, loses."""
        if self.telemetry_off is not None and records:
            with self._count_lock:
                self.not_stored += records

    def _log_feedback(self, session: ProxySession, events: list[Feedback]) -> None:
        if self.telemetry is None:
            self._not_stored(len(events))
            return
        for event in events:
            self.telemetry.log_feedback(
                event.query_id,
                event.kind,
                doc_id=event.doc_id,
                rank=event.rank,
                session_id=session.id,
            )

    def _validate(self, session: ProxySession, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """``memory_validate``: a validation of the id for the given (or latest) search."""
        doc_id, useful, query_id = (arguments.get(k) for k in ("id", "useful", "query_id"))
        if isinstance(doc_id, int) and not isinstance(doc_id, bool):
            doc_id = str(doc_id)
        if not isinstance(doc_id, str) or not isinstance(useful, bool):
            return _text("memory_validate needs id (a string) and useful (true or false)", True)
        if query_id is not None and not isinstance(query_id, str):
            return _text("memory_validate: query_id must be a string", True)
        query_id = query_id or session.rules.latest_search_of(doc_id)
        if query_id is None:
            return _text(f"no search of this session returned {doc_id!r}; pass its query_id", True)
        verdict = "useful" if useful else "not useful"
        if self.telemetry is None:
            self._not_stored(2)  # its feedback event and its judgment
            return _text(f"not recorded: telemetry is off ({doc_id} was {verdict})", False)
        try:
            self.telemetry.log_validation(query_id, doc_id, useful)
        except Exception as error:
            warn(f"could not log the validation of {doc_id}: {error}")
            return _text(f"not recorded: {doc_id} was {verdict}, but logging failed", False)
        return _text(f"recorded: {doc_id} was {verdict} (query {query_id})", False)

    def _outcome(self, session: ProxySession, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """:data:`OUTCOME_TOOL`: the task outcome of the session (default: this one) goes
        to the store's session outcomes with source ``proxy``."""
        session_id, success, outcome, note = (
            arguments.get(k) for k in ("session_id", "success", "outcome", "note")
        )
        name = OUTCOME_TOOL
        if session_id is not None and (not isinstance(session_id, str) or not session_id):
            return _text(f"{name}: session_id must be a non-empty string", True)
        if success is not None and not isinstance(success, bool):
            return _text(f"{name}: success must be true or false", True)
        if outcome is not None and (
            isinstance(outcome, bool)
            or not isinstance(outcome, int | float)
            or not math.isfinite(outcome)
        ):
            return _text(f"{name}: outcome must be a finite number", True)
        if note is not None and not isinstance(note, str):
            return _text(f"{name}: note must be a string", True)
        if success is None and outcome is None:
            return _text(f"{name} needs success (true or false) or outcome (a number)", True)
        session_id = session_id or session.id
        try:
            from recallbench.store import open_store

            with open_store(self.store_url, workspace=self.workspace) as store:
                store.log_session_outcome(
                    session_id,
                    outcome=None if outcome is None else float(outcome),
                    success=success,
                    note=note,
                    source="proxy",
                )
        except Exception as error:
            warn(f"could not record the outcome of session {session_id}: {error}")
            return _text(f"not recorded: the store refused it ({type(error).__name__})", True)
        said = ", ".join(
            part
            for part in (
                None if success is None else ("success" if success else "failure"),
                None if outcome is None else f"outcome {outcome:g}",
            )
            if part
        )
        return _text(f"recorded for session {session_id}: {said}", False)


def hits_of(
    profile: Profile, answer: dict[str, Any], quiet: bool = False
) -> list[tuple[str | None, str]] | None:
    """(id, text) of each hit of a search answer by ``profile``'s server; None when the
    answer is an error (said on standard error when it cannot be read, unless ``quiet``)."""
    found = parsed_hits(profile, answer, quiet)
    return None if found is None else [(hit_id, text) for hit_id, text, _ in found]


def parsed_hits(
    profile: Profile, answer: dict[str, Any], quiet: bool = False
) -> list[tuple[str | None, str, Any]] | None:
    """As :func:`hits_of`, with each hit's raw item as the server sent it (a JSON object,
    or ``{"text": ...}`` for a text block) third."""
    if _is_error(answer):
        return None
    result = AnswerView(answer)
    texts = answer_texts(result)
    patterns = profile.results.error_patterns
    if any(re.search(pattern, text) for pattern in patterns for text in texts):
        return None
    try:
        found = raw_hits(result, profile.results, profile.name)
    except SystemUnderTestError as error:
        if not quiet:
            warn(f"search not logged: {error}")
        return None
    id_path = profile.proxy.id or profile.results.id
    text_path = profile.proxy.text or profile.results.text
    hits: list[tuple[str | None, str, Any]] = []
    for item in found:
        text = hit_text(item, text_path)
        if id_path:
            value = select(item, id_path)
            hits.append((None if value is None else str(value), text, item))
        else:  # a server that returns text only (content-matched profiles)
            hits.append((text_id(text) if text else None, text, item))
    return hits


class AnswerView:
    """What :func:`answer_texts` and :func:`raw_hits` read of a ``CallToolResult`` (its
    content blocks' types and texts, its structured content), straight from the answer's
    JSON: the SDK has checked the answer already, and building its types again cost a
    tenth of a millisecond per answer, on the logging thread and twice per shadow pair."""

    __slots__ = ("content", "structured_content")

    def __init__(self, answer: Mapping[str, Any]) -> None:
        content = answer.get("content")
        blocks = content if isinstance(content, list) else []
        self.content = [_Block(block) for block in blocks if isinstance(block, dict)]
        self.structured_content = answer.get("structuredContent")


class _Block:
    __slots__ = ("text", "type")

    def __init__(self, block: Mapping[str, Any]) -> None:
        self.type = block.get("type")
        text = block.get("text")
        self.text = text if isinstance(text, str) else ""


def _is_error(answer: Mapping[str, Any]) -> bool:
    return bool(answer.get("isError"))


def _text(message: str, error: bool) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": error}
