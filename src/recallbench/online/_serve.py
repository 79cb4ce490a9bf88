"""Run the proxy: start the upstream server, serve the client over stdio or Streamable HTTP,
and on the way out (end of input, SIGINT, SIGTERM) close the sessions and write the
telemetry before the upstream server is stopped.

Over stdio, in front of a stdio server, with standard input and output pipes or sockets and
no ``--interleave``, the relay of JSON-RPC lines serves (:mod:`recallbench.online._relay`;
``ProxyOptions.relay`` False: never); otherwise the SDK's server and client.

Over stdio, a signal writes the telemetry, then the proxy waits ``SIGNAL_GRACE`` seconds for
a clean end (:mod:`recallbench.online._serve_stdio`). Over HTTP, a signal stops new
connections; the calls in flight get ``SHUTDOWN_GRACE`` seconds to be answered (and logged),
then those still waiting on the server get a JSON-RPC error reply (the proxy then exits with
status 130, "interrupted": :class:`Interrupted`; :mod:`recallbench.online._serve_http`). The
telemetry is written once nothing can be answered any more, so that every answered call is
in the log the exit line counts.

When the upstream server exits, the call that found out gets an error, the proxy says so
on standard error, writes the telemetry and stops with ``UpstreamLost``'s status
(:mod:`recallbench.online._serve_stop`).

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

import shutil
import socket
import tempfile
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio

from recallbench.core import ConfigError, RecallbenchError, SystemUnderTestError
from recallbench.online._proxy import Proxy
from recallbench.online._proxy_options import ProxyOptions
from recallbench.online._proxy_sessions import Watch
from recallbench.online._serve_http import serve_http
from recallbench.online._serve_stdio import serve_relay, serve_stdio
from recallbench.online._serve_stop import SHUTDOWN_GRACE, drain
from recallbench.online._shadow import Shadow
from recallbench.online._shadow_absent import SHADOW_START, AbsentShadow
from recallbench.online._stdio import pipes
from recallbench.online._upstream import (
    Launch,
    Upstream,
    UpstreamLost,
    command_launch,
    profile_launch,
)
from recallbench.online._wire import NICE, LineClient, RelayUpstream, warn
from recallbench.systems._profile import Profile

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
                    await serve_relay(proxy, upstream)
                elif options.http_port is None:
                    await serve_stdio(proxy.server(), proxy, upstream)
                else:
                    await serve_http(proxy.server(), proxy, upstream, options)
                await drain(proxy)  # the pairs in flight get the grace the calls had
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
