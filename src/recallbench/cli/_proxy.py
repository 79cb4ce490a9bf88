"""`recallbench proxy`: stand in front of an MCP memory server and log what agents search
and read."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from recallbench.cli._errors import reports_errors
from recallbench.cli._options import store_option, workspace_option

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
  recallbench proxy -- node my-memory-server.js --db memory.db   # forward only
  recallbench proxy --profile my-server.toml -- python server.py  # profile's rules, own command
In an MCP client's configuration, give `recallbench proxy ...` as the server's command.
Logged: each search (query, ranked ids and texts, latency); feedback read_after_search,
re_search (near-duplicate query within 120 s), scroll_past (shown, never read) and, with
--validate-tool, memory_validate's verdicts.
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
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@reports_errors
def proxy(
    profile_name: str | None,
    store_dir: Path | None,
    store_url: str | None,
    workspace: str,
    http_port: int | None,
    validate_tool: bool,
    command: tuple[str, ...],
) -> None:
    """Serve an MCP memory server's tools through a logging proxy (MCP over stdio, or
    Streamable HTTP): results reach the client unchanged."""
    import anyio

    from recallbench.core import ConfigError, RecallbenchError
    from recallbench.online._serve import ProxyOptions, serve

    if profile_name is None and not command:
        raise click.UsageError("give --profile NAME, or the server's command after --")
    if store_dir is not None and profile_name is None:
        raise click.UsageError("--store-dir is the profile's {workdir}: it needs --profile")
    if not workspace:
        raise ConfigError("the workspace must not be empty")
    options = ProxyOptions(
        profile=_profile(profile_name) if profile_name else None,
        command=command,
        store_dir=store_dir,
        store_url=store_url,
        workspace=workspace,
        http_port=http_port,
        validate_tool=validate_tool,
    )
    try:
        anyio.run(serve, options)
    except BaseExceptionGroup as group:  # an error inside the SDK's task groups
        errors = group.subgroup(RecallbenchError)
        if errors is None:
            raise
        raise _first(errors) from None


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
