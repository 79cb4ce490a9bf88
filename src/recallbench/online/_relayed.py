"""The proxy's session logic served through the relay of JSON-RPC lines
(:mod:`recallbench.online._relay`): :class:`RelayedCalls` answers what the relay asks of it
(:class:`~recallbench.online._relay.RelayCalls`) with the proxy's sessions
(:class:`~recallbench.online._proxy_sessions.ProxySessions`).

Over stdio there is one session. A forwarded ``tools/call`` is timed from when the relay
forwards it; when its answer has been written to the agent, the request (tool, arguments,
start time) and the raw answer go to the proxy's logging thread, which parses it, logs the
search and the feedback, and hands the call to the shadow (on the event loop, in order).
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from recallbench.online._proxy_sessions import ProxySession, ProxySessions
from recallbench.online._wire import rpc_error


@dataclass(slots=True)
class _Call:
    """A forwarded ``tools/call``: what the logging thread needs once it is answered."""

    name: str
    arguments: dict[str, Any]
    started: float
    clock: float
    query_id: str
    session: ProxySession


class RelayedCalls:
    """What the relay asks about the agent's tool calls, answered by ``proxy``'s sessions
    (made on the relay's event loop: its logging thread hands calls back to it)."""

    def __init__(self, proxy: ProxySessions) -> None:
        self.proxy = proxy
        self.own_tools = proxy.own_tools()
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()

    def answer_own(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One of the proxy's own tools (on the loop, as the SDK path answers it)."""
        proxy = self.proxy
        result = proxy.answer_own(proxy.session_of(None), name, arguments)
        assert result is not None, name  # the relay asks only of own_tools
        return result

    def started(self, name: str, arguments: dict[str, Any]) -> _Call:
        proxy = self.proxy
        call = _Call(
            name,
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
        return call

    def answered(self, call: _Call, line: bytes) -> None:
        """After the answer went to the agent: the logging thread parses and logs it."""
        latency_ms = (time.perf_counter() - call.started) * 1000
        proxy = self.proxy
        if proxy.shadow is not None:
            proxy.shadow.calls_ended()
        if proxy.watch.search_tool is not None or proxy.shadow is not None:
            proxy.observer.submit(functools.partial(self._observe, call, line, latency_ms))

    def failed(self, call: _Call, code: int | None, message: str) -> None:
        shadow = self.proxy.shadow
        if shadow is not None:
            shadow.calls_ended()
            if code is not None:
                latency_ms = (time.perf_counter() - call.started) * 1000
                self._shadow_later(call, None, latency_ms, rpc_error(code, message))

    def check_names(self, names: list[str]) -> None:
        self.proxy.check_names(names)

    def _observe(self, call: _Call, line: bytes, latency_ms: float) -> None:
        """In the logging thread: log the answered call, then hand it to the shadow."""
        message = json.loads(line)
        result, error = message.get("result"), message.get("error")
        proxy = self.proxy
        if isinstance(result, dict) and proxy.watch.search_tool is not None:
            proxy.observe_safely(
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
                failure = rpc_error(error.get("code", 0), str(error.get("message", "")))
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
