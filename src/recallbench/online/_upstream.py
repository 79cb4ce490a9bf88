"""The MCP server behind the proxy: started from a profile (as the MCP adapter starts it)
or from a command line, reached over stdio or Streamable HTTP with the official SDK.

Requests are forwarded as they came and answers kept as the JSON the server sent (checked
by the SDK against the negotiated protocol version, never re-shaped into our own types),
so that what the proxy returns is what the server said.

Faults become JSON-RPC errors the agent sees, never a call left unanswered: a request the
server does not answer within ``call_timeout`` (the profile's) gets a ``REQUEST_TIMEOUT``
error (and the server a cancellation); when the server's connection closes (it exited or
crashed) the request gets a ``CONNECTION_CLOSED`` error naming the server, and
:attr:`Upstream.lost` is set, on which the proxy stops with an error (it does not restart
the server: the agent's client sees the proxy end and reports it, or restarts it, as for
any MCP server that dies).
"""

from __future__ import annotations

import asyncio
import os
import sys
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import TypeAdapter

from recallbench.core import SystemUnderTestError
from recallbench.systems._answers import fill
from recallbench.systems._launch import profile_places, require_installed, stop_process
from recallbench.systems._mcp import wait_for_listener
from recallbench.systems._profile import Profile

_RAW: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])
"""Keeps an answer as the JSON object it was (the SDK has checked it already)."""


@dataclass(frozen=True, slots=True)
class Launch:
    """How to start and reach the upstream server."""

    name: str
    command: tuple[str, ...]
    transport: Literal["stdio", "streamable-http"] = "stdio"
    env: dict[str, str] = field(default_factory=dict)
    """Added to the proxy's own environment."""
    cwd: Path | None = None
    """None: the proxy's working directory."""
    url: str | None = None
    startup_timeout: float = 30.0
    call_timeout: float = 30.0
    """Seconds a forwarded request may take before the agent gets a timeout error."""
    call_timeout_from: str = "the default call timeout, no profile"
    """Who set ``call_timeout``, for the timeout error (``--call-timeout``, the profile)."""


def profile_launch(profile: Profile, workdir: Path, command: tuple[str, ...] = ()) -> Launch:
    """The profile's server with ``{workdir}``, ``{install}`` and ``{port}`` filled in (as
    the MCP adapter does); ``command``, when given, replaces the profile's command line."""
    if not command:
        require_installed(profile)
    server = profile.server
    places = profile_places(profile, workdir)
    return Launch(
        name=profile.name,
        command=command or tuple(fill(part, places) for part in server.command),
        transport=server.transport,
        env={key: fill(value, places) for key, value in server.env.items()},
        cwd=workdir,
        url=fill(server.url, places) if server.url else None,
        startup_timeout=server.startup_timeout,
        call_timeout=server.call_timeout,
        call_timeout_from="the profile's call_timeout",
    )


def command_launch(command: tuple[str, ...]) -> Launch:
    """A stdio server started with ``command`` in the proxy's folder and environment."""
    if not command:
        raise SystemUnderTestError("no upstream server: give --profile NAME or -- COMMAND")
    return Launch(name=Path(command[0]).name, command=command)


class UpstreamLost(SystemUnderTestError):
    """The upstream server closed the connection while the proxy served (it exited)."""


