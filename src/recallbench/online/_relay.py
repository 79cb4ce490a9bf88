"""The stdio proxy as a relay of JSON-RPC lines (issue 22): the agent's lines go to the
upstream server's standard input and the server's lines to the agent as the bytes they
were, with the proxy acting only on what it must.

Through the SDK (a low-level ``Server`` facing the agent, a ``ClientSession`` facing the
server) each call was parsed into the SDK's types and dumped again twice, and went through
about twenty wake-ups of the event loop (memory streams, task groups, middleware): 2.6 ms
added to a 1.1 ms search of server-memory, 1.8 ms of CPU per call. Here a call is two reads
and two writes of a line, one ``json.loads`` of the agent's (small) request, and a look at
the first and last bytes of the server's answer for its id.

What is parsed and acted on:

* ``initialize`` passes through: the agent gets the server's own answer (its protocol
  version negotiation, capabilities, identity), byte for byte. Once the agent has sent
  ``notifications/initialized`` the proxy lists the server's tools itself (ids
  ``recallbench-proxy:N``, a prefix no client uses) and stops with the same error as the
  SDK path at start when the profile's search tool is missing or one of the proxy's own
  tools would be hidden.
* The answer to ``tools/list`` gets the proxy's own tools appended on its last page
  (``--validate-tool``, ``--outcome-tool``): only that answer is rewritten (JSON dumped
  again, compact as the servers send it).
* ``tools/call`` of the proxy's own tools is answered here and never forwarded. Any other
  ``tools/call`` is forwarded at once; when its answer has been written to the agent, the
  request (tool, arguments, start time) and the raw answer go to the proxy's logging
  thread (:class:`~recallbench.online._proxy.Observer`), which parses it, logs the search
  and the feedback, and hands the call to the shadow (on the event loop, in order).
* Every request the agent sends gets an answer: the server's, or a ``REQUEST_TIMEOUT``
  error after ``call_timeout`` (the server then gets ``notifications/cancelled`` and its
  late answer is dropped), or a ``CONNECTION_CLOSED`` error when the server exits, with
  the same messages as the SDK path (:mod:`recallbench.online._upstream`).
* Notifications and the server's own requests (sampling, roots, pings, progress) and the
  agent's answers to them pass through both ways, ids untouched (the proxy sends the
  agent nothing of its own).
* A line from the agent that is not JSON gets the JSON-RPC parse error (code -32700, id
  null), as the SDK's Streamable HTTP transport answers (its stdio transport and the
  TypeScript SDK's drop such a line without a word); a blank line is ignored.
* Lines have no length limit (1 GiB): a memory of several megabytes is one line.

The relay serves stdio agents in front of stdio servers when the proxy's standard input
and output are pipes or sockets; interleaving (which rewrites search answers), a Streamable
HTTP side, or a terminal go through the SDK (:mod:`recallbench.online._serve`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import sys
import threading
import time
import uuid
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from recallbench.core import SystemUnderTestError
from recallbench.online._proxy import OUTCOME_TOOL, VALIDATE_TOOL, ProxySession, warn
from recallbench.online._stdio import LIMIT

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from recallbench.online._proxy import Proxy
    from recallbench.online._upstream import Launch

PARSE_ERROR = -32700
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001
"""JSON-RPC codes, as ``mcp_types`` names them (not imported: the relay starts lean)."""
OWN_ID = "recallbench-proxy:"
"""Prefix of the ids of the proxy's own requests to the server (strings: agents count)."""
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


