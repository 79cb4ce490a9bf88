"""Run the proxy: start the upstream server, serve the client over stdio or Streamable HTTP,
and on the way out (end of input, SIGINT, SIGTERM) close the sessions and write the
telemetry before the upstream server is stopped.

Over stdio, in front of a stdio server, with standard input and output pipes or sockets and
no ``--interleave``, the relay of JSON-RPC lines serves (:mod:`recallbench.online._relay`;
``ProxyOptions.relay`` False: never); otherwise the SDK's server and client.

Over stdio, a signal while the client still holds our input open may not end the reader
(the SDK's, a thread blocked reading standard input, when it is not a pipe; ``_stdio``):
after writing the telemetry, the proxy waits ``SIGNAL_GRACE`` seconds for a clean end, then
exits as a plain stdio server would on that signal (a stdio upstream server sees its input
close and ends too). Over HTTP, a signal stops new connections; the calls in flight get
``SHUTDOWN_GRACE`` seconds to be answered (and logged), then those still waiting on the
server get a JSON-RPC error reply (the proxy then exits with status 130, "interrupted":
:class:`Interrupted`); clients still connected (an open event stream) are disconnected
``CUT_REPLY_GRACE`` seconds later. The telemetry is written once nothing can be answered any
more, so that every answered call is in the log the exit line counts.

When the upstream server exits, the call that found out gets an error, the proxy says so
on standard error, writes the telemetry and stops with ``UpstreamLost``'s status.

The store is opened before anything starts: with ``require_store`` (an explicit
``--store``) a store that cannot be opened stops the proxy (:class:`StoreUnavailable`: 2
when the store is malformed, 69 when the database failed); otherwise the proxy serves with
telemetry off and says at exit how many records were not stored. A ``--shadow`` candidate
that does not start within ``SHADOW_START`` seconds, exits or lacks its tools is left out
(:mod:`recallbench.online._shadow_absent`): the agent is served by the primary alone. On
the way out the shadow's pairs queued or in flight get ``SHUTDOWN_GRACE`` seconds to be
completed and written, before the telemetry; those still unfinished are counted as dropped,
by stage, in its exit line (:mod:`recallbench.online._shadow_ledger`).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import tempfile
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio

from recallbench.core import ConfigError, RecallbenchError, SystemUnderTestError
from recallbench.online._guard import Guard, new_token
from recallbench.online._proxy import Proxy
from recallbench.online._proxy_sessions import Watch
from recallbench.online._relay import Relay
from recallbench.online._relayed import RelayedCalls
from recallbench.online._shadow import Shadow
from recallbench.online._shadow_absent import SHADOW_START, AbsentShadow
from recallbench.online._stdio import loop_stdio, pipes
from recallbench.online._upstream import (
    Launch,
    Upstream,
    UpstreamLost,
    command_launch,
    profile_launch,
)
from recallbench.online._wire import NICE, LineClient, RelayUpstream, warn
from recallbench.systems._profile import Profile

SIGNAL_GRACE = 1.0
"""Seconds a stdio proxy waits after a signal before exiting without the SDK's clean-up."""
SHUTDOWN_GRACE = 2
"""Seconds an HTTP proxy lets calls in flight be answered after a signal; then those still
waiting on the server get an error reply."""
CUT_REPLY_GRACE = 1
"""Seconds after ``SHUTDOWN_GRACE`` before the HTTP proxy closes connections still open
(the error replies of the calls cut go out first)."""
REPLY_GRACE = 0.5
"""Seconds between the upstream's exit being noticed and the proxy stopping: the error
reply to the call that noticed it goes out first."""
MAX_BODY = 256 * 1024 * 1024
"""Largest request the HTTP proxy accepts (the SDK's default, 4 MiB, refuses a large memory
an agent writes)."""
LOST_STATUS = UpstreamLost.exit_code
"""Exit status when the upstream server exited (:class:`UpstreamLost`'s, on every path)."""
INTERRUPTED_STATUS = 130
"""Exit status when a signal cut calls short (the exit-code table's "interrupted")."""
SERVICE_STATUS = 69
"""Exit status when the store's database failed (the exit-code table's "a service failed")."""


