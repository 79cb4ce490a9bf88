"""`recallbench store`: making a database a history store, and its maintenance (retention
of online telemetry)."""

from __future__ import annotations

import click

from recallbench.cli._console import make_console
from recallbench.cli._errors import reports_errors
from recallbench.cli._options import store_option, workspace_option

TABLES = {
    "query_log": "query log",
    "feedback_events": "feedback events",
    "shadow_runs": "shadow runs",
}
"""Pruned tables, in the order printed, with their names for people."""


@click.group()
def store() -> None:
    """Maintain the history store (SQLite or PostgreSQL)."""


@store.command(
    epilog="""\b
Examples:
  recallbench store init                                      # the default store
  recallbench store init --store sqlite:///shared/app.db      # beside app.db's own tables
  recallbench store init --store postgresql://rb@db.internal/recallbench
"""
)
@store_option
@reports_errors
def init(store_url: str | None) -> None:
    """Make a database a history store, or bring a store up to date.

    Every command creates a new store by itself in a new file or an empty database, and
    refuses a database that holds tables of its own and no recallbench marker (a mistyped
    --store must not fill an application's database). Run this to add recallbench's tables
    to such a database on purpose; a name already taken there is refused.
    """
    from recallbench.store import init_store

    done = init_store(store_url)
    url = done.store.url
    others = done.found.others
    if done.found.kind == "empty":
        said = f"{url}: created a recallbench store ({len(done.applied)} migrations)"
    elif done.found.kind == "foreign":
        said = (
            f"{url}: added recallbench's tables beside the database's "
            f"{len(others)} of its own ({len(done.applied)} migrations)"
        )
    elif done.applied:
        said = f"{url}: recallbench store brought up to date ({', '.join(done.applied)})"
    else:
        said = f"{url}: already a recallbench store, up to date"
    make_console().print(said, highlight=False, markup=False, soft_wrap=True)


@store.command(
    epilog="""\b
Examples:
  recallbench store prune --dry-run                  # what would go, nothing removed
  recallbench store prune --query-log-days 30 --feedback-days 30
  recallbench store prune --store postgresql://rb@db.internal/recallbench --workspace team-a
Run it daily (cron, a CI schedule): telemetry grows with every search an agent makes.
"""
)
@store_option
@workspace_option
@click.option(
    "--query-log-days",
    type=click.IntRange(min=0),
    default=90,
    show_default=True,
    metavar="DAYS",
    help="Keep logged queries this many days.",
)
@click.option(
    "--feedback-days",
    type=click.IntRange(min=0),
    default=90,
    show_default=True,
    metavar="DAYS",
    help="Keep feedback events this many days.",
)
@click.option(
    "--shadow-days",
    type=click.IntRange(min=0),
    default=30,
    show_default=True,
    metavar="DAYS",
    help="Keep shadow runs this many days.",
)
@click.option("--dry-run", is_flag=True, help="Count what would be removed; remove nothing.")
@reports_errors
def prune(
    store_url: str | None,
    workspace: str,
    query_log_days: int,
    feedback_days: int,
    shadow_days: int,
    dry_run: bool,
) -> None:
    """Delete online telemetry older than its retention, in one transaction.

    Golden queries (and their feedback events) are kept whatever their age, and so are
    judgments, A/B test states and evaluation results (the gate's history); so is whatever
    a running shadow test reads (searches, feedback and shadow pairs since it started), with
    shadow tests, their decisions, feature flags and session outcomes. Prints the rows
    removed per table.
    """
    from recallbench.store import open_store

    with open_store(store_url, workspace) as opened:
        removed = opened.prune(
            query_log_days=query_log_days,
            feedback_days=feedback_days,
            shadow_days=shadow_days,
            dry_run=dry_run,
        )
        where = f"{opened.url} (workspace {opened.workspace!r})"
    days = {
        "query_log": query_log_days,
        "feedback_events": feedback_days,
        "shadow_runs": shadow_days,
    }
    console = make_console()
    verb = "would remove" if dry_run else "removed"
    console.print(f"{where}: {verb}", highlight=False, markup=False, soft_wrap=True)
    width = max(len(name) for name in TABLES.values())
    for table, name in TABLES.items():
        console.print(
            f"  {name:<{width}}  {removed[table]:>9,}  (older than {days[table]} days)",
            highlight=False,
            markup=False,
        )
    console.print(
        "kept: golden queries and their feedback, judgments, A/B tests, evaluation results, "
        "running shadow tests' evidence, shadow decisions, flags, session outcomes"
        + (" (dry run: nothing removed)" if dry_run else ""),
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