def _dump(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def error_line(ident: Any, code: int, message: str) -> bytes:
    return _dump({"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}})


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


@dataclass(slots=True)
class _Call:
    """A forwarded ``tools/call``: what the logging thread needs once it is answered."""

    name: str
    arguments: dict[str, Any]
    started: float
    clock: float
    query_id: str
    session: ProxySession


@dataclass(slots=True)
class _Waiting:
    """A request of the agent the server has not answered yet."""

    ident: Any
    method: str
    timer: asyncio.TimerHandle | None
    call: _Call | None = None


class Relay:
    """Relays one agent (``reader``, ``writer``: the proxy's standard input and output) to
    ``upstream`` for ``proxy`` (its logging, feedback, shadow and own tools)."""

    def __init__(
        self,
        proxy: Proxy,
        upstream: RelayUpstream,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self.proxy = proxy
        self.upstream = upstream
        self.reader = reader
        self.writer = writer
        server_in = upstream.process.stdin
        assert server_in is not None
        self.server_in: asyncio.StreamWriter = server_in
        self.waiting: dict[Any, _Waiting] = {}
        self._late: set[Any] = set()
        """Keys of requests answered with a timeout: the server's late answer is dropped."""
        self._own: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._own_count = 0
        self._checked = False
        self._settled = asyncio.Event()
        """Set while no request of the agent waits for the server."""
        self._settled.set()
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        own = [VALIDATE_TOOL] if proxy.validate_tool else []
        own += [OUTCOME_TOOL] if proxy.outcome_tool else []
        self._own_tools = frozenset(own)

    async def run(self) -> None:
        """Relay until the agent closes its side and every request it sent is answered
        (or the server exits: the serving code stops the proxy, see ``upstream.lost``)."""
        async with anyio.create_task_group() as group:
            group.start_soon(self._from_server)
            await self._from_agent(group)
            while self.waiting and not self.upstream.lost.is_set():
                await self._settled.wait()
            group.cancel_scope.cancel()

    # --- the agent's side ----------------------------------------------------------------

    async def _from_agent(self, group: TaskGroup) -> None:
        readline = self.reader.readline
        while True:
            line = await readline()
            if not line:
                return
            if not line.endswith(b"\n"):
                line += b"\n"
            try:
                message = json.loads(line)
            except ValueError:
                if line.strip():
                    self.writer.write(error_line(None, PARSE_ERROR, "Parse error"))
                continue
            if not isinstance(message, dict) or not isinstance(message.get("method"), str):
                self._to_server(line)  # an answer to the server's request (or its to judge)
            elif "id" not in message:
                self._notification(message, line, group)
            else:
                self._request(message, line)
            await self._drain()

    def _notification(self, message: dict[str, Any], line: bytes, group: TaskGroup) -> None:
        self._to_server(line)
        method = message["method"]
        if method == "notifications/cancelled":
            params = message.get("params")
            if isinstance(params, dict) and "requestId" in params:
                with suppress(TypeError):
                    self._forget(id_key(params["requestId"]))
        elif method == "notifications/initialized" and not self._checked:
            self._checked = True
            group.start_soon(self._check_tools)

    def _request(self, message: dict[str, Any], line: bytes) -> None:
        ident, method = message["id"], message["method"]
        call = None
        if method == "tools/call":
            params = message.get("params")
            params = params if isinstance(params, dict) else {}
            name = params.get("name")
            arguments = params.get("arguments")
            arguments = arguments if isinstance(arguments, dict) else {}
            if name in self._own_tools:
                self._answer_own(ident, str(name), arguments)
                return
            proxy = self.proxy
            call = _Call(
                str(name),
                arguments,
                time.perf_counter(),
                time.monotonic(),
                uuid.uuid4().hex,  # the search's id in query_log and shadow_runs alike
                proxy.session_of(None),
            )
            if proxy.shadow is not None:
                proxy.shadow.calls_started()
            elif proxy.absent is not None:
                proxy.absent.count(call.name)
        if self.upstream.lost.is_set():  # the proxy is stopping: no server to ask
            closed = f"recallbench proxy: {self.upstream.launch.name} closed the connection"
            self.writer.write(error_line(ident, CONNECTION_CLOSED, closed + " (it exited)"))
            if call is not None and self.proxy.shadow is not None:
                self.proxy.shadow.calls_ended()
            return
        try:
            key = id_key(ident)
        except TypeError:  # an id JSON-RPC does not allow: the server answers as it does
            self._to_server(line)
            return
        timer = self._loop.call_later(self._timeout(method), self._timed_out, key)
        previous = self.waiting.get(key)
        if previous is not None and previous.timer is not None:  # a client reusing an id
            previous.timer.cancel()
        self.waiting[key] = _Waiting(ident, method, timer, call)
        self._settled.clear()
        self._to_server(line)

    def _to_server(self, line: bytes) -> None:
        """Write to the server unless its input is closed (it exited: the reader sees the
        end of its output and answers what waits)."""
        if not self.server_in.is_closing():
            self.server_in.write(line)

    async def _drain(self) -> None:
        """Wait while either side reads slower than we write; a side that went away is
        not an error here (the server's end is seen by the reader, the agent's by EOF)."""
        with suppress(ConnectionError):
            await self.server_in.drain()
        with suppress(ConnectionError):
            await self.writer.drain()

    def _answer_own(self, ident: Any, name: str, arguments: dict[str, Any]) -> None:
        """One of the proxy's own tools, answered here (as the SDK path does, on the loop:
        a validation first waits for the searches it may refer to be logged)."""
        proxy = self.proxy
        session = proxy.session_of(None)
        if name == VALIDATE_TOOL:
            proxy.observer.wait()
            result = proxy._validate(session, arguments)
        else:
            result = proxy._outcome(session, arguments)
        self.writer.write(_dump({"jsonrpc": "2.0", "id": ident, "result": result}))

    # --- the server's side ---------------------------------------------------------------

    async def _from_server(self) -> None:
        stdout = self.upstream.process.stdout
        assert stdout is not None
        readline, write = stdout.readline, self.writer.write
        while True:
            line = await readline()
            if not line:
                break
            if not line.endswith(b"\n"):
                line += b"\n"
            ident = response_id(line)
            if ident is NO_ID:
                try:
                    message = json.loads(line)
                except ValueError:
                    message = None
                if (
                    not isinstance(message, dict)
                    or "method" in message
                    or "id" not in message
                    or not ("result" in message or "error" in message)
                ):
                    write(line)  # a notification or a request of the server's: the agent's
                    await self._drain()
                    continue
                ident = message["id"]
            try:
                key = id_key(ident)
            except TypeError:
                key = None
            if type(ident) is str and ident.startswith(OWN_ID) and key not in self.waiting:
                if ident in self._own:  # the proxy's own request (late: dropped)
                    self._own_answer(ident, line)
                continue
            waiting = self.waiting.pop(key, None)
            if waiting is None:
                if key in self._late:  # the agent had its timeout error already
                    self._late.discard(key)
                else:
                    write(line)
                    await self._drain()
                continue
            if waiting.timer is not None:
                waiting.timer.cancel()
            if waiting.method == "tools/list" and self._own_tools:
                line = self._with_own_tools(line)
            write(line)
            if waiting.call is not None:
                self._answered(waiting.call, line)
            if not self.waiting:
                self._settled.set()
            await self._drain()
        self._server_gone()

    def _with_own_tools(self, line: bytes) -> bytes:
        """The last page of ``tools/list`` with the proxy's own tools appended."""
        from recallbench.online._proxy import OUTCOME_SCHEMA, VALIDATE_SCHEMA

        message = json.loads(line)
        result = message.get("result")
        if not isinstance(result, dict) or result.get("nextCursor"):
            return line
        own = [VALIDATE_SCHEMA] if VALIDATE_TOOL in self._own_tools else []
        own += [OUTCOME_SCHEMA] if OUTCOME_TOOL in self._own_tools else []
        result["tools"] = [*(result.get("tools") or []), *own]
        return _dump(message)

    def _answered(self, call: _Call, line: bytes) -> None:
        """After the answer went to the agent: the logging thread parses and logs it."""
        latency_ms = (time.perf_counter() - call.started) * 1000
        proxy = self.proxy
        if proxy.shadow is not None:
            proxy.shadow.calls_ended()
        if proxy.watch.search_tool is not None or proxy.shadow is not None:
            proxy.observer.submit(functools.partial(self._observe, call, line, latency_ms))

    def _observe(self, call: _Call, line: bytes, latency_ms: float) -> None:
        """In the logging thread: log the answered call, then hand it to the shadow."""
        message = json.loads(line)
        result, error = message.get("result"), message.get("error")
        proxy = self.proxy
        if isinstance(result, dict) and proxy.watch.search_tool is not None:
            proxy._observe_safely(
                call.session,
                call.name,
                call.arguments,
                result,
                call.clock,
                latency_ms,
                call.query_id,
            )
        if proxy.shadow is not None:
            failure = None
            if not isinstance(result, dict):
                error = error if isinstance(error, dict) else {}
                failure = _error(error.get("code", 0), str(error.get("message", "")))
            answer = result if isinstance(result, dict) else None
            self._shadow_later(call, answer, latency_ms, failure)

    def _shadow_later(
        self,
        call: _Call,
        answer: dict[str, Any] | None,
        latency_ms: float,
        error: BaseException | None,
    ) -> None:
        """Hand an answered (or failed) call to the shadow on the event loop (its queue is
        the loop's); dropped (counted) once the loop has stopped."""
        shadow = self.proxy.shadow
        if shadow is None:
            return
        if shadow.closed:  # the proxy is stopping (its loop blocked): counted before it says
            shadow.missed(call.name, call.arguments)
            return
        observe = functools.partial(
            shadow.observe,
            call.name,
            call.arguments,
            answer,
            latency_ms,
            call.query_id,
            error,
            call.session.id,
        )
        if threading.get_ident() == self._thread:
            observe()
            return
        try:
            self._loop.call_soon_threadsafe(observe)
        except RuntimeError:  # the loop is closed: the proxy has stopped
            shadow.missed(call.name, call.arguments)

    def _timeout(self, method: str) -> float:
        """Seconds the server has to answer: ``initialize`` waits for the server to start
        (``startup_timeout``, as the SDK path's own handshake), the rest ``call_timeout``."""
        launch = self.upstream.launch
        return launch.startup_timeout if method == "initialize" else launch.call_timeout

    def _timed_out(self, key: Any) -> None:
        """The server did not answer within ``call_timeout``: the agent gets the SDK path's
        timeout error, the server a cancellation, and its late answer will be dropped."""
        waiting = self.waiting.pop(key, None)
        if waiting is None:
            return
        launch = self.upstream.launch
        setting = (
            "the profile's startup_timeout"
            if waiting.method == "initialize"
            else launch.call_timeout_from
        )
        message = (
            f"recallbench proxy: {launch.name} did not answer {waiting.method} "
            f"within {self._timeout(waiting.method):g} s ({setting})"
        )
        self._late.add(key)
        self.writer.write(error_line(waiting.ident, REQUEST_TIMEOUT, message))
        cancel = {"requestId": waiting.ident, "reason": "timeout"}
        self._to_server(
            _dump({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        )
        self._failed(waiting, REQUEST_TIMEOUT, message)

    def _forget(self, key: Any) -> None:
        """The agent cancelled a request: no timeout error for it any more."""
        waiting = self.waiting.pop(key, None)
        if waiting is not None:
            if waiting.timer is not None:
                waiting.timer.cancel()
            self._failed(waiting, None, "cancelled by the client")

    def _failed(self, waiting: _Waiting, code: int | None, message: str) -> None:
        call = waiting.call
        if call is not None and self.proxy.shadow is not None:
            self.proxy.shadow.calls_ended()
            if code is not None:
                latency_ms = (time.perf_counter() - call.started) * 1000
                self._shadow_later(call, None, latency_ms, _error(code, message))
        if not self.waiting:
            self._settled.set()

    def _server_gone(self) -> None:
        """The server's output ended (it exited): every waiting request gets the SDK path's
        connection-closed error, and the proxy is told to stop."""
        name = self.upstream.launch.name
        message = f"recallbench proxy: {name} closed the connection (it exited)"
        for waiting in list(self.waiting.values()):
            if waiting.timer is not None:
                waiting.timer.cancel()
            self.writer.write(error_line(waiting.ident, CONNECTION_CLOSED, message))
        waiting_now, self.waiting = list(self.waiting.values()), {}
        for waiting in waiting_now:
            self._failed(waiting, CONNECTION_CLOSED, message)
        for future in self._own.values():
            if not future.done():
                future.set_exception(SystemUnderTestError(message))
        self._settled.set()
        self.upstream.lost.set()

    # --- the proxy's own requests --------------------------------------------------------

    def _own_answer(self, ident: str, line: bytes) -> None:
        future = self._own.pop(ident)
        if not future.done():
            future.set_result(json.loads(line))

    async def _own_request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """A request of the proxy's own (an id the agent's cannot be); its result."""
        self._own_count += 1
        ident = f"{OWN_ID}{self._own_count}"
        future: asyncio.Future[dict[str, Any]] = self._loop.create_future()
        self._own[ident] = future
        message = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}
        self._to_server(_dump(message))
        await self._drain()
        launch = self.upstream.launch
        try:
            answer = await asyncio.wait_for(future, launch.call_timeout)
        finally:
            self._own.pop(ident, None)
        if not isinstance(answer.get("result"), dict):
            raise SystemUnderTestError(f"{launch.name}: {method} failed: {answer.get('error')}")
        result: dict[str, Any] = answer["result"]
        return result

    async def _check_tools(self) -> None:
        """As the SDK path checks at start: the server's tools must hold the profile's
        search tool and not hide the proxy's own (SystemUnderTestError ends the proxy)."""
        names: list[str] = []
        cursor: Any = None
        try:
            while True:
                page = await self._own_request("tools/list", {"cursor": cursor} if cursor else {})
                tools = page.get("tools")
                names += [str(t.get("name")) for t in tools or [] if isinstance(t, dict)]
                cursor = page.get("nextCursor")
                if not cursor:
                    break
        except TimeoutError:
            warn(f"{self.upstream.launch.name}: did not list its tools; they are not checked")
            return
        except SystemUnderTestError:
            if self.upstream.lost.is_set():
                return  # the serving code says the server exited
            raise
        self.proxy.check_names(names)


def _error(code: int, message: str) -> BaseException:
    """The exception the SDK path would have seen for a failed call (the shadow stores its
    description: ``timeout`` for a timeout)."""
    from mcp.shared.exceptions import MCPError

    return MCPError(code, message)


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
            stdin.write(_dump(message))

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
