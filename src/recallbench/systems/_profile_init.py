"""``recallbench systems init``: propose a profile for an MCP memory server from its
command line, check it, and write it.

Steps: list the server's tools (:mod:`._tool_listing`), guess the ingest, search and
reset tools and their arguments (:mod:`._profile_guess`), try them on the running server
(:mod:`._profile_probe`), run the same check as ``systems check`` on the proposed profile
(:mod:`._check`), and write the TOML with its comments (:mod:`._profile_toml`).
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from pathlib import Path

from recallbench.core import ConfigError, SystemUnderTestError
from recallbench.core._files import atomic_write_text
from recallbench.systems._check import EXIT_NO_PROFILE, CheckLine, check_system, passed
from recallbench.systems._folder import name_problem
from recallbench.systems._mcp import MCPSystem
from recallbench.systems._profile import Server
from recallbench.systems._profile_guess import guess_tools
from recallbench.systems._profile_probe import probe
from recallbench.systems._profile_toml import Proposal, guess_lines, profile_of, render
from recallbench.systems._tool_listing import list_tools

_LAUNCHERS = {"node", "npx", "uvx", "uv", "python", "python3", "bun", "bunx", "deno", "env"}
_GENERIC = {"index", "main", "server", "cli", "dist", "run", "start", "mcp", "serve", "app"}


@dataclass(frozen=True, slots=True)
class InitOutcome:
    """What ``systems init`` did."""

    path: Path | None
    """The profile written; None when not even a guess could be made."""
    passed: bool
    guesses: list[str]
    check: list[CheckLine]
    reasons: list[str]
    tools: int
    seconds: float


__all__ = ["EXIT_NO_PROFILE", "InitOutcome", "init_profile", "name_from_command"]


def name_from_command(command: list[str]) -> str:
    """A profile name from a command line: the npm or PyPI package when one shows, else
    the program or script's name (``node .../server-memory/dist/index.js`` -> server-memory)."""
    for part in command:
        if "=" in part or part.startswith("-") or Path(part).name in _LAUNCHERS:
            continue
        if "node_modules/" in part:
            after = part.split("node_modules/", 1)[1].split("/")
            return after[1] if after[0].startswith("@") and len(after) > 1 else after[0]
        pieces = [p for p in re.split(r"[/\\]", part) if p]
        for piece in reversed(pieces):
            stem = re.sub(r"\.(js|mjs|cjs|ts|py)$", "", piece).split("@")[0] or piece
            if stem.lower() not in _GENERIC and stem not in ("bin", "venv", "src"):
                return re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-.") or "server"
    return "server"


def absolute_command(command: list[str]) -> list[str]:
    """Relative paths to existing files made absolute: the adapter starts the server in
    a fresh work folder, where they would not resolve."""
    out = []
    for part in command:
        path = Path(part)
        looks_like_path = "/" in part or path.suffix in (".py", ".js", ".mjs", ".cjs", ".ts")
        relative = looks_like_path and not path.is_absolute() and not part.startswith("-")
        if relative and "{" not in part and path.exists():
            part = str(path.resolve())
        out.append(part)
    return out


def _server(command: list[str], env: dict[str, str], timeout: float | None) -> Server:
    times = {"startup_timeout": timeout, "call_timeout": timeout} if timeout else {}
    return Server(command=command, env=env, **times)


async def propose(name: str, server: Server) -> Proposal:
    """List, guess, probe and check: the proposal (the server must start and list tools,
    else SystemUnderTestError)."""
    tools = await list_tools(name, server)
    guesses = guess_tools(tools)
    probed = await probe(name, server, guesses)
    proposal = Proposal(
        name=name,
        server=server,
        probed=probed,
        tools=len(tools),
        ingest_fallback=guesses.ingest[0] if guesses.ingest else None,
        search_fallback=guesses.search[0] if guesses.search else None,
    )
    profile = profile_of(proposal)
    if profile is None or not probed.found:
        return proposal
    try:
        proposal.check = await check_system(MCPSystem(profile))
    except SystemUnderTestError as error:
        proposal.check = [CheckLine(False, f"started and ingested: {error}")]
    proposal.passed = passed(proposal.check)
    if not proposal.passed:
        probed.reasons.append("the check failed on the proposed profile (see the check above)")
    return proposal


def init_profile(
    command: list[str],
    out: Path | None = None,
    name: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    force: bool = False,
) -> InitOutcome:
    """Propose, check and write a profile for the stdio MCP server ``command`` (see the
    module doc). ConfigError (exit 2) for bad input, before anything starts."""
    if not command:
        raise ConfigError("systems init: give the server's command after `--`")
    name = name or name_from_command(command)
    problem = name_problem(name)
    if problem is not None:
        raise ConfigError(f"--name {name!r}: {problem}")
    out = out or Path(f"{name}.toml")
    if out.exists() and not force:
        raise ConfigError(f"{out}: already exists (give --force to replace it, or --out)")
    server = _server(absolute_command(command), dict(env or {}), timeout)
    start = time.perf_counter()
    proposal = asyncio.run(propose(name, server))
    profile = profile_of(proposal)
    written = None
    if profile is not None:
        atomic_write_text(out, render(proposal, profile))
        written = out
    return InitOutcome(
        path=written,
        passed=proposal.passed,
        guesses=guess_lines(proposal),
        check=proposal.check,
        reasons=proposal.probed.reasons,
        tools=proposal.tools,
        seconds=time.perf_counter() - start,
    )
