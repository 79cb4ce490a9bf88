"""``recallbench proxy``: an MCP server that stands in front of a memory server, forwards
every request to it, and logs what the agent searched, was shown and read.

Two ways of serving share the session logic (the logging, feedback, shadow and own tools:
:mod:`recallbench.online._proxy_sessions`): over stdio in front of a stdio server,
:mod:`recallbench.online._relay` relays the JSON-RPC lines as bytes (issue 22: about a
quarter of the SDK path's added latency); otherwise (Streamable HTTP on either side,
``--interleave``, a terminal) the SDK's server, here.

The proxy lists the upstream server's tools and exposes exactly those (names,
descriptions, schemas as the server sent them), plus its own tools when asked. A
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

With ``--interleave`` (and ``--shadow``), a sampled search is handed to the shadow before
it goes upstream (:meth:`SessionObserver.begin
<recallbench.online._session_observer.SessionObserver.begin>`) and the agent gets what the
shadow shows: the team-draft interleaving of both servers' rankings in the primary's answer
shape, or the primary's answer when the candidate is late or the shape cannot be
rewritten; the search is logged as shown, so reads and validations credit the team that
placed the memory.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from recallbench.online._proxy_sessions import (
    OUTCOME_TOOL,
    VALIDATE_TOOL,
    ProxySession,
    ProxySessions,
    Watch,
)

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

    from recallbench.online._session_observer import SessionObserver
    from recallbench.online._shadow_absent import AbsentShadow
    from recallbench.online._upstream import Upstream
    from recallbench.online._wire import RelayUpstream
    from recallbench.telemetry import TelemetryLogger

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


class Proxy(ProxySessions):
    """Forwards requests to ``upstream`` and logs searches and feedback to ``telemetry``
    (the session logic of :class:`~recallbench.online._proxy_sessions.ProxySessions`,
    served by the SDK's :meth:`server`)."""

    def __init__(
        self,
        upstream: Upstream | RelayUpstream,
        watch: Watch,
        telemetry: TelemetryLogger | None,
        validate_tool: bool = False,
        shadow: SessionObserver | None = None,
        outcome_tool: bool = False,
        store_url: str | None = None,
        workspace: str = "default",
        telemetry_off: str | None = None,
        absent: AbsentShadow | None = None,
    ) -> None:
        self.upstream = upstream
        initialized = upstream.initialized  # None: the relay (the agent's handshake passes)
        self.verbatim = Verbatim(initialized.protocol_version if initialized else "")
        super().__init__(
            watch,
            telemetry,
            validate_tool=validate_tool,
            shadow=shadow,
            outcome_tool=outcome_tool,
            store_url=store_url,
            workspace=workspace,
            telemetry_off=telemetry_off,
            absent=absent,
        )
        self._in_flight: set[anyio.CancelScope] = set()
        self.stopping: str | None = None
        """Why the proxy stops (set by :meth:`cut_calls`): calls still waiting get an error."""
        self.cut = 0
        """Calls in flight the proxy answered with an error because it stopped."""

    async def check_tools(self) -> None:
        """Refuse to serve (SystemUnderTestError) when the server lacks the profile's search
        tool, or has a ``memory_validate`` of its own that ours would hide."""
        self.check_names(await self._sdk.tool_names())

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
            own = self.own_tools()
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
        own = self.answer_own(session, params.name, params.arguments or {})
        if own is not None:
            return own
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
                    self.observe_safely,
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

    def _session(self, ctx: ServerRequestContext[Any]) -> ProxySession:
        headers = getattr(ctx.request, "headers", None)
        return self.session_of(headers.get("mcp-session-id") if headers is not None else None)
