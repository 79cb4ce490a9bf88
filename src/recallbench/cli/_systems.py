"""`recallbench systems`: list, install and check the systems recallbench can evaluate."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from recallbench.cli._errors import reports_errors


@click.group(
    epilog="""\b
Examples:
  recallbench systems list
  recallbench systems install server-memory
  recallbench systems check server-memory
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


@systems.command()
@click.argument("name")
@reports_errors
def check(name: str) -> None:
    """Start a system, ingest three documents, search, and say what works."""
    from recallbench.core import Document, Query
    from recallbench.systems import create_system

    documents = [
        Document(id="check-1", text="The ledger runs on PostgreSQL since March."),
        Document(id="check-2", text="Deploys are frozen on Fridays."),
        Document(id="check-3", text="Priya prefers PR descriptions with a test plan."),
    ]

    async def scenario() -> list[str]:
        lines: list[str] = []
        system = create_system(name)
        start = time.perf_counter()
        try:
            await system.setup(documents)
            lines.append(
                f"ok    started and ingested 3 documents in {time.perf_counter() - start:.2f} s"
            )
            for text, expected in (("PostgreSQL", "check-1"), ("Fridays", "check-2")):
                hits = await system.search(Query(id="check", text=text), 5)
                ids = [hit.doc_id for hit in hits]
                mark = "ok  " if expected in ids else "FAIL"
                scored = "with scores" if any(h.score is not None for h in hits) else "no scores"
                lines.append(f"{mark}  search {text!r}: {ids} ({scored})")
        finally:
            await system.close()
        return lines

    for line in asyncio.run(scenario()):
        click.echo(line)
