"""Serve the agent over Streamable HTTP on 127.0.0.1 (uvicorn, behind the token and Origin
:class:`~recallbench.online._guard.Guard`).

A signal stops new connections; the calls in flight get ``SHUTDOWN_GRACE`` seconds to be
answered (and logged), then those still waiting on the server get a JSON-RPC error reply;
clients still connected (an open event stream) are disconnected ``CUT_REPLY_GRACE`` seconds
later. The telemetry is written once serving has ended, so that every answered call is in
the log.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio

from recallbench.core import ConfigError
from recallbench.online._guard import Guard, new_token
from recallbench.online._proxy import Proxy
from recallbench.online._proxy_options import ProxyOptions
from recallbench.online._serve_stop import SHUTDOWN_GRACE, on_lost, on_signal
from recallbench.online._upstream import Upstream
from recallbench.online._wire import warn

CUT_REPLY_GRACE = 1
"""Seconds after ``SHUTDOWN_GRACE`` before the HTTP proxy closes connections still open
(the error replies of the calls cut go out first)."""
MAX_BODY = 256 * 1024 * 1024
"""Largest request the HTTP proxy accepts (the SDK's default, 4 MiB, refuses a large memory
an agent writes)."""


async def serve_http(server: Any, proxy: Proxy, upstream: Upstream, options: ProxyOptions) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    class Web(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:  # signals are the proxy's (on_signal)
            yield

    port = options.http_port
    assert port is not None
    security = TransportSecuritySettings(  # Host checked by the SDK (DNS rebinding)
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=list(options.allow_origins),
    )
    app = server.streamable_http_app(
        host="127.0.0.1", max_request_body_size=MAX_BODY, transport_security=security
    )
    token = (options.token or new_token()) if options.auth else None
    config = uvicorn.Config(
        Guard(app, token, options.allow_origins),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        # the calls cut at SHUTDOWN_GRACE get their error replies before connections close
        timeout_graceful_shutdown=SHUTDOWN_GRACE + CUT_REPLY_GRACE,
    )
    web = Web(config)

    def stop(status: int) -> None:
        web.should_exit = True
        if status > 128:  # a signal: calls still waiting after the grace get an error
            group.start_soon(_cut_after, proxy, signal.Signals(status - 128).name)

    async with anyio.create_task_group() as group:
        group.start_soon(on_signal, proxy, stop, False)
        group.start_soon(on_lost, proxy, upstream, stop)
        warn(f"serving http://127.0.0.1:{port}/mcp{_access(options, token)}")
        try:
            await web.serve()
        except SystemExit:  # uvicorn's answer to a failed start (it has said why)
            raise ConfigError(f"cannot serve on 127.0.0.1:{port}") from None
        group.cancel_scope.cancel()


def _access(options: ProxyOptions, token: str | None) -> str:
    """How clients get in, for the line that says where the proxy serves."""
    if token is None:
        return " WITHOUT authentication (--no-auth): any local process can use it"
    if options.token is not None:
        return " (clients send the given token: Authorization: Bearer ...)"
    return f"\n  clients must send the header: Authorization: Bearer {token}"


async def _cut_after(proxy: Proxy, why: str) -> None:
    """After ``SHUTDOWN_GRACE`` seconds, calls still waiting on the server get an error."""
    await anyio.sleep(SHUTDOWN_GRACE)
    cut = proxy.cut_calls(why)
    if cut:
        calls = "1 call still waits" if cut == 1 else f"{cut} calls still wait"
        warn(f"{why}: {calls} on the server after {SHUTDOWN_GRACE} s: an error reply each")
