"""`recallbench systems`: list, install and check the systems recallbench can evaluate."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from recallbench.cli._errors import reports_errors
from recallbench.cli._types import FiniteFloat
from recallbench.systems._check import EXIT_NO_PROFILE


@click.group(
    epilog="""\b
Examples:
  recallbench systems list
  recallbench systems install server-memory
  recallbench systems check server-memory
  recallbench systems init --name my-memory -- npx -y @modelcontextprotocol/server-memory
"""
)
def systems() -> None:
    """List, install and check systems under test (built-in, MCP profiles, plugins)."""


@systems.command("list")
@reports_errors
def list_() -> None:
    """List the systems and whether their servers are installed."""
    from recallbench.systems import system_names
    from recallbench.systems._install import is_installed
    from recallbench.systems._profile import load_profile, shipped_profiles

    profiles = shipped_profiles()
    table = Table()
    for column in ("system", "kind", "status", "description"):
        table.add_column(column)
    for name in system_names():
        if name in profiles:
            profile = load_profile(profiles[name])
            status = "installed" if is_installed(profile) else "not installed"
            table.add_row(name, "mcp (stdio)", status, profile.description)
        else:
            table.add_row(name, "builtin" if name.startswith("builtin") else "plugin", "ready", "")
    Console().print(table)


@systems.command()
@click.argument("name")
@reports_errors
def install(name: str) -> None:
    """Install a profile's server into the data directory ($RECALLBENCH_HOME)."""
    from recallbench.systems._install import install as install_profile
    from recallbench.systems._profile import load_profile, shipped_profiles

    profiles = shipped_profiles()
    profile = load_profile(profiles[name] if name in profiles else Path(name))
    click.echo(f"installed {profile.name} in {install_profile(profile)}")


@systems.command(
    epilog="""\b
Exit codes: 0 every step worked; 1 a search missed its document or failed (the FAIL line
says how); 2 bad input; 3 the system did not start or could not ingest.
\b
Examples:
  recallbench systems check server-memory
  recallbench systems check my-server.toml
"""
)
@click.argument("name")
@reports_errors
def check(name: str) -> None:
    """Start a system, ingest three documents, search (twice for them, once for nothing),
    and say what works."""
    from recallbench.systems import create_system
    from recallbench.systems._check import check_system, passed

    lines = asyncio.run(check_system(create_system(name)))
    for line in lines:
        click.echo(str(line))
    if not passed(lines):
        raise SystemExit(1)


@systems.command(
    "init",
    epilog=f"""\b
Examples:
  recallbench systems init -- node ./node_modules/@modelcontextprotocol/server-memory/dist/index.js
  recallbench systems init --name kg --env MEMORY_FILE_PATH={{workdir}}/memory.jsonl \\
      -- npx -y @itseasy21/mcp-knowledge-graph
  recallbench systems init --out profiles/logbook.toml -- agent-logbook --db {{workdir}}/log.db

\b
{{workdir}} in the command or --env is a fresh folder per run (give the server its store
there, or every run shares one). The profile's comments say what was guessed and how sure.

\b
Exit codes:
  0    a profile was written and the check passed
  {EXIT_NO_PROFILE}    no working profile: the best guess is written (if any) with the reasons
  2    bad input: no command, FILE exists (without --force), a bad --env
  3    the server did not start or list its tools
""",
)
@click.option("--name", help="The profile's name. Default: from the command (package or script).")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the profile. Default: NAME.toml in the current folder.",
)
@click.option(
    "--env",
    "env_pairs",
    multiple=True,
    metavar="KEY=VALUE",
    help="An environment variable for the server (repeatable; written into the profile).",
)
@click.option(
    "--timeout",
    type=FiniteFloat(min=0, min_open=True),
    metavar="SECONDS",
    help="Seconds the server may take to start and to answer a call (default 30).",
)
@click.option("--force", is_flag=True, help="Replace FILE when it exists.")
@click.argument("command", nargs=-1, required=True)
@reports_errors
def init(
    name: str | None,
    out: Path | None,
    env_pairs: tuple[str, ...],
    timeout: float | None,
    force: bool,
    command: tuple[str, ...],
) -> None:
    """Propose a profile for an MCP memory server started by COMMAND (over stdio): list
    its tools, guess which ingests and which searches, probe where the hits, ids and texts
    are in its answers, check the result as `systems check` does, and write the TOML."""
    from recallbench.systems._profile_init import init_profile

    outcome = init_profile(list(command), out, name, _env(env_pairs), timeout=timeout, force=force)
    click.echo(f"listed {outcome.tools} tools; what was guessed:")
    for line in outcome.guesses:
        click.echo(f"  {line}")
    if outcome.check:
        click.echo("check:")
        for check_line in outcome.check:
            click.echo(f"  {check_line}")
    if not outcome.passed:
        click.echo("no working profile found:", err=True)
        for reason in outcome.reasons[:12]:
            click.echo(f"  - {reason}", err=True)
    if outcome.path is None:
        click.echo("nothing written: no tool could be taken for ingest and search", err=True)
        sys.exit(EXIT_NO_PROFILE)
    click.echo(f"wrote {outcome.path} in {outcome.seconds:.1f} s")
    if not outcome.passed:
        click.echo(f"edit it, then: recallbench systems check {outcome.path}", err=True)
        sys.exit(EXIT_NO_PROFILE)
    click.echo(f"next: recallbench run --system {outcome.path}")


def _env(pairs: tuple[str, ...]) -> dict[str, str]:
    from recallbench.core import ConfigError

    env = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise ConfigError(f"--env {pair!r}: expected KEY=VALUE")
        env[key] = value
    return env
