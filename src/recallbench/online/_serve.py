"""Run the proxy: start the upstream server, serve the client over stdio or Streamable HTTP,
and on the way out (end of input, SIGINT, SIGTERM) close the sessions and write the
telemetry before the upstream server is stopped.

Over stdio, a signal while the client still holds our input open cannot end the SDK's
reader (a thread blocked reading standard input): after writing the telemetry, the proxy
waits ``SIGNAL_GRACE`` seconds for a clean end, then exits as a plain stdio server would on
that signal (a stdio upstream server sees its input close and ends too).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from recallbench.core import ConfigError
from recallbench.online._proxy import Proxy, Watch, warn
from recallbench.online._upstream import Launch, Upstream, command_launch, profile_launch
from recallbench.systems._profile import Profile

SIGNAL_GRACE = 1.0
"""Seconds a stdio proxy waits after a signal before exiting without the SDK's clean-up."""


@dataclass(frozen=True, slots=True)
class ProxyOptions:
    profile: Profile | None = None
    command: tuple[str, ...] = ()
    """The upstream command line; with a profile, it replaces the profile's command."""
    store_dir: Path | None = None
    """The profile's ``{workdir}`` (created, kept); None: a temporary folder, removed."""
    store_url: str | None = None
    """Where telemetry goes (None: the default store)."""
    workspace: str = "default"
    http_port: int | None = None
    """Serve Streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio."""
    validate_tool: bool = False


async def serve(options: ProxyOptions) -> None:
    """Run the proxy until the client goes away or a signal stops it."""
    if options.http_port is not None:
        _check_port(options.http_port)
    async with AsyncExitStack() as stack:
        upstream = await Upstream.connect(_launch(options, stack), stack)
        logs = options.profile is not None or options.validate_tool  # else nothing to log
        proxy = Proxy(
            upstream,
            Watch.of(options.profile, _name(options)),
            _telemetry(options) if logs else None,
            validate_tool=options.validate_tool,
        )
        try:
            await proxy.check_tools()
            server = proxy.server()
            if options.http_port is None:
                await _serve_stdio(server, proxy, upstream)
            else:
                await _serve_http(server, proxy, options.http_port)
        finally:
            proxy.finish()  # before the upstream server stops (the stack closes)


def _check_port(port: int) -> None:
    """ConfigError when 127.0.0.1:port is taken (before the upstream server starts)."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            raise ConfigError(
                f"--http {port}: cannot listen on 127.0.0.1:{port}: {error}"
            ) from None


def _name(options: ProxyOptions) -> str:
    if options.profile is not None:
        return options.profile.name
    return Path(options.command[0]).name if options.command else "upstream"


def _launch(options: ProxyOptions, stack: AsyncExitStack) -> Launch:
    if options.profile is None:
        return command_launch(options.command)
    if options.store_dir is not None:
        options.store_dir.mkdir(parents=True, exist_ok=True)
        workdir = options.store_dir.resolve()
    else:
        workdir = Path(tempfile.mkdtemp(prefix=f"recallbench-proxy-{options.profile.name}-"))
        stack.callback(shutil.rmtree, workdir, ignore_errors=True)
    return profile_launch(options.profile, workdir, options.command)


def _telemetry(options: ProxyOptions) -> Any:
    """The logger; when the store cannot be opened, a warning and no logging (the agent's
    memory keeps working)."""
    from recallbench.store import open_store
    from recallbench.telemetry import TelemetryLogger

    try:
        open_store(options.store_url, workspace=options.workspace).close()
    except Exception as error:
        warn(f"telemetry is off: the store cannot be opened: {error}")
        return None
    return TelemetryLogger(options.store_url, workspace=options.workspace)


async def _serve_stdio(server: Any, proxy: Proxy, upstream: Upstream) -> None:
    from mcp.server.stdio import stdio_server

    def stop(signum: int) -> None:
        group.cancel_scope.cancel()
        timer = threading.Timer(SIGNAL_GRACE, _exit, (signum, upstream.pid))
        timer.daemon = True  # a clean end within the grace does not wait for it
        timer.start()

    async with anyio.create_task_group() as group:
        group.start_soon(_on_signal, proxy, stop)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        group.cancel_scope.cancel()


async def _serve_http(server: Any, proxy: Proxy, port: int) -> None:
    import uvicorn

    class Web(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:  # signals are the proxy's (_on_signal)
            yield

    app = server.streamable_http_app(host="127.0.0.1")
    web = Web(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))

    def stop(signum: int) -> None:
        web.should_exit = True

    async with anyio.create_task_group() as group:
        group.start_soon(_on_signal, proxy, stop)
        warn(f"serving http://127.0.0.1:{port}/mcp")
        try:
            await web.serve()
        except SystemExit:  # uvicorn's answer to a failed start (it has said why)
            raise ConfigError(f"cannot serve on 127.0.0.1:{port}") from None
        group.cancel_scope.cancel()


async def _on_signal(proxy: Proxy, stop: Callable[[int], None]) -> None:
    """On SIGINT or SIGTERM: write the telemetry first, then stop serving."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            proxy.finish()
            stop(signum)
            return


def _exit(signum: int, pid: int | None) -> None:
    """End now (the telemetry is written): stop a Streamable HTTP upstream we started."""
    if pid is not None:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    os._exit(128 + signum)
