"""The proxy's wire layer for JSON-RPC as lines: messages framed one a line on a process's
standard input and output, read and written as bytes, and the servers reached that way.

* Framing: a response's id from the first and last bytes of its line (:func:`response_id`,
  without parsing the answer), ids as dict keys (:func:`id_key`), lines dumped compact as
  the servers send them (:func:`json_line`), error replies (:func:`error_line`), and the
  JSON-RPC codes, as ``mcp_types`` names them (not imported: the relay starts lean).
* :class:`RelayUpstream`: a server's process reached as JSON-RPC lines (the upstream of the
  relay, :mod:`recallbench.online._relay`).
* :class:`LineClient`: a client of such a server (the shadow's candidate over stdio).

Nothing here knows what a call means: the proxy's sessions, their logging and shadowing
sit above (:mod:`recallbench.online._proxy_sessions`, :mod:`recallbench.online._shadow`).
:func:`warn` is how every part of the proxy speaks on standard error.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from contextlib import AsyncExitStack, suppress
from typing import TYPE_CHECKING, Any

import anyio

from recallbench.core import SystemUnderTestError
from recallbench.online._stdio import LIMIT

if TYPE_CHECKING:
    from recallbench.online._upstream import Launch

PARSE_ERROR = -32700
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001
"""JSON-RPC codes, as ``mcp_types`` names them (not imported: the relay starts lean)."""
STOP_GRACE = 2.0
"""Seconds the server gets to end after its input closes, before it is terminated."""

NO_ID = object()
_RESPONSE_HEAD = re.compile(
    rb'\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*,'
    rb'\s*"(?:result|error)"\s*:'
)
"""A response whose first keys are ``jsonrpc`` and ``id`` (the Python SDK's order)."""
_RESPONSE_START = re.compile(rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"(?:result|error)"\s*:')
"""A response whose first key (after ``jsonrpc``) is ``result`` or ``error`` (the TypeScript
SDK's order); its id is then the last key."""
_ID_LAST = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*\}\s*$')
"""The top-level object's last key is ``id``: a nested ``"id"`` would be followed by more
than one closing brace, and a string cannot hold an unescaped quote."""
_PEEK = 256


def warn(message: str) -> None:
    print(f"recallbench proxy: {message}", file=sys.stderr, flush=True)


def response_id(line: bytes) -> Any:
    """The id of a JSON-RPC response line from the first and last bytes, without parsing
    the answer; :data:`NO_ID` when the line is not recognisably a response (then it is parsed
    whole)."""
    head = _RESPONSE_HEAD.match(line[:_PEEK])
    if head is not None:
        return json.loads(head.group(1))
    if _RESPONSE_START.match(line[:_PEEK]) is not None:
        tail = _ID_LAST.search(line[-_PEEK:])
        if tail is not None:
            return json.loads(tail.group(1))
    return NO_ID


def id_key(ident: Any) -> Any:
    """A dict key for a JSON-RPC id: ``1`` and ``"1"`` are different requests."""
    if type(ident) is int:
        return ident
    if type(ident) is str:
        return ("s", ident)
    return ("j", json.dumps(ident, sort_keys=True))


def json_line(message: dict[str, Any]) -> bytes:
    """``message`` as one line, compact as the servers send it."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def error_line(ident: Any, code: int, message: str) -> bytes:
    return json_line({"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}})


def rpc_error(code: int, message: str) -> BaseException:
    """The exception the SDK path would have seen for a failed call (the shadow stores its
    description: ``timeout`` for a timeout)."""
    from mcp.shared.exceptions import MCPError

    return MCPError(code, message)


class RelayUpstream:
    """The upstream server's process, reached as JSON-RPC lines on its standard input and
    output (its standard error is the proxy's). Offers what the serving code reads of
    :class:`~recallbench.online._upstream.Upstream`: ``launch``, ``lost``, ``pid`` and
    ``initialized`` (None: the agent's own handshake passes through)."""

    def __init__(self, launch: Launch, process: asyncio.subprocess.Process) -> None:
        self.launch = launch
        self.process = process
        self.lost = anyio.Event()
        """Set when the server's output ended (it exited): the proxy stops."""
        self.initialized: Any = None
        self.pid: int | None = None
        """Only for a Streamable HTTP server (a stdio server ends when its input closes)."""

    @classmethod
    async def start(cls, launch: Launch, stack: AsyncExitStack, nice: int = 0) -> RelayUpstream:
        """Start the server; it is stopped when ``stack`` closes. SystemUnderTestError when
        it cannot be started. ``nice``: added to its CPU niceness (see :data:`NICE`)."""
        try:
            process = await asyncio.create_subprocess_exec(
                *launch.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=sys.stderr,
                env={**os.environ, **launch.env},
                cwd=str(launch.cwd) if launch.cwd else None,
                limit=LIMIT,
            )
        except OSError as error:
            raise SystemUnderTestError(f"{launch.name}: server failed to start: {error}") from None
        if nice:  # at once: what the process starts later (its threads, children) inherits it
            with suppress(OSError):
                os.setpriority(
                    os.PRIO_PROCESS, process.pid, os.getpriority(os.PRIO_PROCESS, 0) + nice
                )
        upstream = cls(launch, process)
        stack.push_async_callback(upstream.stop)
        return upstream

    async def stop(self) -> None:
        """Close the server's input (a stdio server ends), terminate it if it lingers."""
        from recallbench.systems._launch import stop_process

        process = self.process
        if process.stdin is not None:
            with suppress(OSError):
                process.stdin.close()
        if process.returncode is None:
            try:
                await asyncio.wait_for(process.wait(), STOP_GRACE)
            except TimeoutError:
                await stop_process(process)


NICE = 10
"""Niceness added to a shadow candidate that nobody waits for (not when interleaving): on a
machine busy with the agent's calls the scheduler serves the agent's server and the proxy
first, and the candidate's searches take the time left (issue 20: the candidate's CPU,
competing for two cores with the agent, its server and the proxy, was most of what
mirroring every search added)."""
CLIENT_INFO = {"name": "mcp", "version": "0.1.0"}
"""How the proxy introduces itself to a candidate (the SDK client's default, as before)."""


class LineClient:
    """The shadow's candidate over stdio, as JSON-RPC lines: what :class:`~recallbench.
    online._shadow.Shadow` asks of :class:`~recallbench.online._upstream.Upstream`
    (``lost``, :meth:`tool_names`, :meth:`call_tool`) without the SDK's session, whose
    task hops and parsing ran on the proxy's event loop while the agent's next call was in
    flight (issue 20). Errors are the SDK path's: the server's JSON-RPC errors, a
    ``REQUEST_TIMEOUT`` after ``call_timeout``, ``CONNECTION_CLOSED`` when it exits (then
    ``lost`` is set). The server's own requests get the SDK client's answers (``ping``: an
    empty result; others: method not found); its notifications are ignored."""

    def __init__(self, upstream: RelayUpstream) -> None:
        self.upstream = upstream
        self.launch = upstream.launch
        self.lost = upstream.lost
        self._waiting: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._count = 0
        self._reader: asyncio.Task[None] | None = None

    @classmethod
    async def connect(cls, launch: Launch, stack: AsyncExitStack, nice: int = 0) -> LineClient:
        """Start the server (``nice``: see :data:`NICE`) and perform the handshake; stopped
        when ``stack`` closes. SystemUnderTestError when it cannot start (as the SDK path
        says it)."""
        from mcp_types import LATEST_PROTOCOL_VERSION

        client = cls(await RelayUpstream.start(launch, stack, nice))
        client._reader = asyncio.ensure_future(client._read())
        stack.callback(client._reader.cancel)
        params = {
            "protocolVersion": LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": CLIENT_INFO,
        }
        try:
            await client.request("initialize", params, launch.startup_timeout)
        except Exception as error:
            if getattr(error, "code", None) == REQUEST_TIMEOUT:
                raise SystemUnderTestError(
                    f"{launch.name}: server did not start within {launch.startup_timeout:g} s"
                ) from None
            raise SystemUnderTestError(f"{launch.name}: server failed to start: {error}") from None
        client._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return client

    async def call_tool(self, name: str, arguments: Any) -> dict[str, Any]:
        """``tools/call``: the result as the JSON object the server sent."""
        return await self.request("tools/call", {"name": name, "arguments": arguments})

    async def tool_names(self) -> list[str]:
        """The names of all the server's tools (every page)."""
        return [str(tool.get("name")) for tool in await self.tools()]

    async def tools(self) -> list[dict[str, Any]]:
        """All the server's tools as it listed them (every page)."""
        tools: list[dict[str, Any]] = []
        cursor: Any = None
        while True:
            page = await self.request("tools/list", {"cursor": cursor} if cursor else {})
            tools += [tool for tool in page.get("tools") or [] if isinstance(tool, dict)]
            cursor = page.get("nextCursor")
            if not cursor:
                return tools

    async def request(
        self, method: str, params: dict[str, Any], timeout: float | None = None
    ) -> dict[str, Any]:
        """Send a request; its result. ``MCPError`` for the server's error, a timeout or a
        closed connection (the messages of :meth:`Upstream.request`)."""
        from mcp.shared.exceptions import MCPError

        name = self.launch.name
        if self.lost.is_set():
            raise MCPError(CONNECTION_CLOSED, f"recallbench proxy: {name} closed the connection")
        self._count += 1
        ident = self._count
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = future
        self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        timeout = self.launch.call_timeout if timeout is None else timeout
        try:
            answer = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            cancel = {"requestId": ident, "reason": "timeout"}
            self._send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
            message = (
                f"recallbench proxy: {name} did not answer {method} within {timeout:g} s "
                f"({self.launch.call_timeout_from})"
            )
            raise MCPError(REQUEST_TIMEOUT, message) from None
        finally:
            self._waiting.pop(ident, None)
        result = answer.get("result")
        if isinstance(result, dict):
            return result
        error = answer.get("error")
        error = error if isinstance(error, dict) else {}
        raise MCPError(int(error.get("code", 0)), str(error.get("message", "")), error.get("data"))

    def _send(self, message: dict[str, Any]) -> None:
        stdin = self.upstream.process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.write(json_line(message))

    async def _read(self) -> None:
        stdout = self.upstream.process.stdout
        assert stdout is not None
        while line := await stdout.readline():
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            ident, method = message.get("id"), message.get("method")
            if method is None:
                future = self._waiting.get(ident) if type(ident) is int else None
                if future is not None and not future.done():
                    future.set_result(message)
            elif ident is not None:  # the server's own request
                if method == "ping":
                    self._send({"jsonrpc": "2.0", "id": ident, "result": {}})
                else:
                    unknown = {"code": -32601, "message": "Method not found"}
                    self._send({"jsonrpc": "2.0", "id": ident, "error": unknown})
        self._gone()

    def _gone(self) -> None:
        from mcp.shared.exceptions import MCPError

        self.lost.set()
        message = f"recallbench proxy: {self.launch.name} closed the connection (it exited)"
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(MCPError(CONNECTION_CLOSED, message))
