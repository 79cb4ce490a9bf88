"""`recallbench proxy`: stand in front of an MCP memory server and log what agents search
and read."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from recallbench.cli._errors import reports_errors
from recallbench.cli._options import store_option, workspace_option
from recallbench.cli._types import FiniteFloat
from recallbench.online._guard import TOKEN_ENV

if TYPE_CHECKING:
    from recallbench.systems._profile import Profile


@click.command(
    context_settings={"ignore_unknown_options": True},
    epilog="""\b
Examples:
  recallbench proxy --profile server-memory --store-dir ~/.agent-memory
  recallbench proxy --profile server-memory --validate-tool --workspace team-a
  recallbench proxy --profile agentrecall --store postgresql://rb@db/recallbench
  recallbench proxy --profile server-memory --http 8765    # http://127.0.0.1:8765/mcp
  RECALLBENCH_PROXY_TOKEN=... recallbench proxy --profile server-memory --http 8765
  recallbench proxy --profile server-memory --no-texts     # no query or memory text stored
  recallbench proxy --profile server-memory --redact 'sk-[A-Za-z0-9]+'   # API keys
  recallbench proxy -- node my-memory-server.js --db memory.db   # forward only
  recallbench proxy --profile my-server.toml -- python server.py  # profile's rules, own command
  recallbench proxy --profile server-memory --shadow agentrecall --shadow-percent 100
  recallbench proxy --profile server-memory --shadow agentrecall --interleave
  recallbench proxy --profile server-memory --outcome-tool
