"""How serving stops, over stdio and HTTP alike: on SIGINT or SIGTERM, or when the upstream
server exits (the proxy then stops with ``UpstreamLost``'s status); before the shadow
closes, its pairs queued or in flight get ``SHUTDOWN_GRACE`` seconds to be completed and
written (:func:`drain`)."""

from __future__ import annotations

import signal
from collections.abc import Callable

import anyio

from recallbench.online._proxy import Proxy
from recallbench.online._upstream import Upstream, UpstreamLost
from recallbench.online._wire import RelayUpstream, warn

SHUTDOWN_GRACE = 2
"""Seconds an HTTP proxy lets calls in flight be answered after a signal; then those still
waiting on the server get an error reply."""
REPLY_GRACE = 0.5
"""Seconds between the upstream's exit being noticed and the proxy stopping: the error
reply to the call that noticed it goes out first."""
LOST_STATUS = UpstreamLost.exit_code
"""Exit status when the upstream server exited (:class:`UpstreamLost`'s, on every path)."""


async def on_signal(proxy: Proxy, stop: Callable[[int], None], finish: bool = True) -> None:
    """On SIGINT or SIGTERM: write the telemetry first (``finish``: over stdio, where the
    process may have to end without a clean return), then stop serving. Over HTTP the
    telemetry is written when serving has ended: calls answered meanwhile are logged."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            if finish:
                await drain(proxy)
                proxy.finish()
            stop(128 + signum)
            return


async def on_lost(
    proxy: Proxy, upstream: Upstream | RelayUpstream, stop: Callable[[int], None]
) -> None:
    """When the upstream server has exited: say so, write the telemetry, stop serving."""
    await upstream.lost.wait()
    warn(
        f"{upstream.launch.name}: the memory server closed the connection (it exited; its "
        f"own messages, if any, are above); stopping with status {LOST_STATUS}"
    )
    await anyio.sleep(REPLY_GRACE)
    await drain(proxy)
    proxy.finish()
    stop(LOST_STATUS)


async def drain(proxy: Proxy) -> None:
    """Before the shadow closes: its pairs queued or in flight get ``SHUTDOWN_GRACE``
    seconds to be completed and written; the rest are counted as dropped, with why."""
    if proxy.shadow is not None:  # the relay hands calls over from the logging thread
        await proxy.shadow.drain(SHUTDOWN_GRACE, proxy.observer.wait)
