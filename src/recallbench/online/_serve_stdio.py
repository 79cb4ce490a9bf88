"""Serve the agent over standard input and output: the SDK's stdio server, or the relay of
JSON-RPC lines (:mod:`recallbench.online._relay`).

A signal while the client still holds our input open may not end the reader (the SDK's, a
thread blocked reading standard input, when it is not a pipe; ``_stdio``): after writing
the telemetry, the proxy waits ``SIGNAL_GRACE`` seconds for a clean end, then exits as a
plain stdio server would on that signal (a stdio upstream server sees its input close and
ends too).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any

import anyio

from recallbench.online._proxy import Proxy
from recallbench.online._relay import Relay
from recallbench.online._relayed import RelayedCalls
from recallbench.online._serve_stop import on_lost, on_signal
from recallbench.online._stdio import loop_stdio
from recallbench.online._upstream import Upstream
from recallbench.online._wire import RelayUpstream

SIGNAL_GRACE = 1.0
"""Seconds a stdio proxy waits after a signal before exiting without the SDK's clean-up."""


async def serve_stdio(server: Any, proxy: Proxy, upstream: Upstream) -> None:
    from mcp.server.stdio import stdio_server

    async def serve() -> None:
        async with loop_stdio() as pipes, stdio_server(*(pipes or ())) as (read, write):
            await server.run(read, write, server.create_initialization_options())

    await _until_stopped(serve, proxy, upstream)


async def serve_relay(proxy: Proxy, upstream: RelayUpstream) -> None:
    """Serve the agent on standard input and output with the relay (signals and the
    server's exit are handled as for the SDK's stdio server)."""

    async def serve() -> None:
        async with loop_stdio() as streams:
            assert streams is not None  # pipes(): the relay was chosen for them
            reader, writer = streams
            await Relay(RelayedCalls(proxy), upstream, reader.stream, writer.writer).run()

    await _until_stopped(serve, proxy, upstream)


async def _until_stopped(
    serve: Callable[[], Awaitable[None]], proxy: Proxy, upstream: Upstream | RelayUpstream
) -> None:
    """Run ``serve`` until it returns, a signal comes, or the server exits; after a stop
    the process ends within ``SIGNAL_GRACE`` seconds even if serving does not."""

    def stop(status: int) -> None:
        group.cancel_scope.cancel()
        timer = threading.Timer(SIGNAL_GRACE, _exit, (status, upstream.pid))
        timer.daemon = True  # a clean end within the grace does not wait for it
        timer.start()

    async with anyio.create_task_group() as group:
        group.start_soon(on_signal, proxy, stop)
        group.start_soon(on_lost, proxy, upstream, stop)
        await serve()
        group.cancel_scope.cancel()


def _exit(status: int, pid: int | None) -> None:
    """End now (the telemetry is written): stop a Streamable HTTP upstream we started."""
    if pid is not None:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    os._exit(status)