class Interrupted(RecallbenchError):
    """A signal stopped the proxy while calls waited on the server (each got an error)."""

    exit_code = INTERRUPTED_STATUS


class StoreUnavailable(RecallbenchError):
    """The store asked for (``--store``) cannot be opened: nothing was started."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


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
    call_timeout: float | None = None
    """Seconds per forwarded request; None: the profile's ``call_timeout`` (30 without)."""
    store_texts: bool = True
    redact: tuple[str, ...] = ()
    token: str | None = None
    """The HTTP bearer token; None: one is generated and printed."""
    auth: bool = True
    """False: no token asked over HTTP (``--no-auth``)."""
    allow_origins: tuple[str, ...] = ()
    """Browser origins allowed over HTTP (any other Origin is refused)."""
    shadow: Profile | None = None
    """The candidate of shadow mode (needs ``profile``: its tools say what to mirror)."""
    shadow_percent: float = 10.0
    """Searches mirrored to the candidate (sampled by a hash of the query)."""
    shadow_store_dir: Path | None = None
    """The candidate's ``{workdir}``; None: a temporary folder, removed."""
    interleave: bool = False
    """Show the agent the team-draft interleaving of both lists (with ``shadow``)."""
    interleave_wait: float = 0.5
    """Seconds a search's answer waits for the candidate's list before the primary's goes."""
    outcome_tool: bool = False
    """Serve the session-outcome tool (answered by the proxy, never forwarded)."""
    relay: bool = True
    """Relay JSON-RPC lines (:mod:`recallbench.online._relay`) where it can serve; False:
    always the SDK's server and client."""
    require_store: bool = False
    """A store that cannot be opened stops the proxy before it starts; False: it serves
    with telemetry off and counts the records not stored."""


async def serve(options: ProxyOptions) -> None:
    """Run the proxy until the client goes away or a signal stops it."""
    if options.http_port is not None:
        _check_port(options.http_port)
    logs = options.profile is not None or options.validate_tool  # else nothing to log
    off = _open_store(options) if logs else None  # before anything starts
    async with AsyncExitStack() as stack:
        launch = _launch(options, stack)
        upstream: Upstream | RelayUpstream
        if _relays(options, launch):
            upstream = await RelayUpstream.start(launch, stack)
        else:
            upstream = await Upstream.connect(launch, stack)
        shadow, absent = await _shadow(options, stack)
        proxy = Proxy(
            upstream,
            Watch.of(options.profile, _name(options)),
            _telemetry(options) if logs and off is None else None,
            validate_tool=options.validate_tool,
            shadow=shadow,
            outcome_tool=options.outcome_tool,
            store_url=options.store_url,
            workspace=options.workspace,
            telemetry_off=off,
            absent=absent,
        )
        try:
            if isinstance(upstream, Upstream):  # the relay checks after the agent's handshake
                await proxy.check_tools()
            async with anyio.create_task_group() as group:
                if shadow is not None:  # the candidate is served by a task of its own
                    group.start_soon(shadow.run)
                if isinstance(upstream, RelayUpstream):
                    await _serve_relay(proxy, upstream)
                elif options.http_port is None:
                    await _serve_stdio(proxy.server(), proxy, upstream)
                else:
                    await _serve_http(proxy.server(), proxy, upstream, options)
                await _drain(proxy)  # the pairs in flight get the grace the calls had
                group.cancel_scope.cancel()
        finally:
            proxy.finish()  # before the upstream server stops (the stack closes)
        if upstream.lost.is_set():
            raise UpstreamLost(f"{upstream.launch.name}: the memory server exited")
        if proxy.cut:
            calls = "1 call" if proxy.cut == 1 else f"{proxy.cut} calls"
            raise Interrupted(
                f"stopped by {proxy.stopping} with {calls} in flight that "
                f"{upstream.launch.name} had not answered within {SHUTDOWN_GRACE} s: "
                "the agent got a JSON-RPC error for each"
            )