In an MCP client's configuration, give `recallbench proxy ...` as the server's command.
Logged: each search (query, ranked ids and texts, latency); feedback read_after_search,
re_search (near-duplicate query within 120 s), scroll_past (shown, never read) and, with
--validate-tool, memory_validate's verdicts.
Over HTTP, clients send `Authorization: Bearer TOKEN` (the token is printed at start
unless given) and browser pages are refused unless their origin is --allow-origin.
A call the server does not answer within --call-timeout (default: the profile's
call_timeout) gets a JSON-RPC error; when the server exits, the proxy writes the telemetry
and exits with status 3 (the system under test failed).
On SIGINT or SIGTERM calls in flight get 2 s (over HTTP), then an error reply; the exit
status is 0, or 130 (interrupted) when calls were cut short that way.
At exit it prints how many records were written, dropped and lost (or, with a store that
could not be opened and --no-require-store, how many were not stored). A --shadow
candidate that does not start within 15 s (or its startup_timeout), exits or lacks its
tools is left out: the proxy serves without it and counts what it would have mirrored.
""",
)
@click.option(
    "--profile",
    "profile_name",
    metavar="NAME",
    help="A shipped MCP profile or a profile TOML file: how to start the server, which tool "
    "searches, where the hits are, which tools read ([proxy] read_tools).",
)
@click.option(
    "--store-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The memory server's data folder ({workdir} of the profile; created, kept). "
    "Default: a temporary folder, removed when the proxy stops.",
)
@store_option
@click.option(
    "--require-store/--no-require-store",
    default=None,
    help="Refuse to start when the store cannot be opened (malformed: exit 2; database "
    "unreachable or full: exit 69), rather than serve with telemetry off. Default: on with "
    "--store, off for the default store; off, the exit line counts the records not stored.",
)
@workspace_option
@click.option(
    "--http",
    "http_port",
    type=click.IntRange(1, 65535),
    metavar="PORT",
    help="Serve Streamable HTTP on http://127.0.0.1:PORT/mcp instead of stdio.",
)
@click.option(
    "--validate-tool",
    is_flag=True,
    help="Add a memory_validate(id, useful, query_id) tool for agents to rate results.",
)
@click.option(
    "--call-timeout",
    type=FiniteFloat(min=0, min_open=True),
    metavar="SECONDS",
    help="Seconds a forwarded request may take before the agent gets an error "
    "(default: the profile's call_timeout, 30 without a profile).",
)
@click.option(
    "--no-texts",
    is_flag=True,
    help="Store no query or memory text: a query becomes a fingerprint of its words and "
    "its length, memories keep their ids only (harvest can then count and grade, but "
    "not build documents).",
)
@click.option(
    "--redact",
    metavar="REGEX",
    multiple=True,
    help="Replace matches in queries and memory texts by [redacted] before they are "
    "stored (repeatable).",
)
@click.option(
    "--token",
    envvar=TOKEN_ENV,
    metavar="TOKEN",
    help=f"With --http: the bearer token clients must send (or ${TOKEN_ENV}; "
    "default: a new one, printed at start).",
)
@click.option(
    "--no-auth",
    is_flag=True,
    help="With --http: accept requests without a token (any local process can then read "
    "and write the memory).",
)
@click.option(
    "--allow-origin",
    "allow_origins",
    metavar="ORIGIN",
    multiple=True,
    help="With --http: a browser origin (e.g. http://localhost:3000) allowed to connect; "
    "requests with any other Origin are refused (repeatable).",
)
@click.option(
    "--shadow",
    "shadow_name",
    metavar="PROFILE",
    help="Shadow mode: start this profile's server as a candidate, give it every write the "
    "agent makes (mapped through its [ingest]) and a sample of the searches, after the "
    "agent's answer; both ranked lists go to shadow_runs. The agent sees the primary only.",
)
@click.option(
    "--shadow-percent",
    type=FiniteFloat(0, 100),
    default=10.0,
    show_default=True,
    metavar="PERCENT",
    help="With --shadow: searches mirrored, chosen by a hash of the query text (the same "
    "query always in or out).",
)
@click.option(
    "--shadow-store-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="With --shadow: the candidate's data folder (default: a temporary folder).",
)
@click.option(
    "--interleave",
    is_flag=True,
    help="With --shadow: the agent sees, for each sampled search, the team-draft "
    "interleaving of both servers' rankings (in the primary's answer shape), and its reads "
    "and validations credit the server that placed the memory. The candidate is asked "
    "alongside the primary and waited for up to --interleave-wait; otherwise, or when an "
    "answer's shape cannot be rewritten safely, the primary's answer is shown (counted).",
)
@click.option(
    "--interleave-wait",
    type=FiniteFloat(min=0),
    default=None,
    metavar="SECONDS",
    help="With --interleave: the longest the agent's answer waits for the candidate (default 0.5).",
)
@click.option(
    "--outcome-tool",
    is_flag=True,
    help="Add a recallbench_record_outcome(success, outcome, note, session_id) tool for agents to "
    "record their task's outcome (this session's by default); answered by the proxy.",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@reports_errors
def proxy(
    profile_name: str | None,
    store_dir: Path | None,
    store_url: str | None,
    require_store: bool | None,
    workspace: str,
    http_port: int | None,
    validate_tool: bool,
    call_timeout: float | None,
    no_texts: bool,
    redact: tuple[str, ...],
    token: str | None,
    no_auth: bool,
    allow_origins: tuple[str, ...],
    shadow_name: str | None,
    shadow_percent: float,
    shadow_store_dir: Path | None,
    interleave: bool,
    interleave_wait: float | None,
    outcome_tool: bool,
    command: tuple[str, ...],
) -> None:
    """Serve an MCP memory server's tools through a logging proxy (MCP over stdio, or
    Streamable HTTP): results reach the client unchanged."""
    import anyio

    from recallbench.core import ConfigError, RecallbenchError
    from recallbench.online._proxy_options import ProxyOptions
    from recallbench.online._serve import serve
    from recallbench.telemetry._privacy import TextPolicy

    if profile_name is None and not command:
        raise click.UsageError("give --profile NAME, or the server's command after --")
    if store_dir is not None and profile_name is None:
        raise click.UsageError("--store-dir is the profile's {workdir}: it needs --profile")
    if not workspace:
        raise ConfigError("the workspace must not be empty")
    if shadow_name is not None and profile_name is None:
        raise click.UsageError("--shadow needs --profile: its tools say what to mirror")
    if shadow_store_dir is not None and shadow_name is None:
        raise click.UsageError("--shadow-store-dir is the candidate's folder: it needs --shadow")
    if interleave and shadow_name is None:
        raise click.UsageError("--interleave shows both servers' rankings: it needs --shadow")
    if interleave_wait is not None and not interleave:
        raise click.UsageError("--interleave-wait is the candidate's wait: it needs --interleave")
    if no_auth and token:
        raise click.UsageError(f"--no-auth and a token (--token or ${TOKEN_ENV}) contradict")
    if token is not None and not token.strip():
        raise ConfigError(f"the token (--token or ${TOKEN_ENV}) must not be empty")
    TextPolicy.of(not no_texts, redact)  # a bad pattern is refused before anything starts
    options = ProxyOptions(
        profile=_profile(profile_name) if profile_name else None,
        command=command,
        store_dir=store_dir,
        store_url=store_url,
        workspace=workspace,
        http_port=http_port,
        validate_tool=validate_tool,
        call_timeout=call_timeout,
        store_texts=not no_texts,
        redact=redact,
        token=token,
        auth=not no_auth,
        allow_origins=allow_origins,
        shadow=_profile(shadow_name) if shadow_name else None,
        shadow_percent=shadow_percent,
        shadow_store_dir=shadow_store_dir,
        interleave=interleave,
        interleave_wait=_default_wait() if interleave_wait is None else interleave_wait,
        outcome_tool=outcome_tool,
        require_store=store_url is not None if require_store is None else require_store,
    )
    try:
        anyio.run(serve, options)
    except BaseExceptionGroup as group:  # an error inside the SDK's task groups
        errors = group.subgroup(RecallbenchError)
        if errors is None:
            raise
        raise _first(errors) from None


def _default_wait() -> float:
    from recallbench.online._shadow import DEFAULT_WAIT

    return DEFAULT_WAIT


def _first(group: BaseExceptionGroup[BaseException]) -> BaseException:
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


def _profile(name: str) -> Profile:
    from recallbench.core import ConfigError
    from recallbench.systems._profile import is_http_profile, load_profile, shipped_profiles

    path = shipped_profiles().get(name) or Path(name)
    if not path.is_file():
        known = ", ".join(sorted(shipped_profiles()))
        raise ConfigError(f"no MCP profile {name!r}: shipped ones are {known}, or give a .toml")
    if is_http_profile(path):
        raise ConfigError(f"{path}: an HTTP profile; the proxy needs an MCP server's profile")
    return load_profile(path)