class Upstream:
    """A connected upstream session; :meth:`request` returns answers as raw JSON."""

    def __init__(
        self, session: Any, initialized: Any, pid: int | None = None, launch: Launch | None = None
    ) -> None:
        self.session = session
        self.launch = launch or Launch("upstream", ())
        self.lost = anyio.Event()
        """Set when the server's connection closed (the proxy stops)."""
        self.initialized = initialized
        """The server's ``InitializeResult``: identity, capabilities, instructions."""
        self.pid = pid
        """The process started for a Streamable HTTP server (a stdio server ends with the
        proxy: its input closes)."""

    @classmethod
    async def connect(cls, launch: Launch, stack: AsyncExitStack) -> Upstream:
        """Start (or reach) the server and perform the handshake; the connection and the
        process end when ``stack`` closes. SystemUnderTestError when it cannot start."""
        from mcp import ClientSession

        try:
            pid = None
            if launch.transport == "stdio":
                read, write = await _stdio(launch, stack)
            else:
                read, write, pid = await _http(launch, stack)
            session = await stack.enter_async_context(ClientSession(read, write))
            with anyio.fail_after(launch.startup_timeout):
                initialized = await session.initialize()
        except TimeoutError:
            raise SystemUnderTestError(
                f"{launch.name}: server did not start within {launch.startup_timeout:g} s"
            ) from None
        except SystemUnderTestError:
            raise
        except Exception as error:
            raise SystemUnderTestError(f"{launch.name}: server failed to start: {error}") from None
        return cls(session, initialized, pid, launch)

    async def request(self, request: Any) -> dict[str, Any]:
        """Send a typed request; the result as the JSON object the server answered.
        The server's JSON-RPC errors are raised as the SDK's ``MCPError``, unchanged; a
        timeout (``call_timeout``) or a closed connection as an ``MCPError`` that says so."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        name, timeout = self.launch.name, self.launch.call_timeout
        try:
            answer: dict[str, Any] = await self.session.send_request(
                request, _RAW, request_read_timeout_seconds=timeout
            )
        except MCPError as error:
            method = getattr(request, "method", "the request")
            if error.code == REQUEST_TIMEOUT:
                message = (
                    f"recallbench proxy: {name} did not answer {method} within {timeout:g} s "
                    f"({self.launch.call_timeout_from})"
                )
                raise MCPError(REQUEST_TIMEOUT, message) from None
            if error.code == CONNECTION_CLOSED and error.error.message == "Connection closed":
                self.lost.set()
                message = f"recallbench proxy: {name} closed the connection (it exited)"
                raise MCPError(CONNECTION_CLOSED, message) from None
            raise
        return answer

    async def call_tool(self, name: str, arguments: Any) -> dict[str, Any]:
        """``tools/call`` of ``name``: the result as the JSON object the server sent."""
        import mcp_types as types

        params = types.CallToolRequestParams(name=name, arguments=arguments)
        return await self.request(types.CallToolRequest(params=params))

    async def tool_names(self) -> list[str]:
        """The names of all the server's tools (every page)."""
        return [str(tool.get("name")) for tool in await self.tools()]

    async def tools(self) -> list[dict[str, Any]]:
        """All the server's tools as it listed them (every page)."""
        import mcp_types as types

        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await self.request(types.ListToolsRequest(params=params))
            tools.extend(tool for tool in page.get("tools", []) if isinstance(tool, dict))
            cursor = page.get("nextCursor")
            if not cursor:
                return tools


async def _stdio(launch: Launch, stack: AsyncExitStack) -> tuple[Any, Any]:
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    parameters = StdioServerParameters(
        command=launch.command[0],
        args=list(launch.command[1:]),
        env={**os.environ, **launch.env},
        cwd=str(launch.cwd) if launch.cwd else None,
    )
    streams: tuple[Any, Any] = await stack.enter_async_context(
        stdio_client(parameters, errlog=sys.stderr)
    )
    return streams


async def _http(launch: Launch, stack: AsyncExitStack) -> tuple[Any, Any, int | None]:
    """Start the server process (if there is a command), wait until it listens, connect."""
    from mcp.client.streamable_http import streamable_http_client

    if launch.url is None:
        raise SystemUnderTestError(f"{launch.name}: a streamable-http server needs a url")
    process = None
    if launch.command:
        process = await asyncio.create_subprocess_exec(
            *launch.command,
            env={**os.environ, **launch.env},
            cwd=str(launch.cwd) if launch.cwd else None,
            stdout=sys.stderr,
            stderr=sys.stderr,
            stdin=asyncio.subprocess.DEVNULL,
        )
        stack.push_async_callback(stop_process, process)
    await wait_for_listener(launch.url, launch.startup_timeout, process)
    # no limit on the size of an answer: the server's answer is the agent's, whatever its size
    client = streamable_http_client(launch.url, max_sse_event_size=None)
    streams = await stack.enter_async_context(client)
    return streams[0], streams[1], process.pid if process else None