def _relays(options: ProxyOptions, launch: Launch) -> bool:
    """Whether the relay can do all that is asked: stdio on both sides, on pipes or
    sockets, and no interleaving (it rewrites search answers: the SDK path does)."""
    return (
        options.relay
        and options.http_port is None
        and not options.interleave
        and launch.transport == "stdio"
        and pipes()
    )


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
        launch = command_launch(options.command)
    else:
        workdir = _workdir(options.profile, options.store_dir, stack)
        launch = profile_launch(options.profile, workdir, options.command)
    if options.call_timeout is not None:
        launch = replace(
            launch, call_timeout=options.call_timeout, call_timeout_from="--call-timeout"
        )
    return launch


def _workdir(profile: Profile, store_dir: Path | None, stack: AsyncExitStack) -> Path:
    """``store_dir`` (created, kept), or a temporary folder removed when ``stack`` closes."""
    if store_dir is not None:
        store_dir.mkdir(parents=True, exist_ok=True)
        return store_dir.resolve()
    workdir = Path(tempfile.mkdtemp(prefix=f"recallbench-proxy-{profile.name}-"))
    stack.callback(shutil.rmtree, workdir, ignore_errors=True)
    return workdir


async def _shadow(
    options: ProxyOptions, stack: AsyncExitStack
) -> tuple[Shadow | None, AbsentShadow | None]:
    """The candidate of ``--shadow``, started (its own folder, its profile's timeouts, at
    most ``SHADOW_START`` seconds to start) and checked, with the store its runs go to
    (None when the store cannot be opened: mirrored anyway). A candidate that does not
    start is stopped and left out: (None, what the proxy counts in its place)."""
    candidate = options.shadow
    if candidate is None:
        return None, None
    primary = options.profile
    if primary is None:
        raise ConfigError("--shadow needs --profile (its tools say what to mirror)")
    own = await stack.enter_async_context(AsyncExitStack())  # closed now if it fails
    try:
        shadow = await _start_shadow(options, primary, candidate, own)
    except ConfigError:  # the options or the profile: the user's to fix, now
        raise
    except Exception as error:  # it hung, exited, lacks its tools, cannot be run
        await own.aclose()
        reason = str(error).removeprefix(f"{candidate.name}: ")
        warn(
            f"shadow: the candidate {candidate.name} is left out: {reason}; serving without "
            "it (the calls it would have had are counted)"
        )
        absent = AbsentShadow(candidate.name, reason, primary.ingest.tool, primary.search.tool)
        return None, absent
    return shadow, None


async def _start_shadow(
    options: ProxyOptions, primary: Profile, candidate: Profile, stack: AsyncExitStack
) -> Shadow:
    """Start and check the candidate (SystemUnderTestError when it does not start)."""
    from recallbench.store import open_store

    workdir = _workdir(candidate, options.shadow_store_dir, stack)
    launch = profile_launch(candidate, workdir)
    launch = replace(launch, startup_timeout=min(launch.startup_timeout, SHADOW_START))
    upstream: Upstream | LineClient
    if options.relay and launch.transport == "stdio":  # lines, not the SDK's session
        # nobody waits for it (unless interleaving): it yields the CPU to the agent's side
        upstream = await LineClient.connect(launch, stack, 0 if options.interleave else NICE)
    else:
        upstream = await Upstream.connect(launch, stack)
    shadow = Shadow(
        upstream,
        primary,
        candidate,
        options.shadow_percent,
        interleave=options.interleave,
        wait=options.interleave_wait,
    )
    try:
        await shadow.check_tools()
    except SystemUnderTestError:
        raise
    except Exception as error:
        raise SystemUnderTestError(f"{candidate.name}: listing its tools failed: {error}") from None
    try:  # closed by the proxy once the last batch is written
        shadow.store = open_store(options.store_url, workspace=options.workspace)
    except Exception as error:
        warn(f"shadow runs are not stored: the store cannot be opened: {error}")
    return shadow


def _open_store(options: ProxyOptions) -> str | None:
    """Open and close the store before anything starts: None when it opens; otherwise why
    not (telemetry is then off), or StoreUnavailable when ``require_store``."""
    from recallbench.store import open_store

    try:
        open_store(options.store_url, workspace=options.workspace).close()
    except Exception as error:
        if options.require_store:
            raise StoreUnavailable(
                f"{error}\n  The proxy did not start: everything it logs would be lost. Fix "
                "the store, or pass --no-require-store to serve with telemetry off (the "
                "records not stored are counted at exit).",
                _store_status(error),
            ) from None
        warn(f"telemetry is off: the store cannot be opened: {error}")
        return str(error)
    return None


