"""`recallbench flags`: feature flags with a percentage rollout (set, list); the flag a
shadow test names is set by `recallbench shadow graduate` and `rollback`."""

from __future__ import annotations

import json

import click

from recallbench.cli._console import make_console
from recallbench.cli._errors import reports_errors
from recallbench.cli._options import format_option, store_option, workspace_option
from recallbench.cli._types import FiniteFloat


@click.group()
def flags() -> None:
    """Feature flags per workspace: which memory profile a session gets, by a deterministic
    hash of its id and a percentage rollout."""


@flags.command(
    "set",
    epilog="""\b
Examples:
  recallbench flags set memory hybrid --percent 10 --fallback lexical
  recallbench flags set memory hybrid --percent 100
""",
)
@click.argument("name")
@click.argument("variant")
@click.option(
    "--percent",
    type=FiniteFloat(0, 100),
    required=True,
    help="Share of the units (sessions, users) that get VARIANT, 0-100.",
)
@click.option("--fallback", default=None, help="What the other units get (default: off).")
@store_option
@workspace_option
@reports_errors
def set_flag(
    name: str,
    variant: str,
    percent: float,
    fallback: str | None,
    store_url: str | None,
    workspace: str,
) -> None:
    """Set flag NAME: PERCENT of the units get VARIANT. The earlier states stay as its
    history."""
    from recallbench.store import open_store

    with open_store(store_url, workspace) as store:
        flag = store.set_flag(name, variant, percent, fallback=fallback)
    make_console().print(
        f"flag {flag.name} = {flag.variant} for {flag.percent:g}%"
        + (f", {flag.fallback} otherwise" if flag.fallback else ", off otherwise"),
        highlight=False,
        markup=False,
    )


@flags.command("list")
@click.option("--history", "history_of", metavar="NAME", help="Every state of flag NAME.")
@format_option
@store_option
@workspace_option
@reports_errors
def list_flags(
    history_of: str | None, output_format: str, store_url: str | None, workspace: str
) -> None:
    """The flags of the workspace as they are now (or the history of one)."""
    from recallbench.store import open_store
    from recallbench.telemetry._flags import flag_json

    with open_store(store_url, workspace) as store:
        found = store.flag_history(history_of) if history_of else store.flags()
    if output_format == "json":
        click.echo(json.dumps([flag_json(flag) for flag in found], indent=2))
        return
    console = make_console()
    if not found:
        console.print("no feature flags", highlight=False, markup=False)
        return
    from recallbench.render._shadow import render_flags

    render_flags(console, found)
