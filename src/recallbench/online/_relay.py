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
  raw answer goes to the session logic above (:class:`RelayCalls`: the proxy's logging
  thread parses it, logs the search and the feedback, and hands the call to the shadow,
  :mod:`recallbench.online._relayed`).
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

The relay is the wire layer: it knows lines, ids and timeouts, and what a call means is
asked of :class:`RelayCalls`; it imports no session logic, and no shadowing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from recallbench.core import SystemUnderTestError
from recallbench.online._wire import (
    CONNECTION_CLOSED,
    NO_ID,
    PARSE_ERROR,
    REQUEST_TIMEOUT,
    RelayUpstream,
    error_line,
    id_key,
    json_line,
    response_id,
    warn,
)

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

OWN_ID = "recallbench-proxy:"
"""Prefix of the ids of the proxy's own requests to the server (strings: agents count)."""


class RelayCalls(Protocol):
    """What the relay asks of the session logic above it about the agent's tool calls.
    :meth:`started` gives a token of a forwarded call, which comes back once, to
    :meth:`answered` or :meth:`failed`."""

    @property
    def own_tools(self) -> Sequence[Mapping[str, Any]]:
        """The proxy's own tools, as ``tools/list`` entries: appended to the last page of
        the server's list, and answered by :meth:`answer_own` (never forwarded)."""
        ...

    def answer_own(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The result of a call of one of :attr:`own_tools`."""
        ...

    def started(self, name: str, arguments: dict[str, Any]) -> Any:
        """The agent calls the server's tool ``name``: the call's token."""
        ...

    def answered(self, call: Any, line: bytes) -> None:
        """The server's answer to ``call`` (its JSON-RPC line) has gone to the agent."""
        ...

    def failed(self, call: Any, code: int | None, message: str) -> None:
        """``call`` got no answer from the server. ``code`` and ``message``: the JSON-RPC
        error the agent got instead (a timeout, the server's exit); ``code`` None when the
        agent cancelled the call or it never reached the server (nothing to record)."""
        ...

    def check_names(self, names: list[str]) -> None:
        """The server's tool names, listed once the agent's handshake is done
        (SystemUnderTestError, which ends the proxy, when they do not serve)."""
        ...


@dataclass(slots=True)
class _Waiting:
    """A request of the agent the server has not answered yet."""

    ident: Any
    method: str
    timer: asyncio.TimerHandle | None
    call: Any = None
    """For a forwarded ``tools/call``: its token (:meth:`RelayCalls.started`)."""


class Relay:
    """Relays one agent (``reader``, ``writer``: the proxy's standard input and output) to
    ``upstream``; what the agent's tool calls mean is for ``calls`` (the proxy's logging,
    feedback, shadow and own tools)."""

    def __init__(
        self,
        calls: RelayCalls,
        upstream: RelayUpstream,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self.calls = calls
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
        self._own_tools = frozenset(str(tool["name"]) for tool in calls.own_tools)

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
            call = self.calls.started(str(name), arguments)
        if self.upstream.lost.is_set():  # the proxy is stopping: no server to ask
            closed = f"recallbench proxy: {self.upstream.launch.name} closed the connection"
            self.writer.write(error_line(ident, CONNECTION_CLOSED, closed + " (it exited)"))
            if call is not None:  # never sent to the server
                self.calls.failed(call, None, closed)
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
        """One of the proxy's own tools, answered here (as the SDK path does, on the loop)."""
        result = self.calls.answer_own(name, arguments)
        self.writer.write(json_line({"jsonrpc": "2.0", "id": ident, "result": result}))

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
            if waiting.call is not None:  # once the answer has gone to the agent
                self.calls.answered(waiting.call, line)
            if not self.waiting:
                self._settled.set()
            await self._drain()
        self._server_gone()

    def _with_own_tools(self, line: bytes) -> bytes:
        """The last page of ``tools/list`` with the proxy's own tools appended."""
        message = json.loads(line)
        result = message.get("result")
        if not isinstance(result, dict) or result.get("nextCursor"):
            return line
        result["tools"] = [*(result.get("tools") or []), *self.calls.own_tools]
        return json_line(message)

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
            json_line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
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
        if waiting.call is not None:
            self.calls.failed(waiting.call, code, message)
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
        self._to_server(json_line(message))
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
        self.calls.check_names(names)