def _store_status(error: BaseException) -> int:
    """69 when the database failed (unreachable, full, an I/O error), else 2: the store
    given is malformed (a bad URL, a file that is not a store)."""
    import sqlalchemy.exc

    cause = error.__cause__ or error.__context__
    failed = isinstance(cause, sqlalchemy.exc.OperationalError) or (
        isinstance(cause, OSError) and not isinstance(cause, FileNotFoundError | IsADirectoryError)
    )
    return SERVICE_STATUS if failed else 2


def _telemetry(options: ProxyOptions) -> Any:
    """The logger (the store was opened already: :func:`_open_store`)."""
    from recallbench.telemetry import TelemetryLogger

    return TelemetryLogger(
        options.store_url,
        workspace=options.workspace,
        store_texts=options.store_texts,
        redact=options.redact,
    )


async def _serve_stdio(server: Any, proxy: Proxy, upstream: Upstream) -> None:
    from mcp.server.stdio import stdio_server

    async def serve() -> None:
        async with loop_stdio() as pipes, stdio_server(*(pipes or ())) as (read, write):
            await server.run(read, write, server.create_initialization_options())

    await _until_stopped(serve, proxy, upstream)


async def _serve_relay(proxy: Proxy, upstream: RelayUpstream) -> None:
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
        group.start_soon(_on_signal, proxy, stop)
        group.start_soon(_on_lost, proxy, upstream, stop)
        await serve()
        group.cancel_scope.cancel()


async def _serve_http(server: Any, proxy: Proxy, upstream: Upstream, options: ProxyOptions) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    class Web(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:  # signals are the proxy's (_on_signal)
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
        group.start_soon(_on_signal, proxy, stop, False)
        group.start_soon(_on_lost, proxy, upstream, stop)
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


async def _on_signal(proxy: Proxy, stop: Callable[[int], None], finish: bool = True) -> None:
    """On SIGINT or SIGTERM: write the telemetry first (``finish``: over stdio, where the
    process may have to end without a clean return), then stop serving. Over HTTP the
    telemetry is written when serving has ended: calls answered meanwhile are logged."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            if finish:
                await _drain(proxy)
                proxy.finish()
            stop(128 + signum)
            return


async def _cut_after(proxy: Proxy, why: str) -> None:
    """After ``SHUTDOWN_GRACE`` seconds, calls still waiting on the server get an error."""
    await anyio.sleep(SHUTDOWN_GRACE)
    cut = proxy.cut_calls(why)
    if cut:
        calls = "1 call still waits" if cut == 1 else f"{cut} calls still wait"
        warn(f"{why}: {calls} on the server after {SHUTDOWN_GRACE} s: an error reply each")


async def _on_lost(
    proxy: Proxy, upstream: Upstream | RelayUpstream, stop: Callable[[int], None]
) -> None:
    """When the upstream server has exited: say so, write the telemetry, stop serving."""
    await upstream.lost.wait()
    warn(
        f"{upstream.launch.name}: the memory server closed the connection (it exited; its "
        f"own messages, if any, are above); stopping with status {LOST_STATUS}"
    )
    await anyio.sleep(REPLY_GRACE)
    await _drain(proxy)
    proxy.finish()
    stop(LOST_STATUS)


async def _drain(proxy: Proxy) -> None:
    """Before the shadow closes: its pairs queued or in flight get ``SHUTDOWN_GRACE``
    seconds to be completed and written; the rest are counted as dropped, with why."""
    if proxy.shadow is not None:  # the relay hands calls over from the logging thread
        await proxy.shadow.drain(SHUTDOWN_GRACE, proxy.observer.wait)


def _exit(status: int, pid: int | None) -> None:
    """End now (the telemetry is written): stop a Streamable HTTP upstream we started."""
    if pid is not None:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    os._exit(status)
