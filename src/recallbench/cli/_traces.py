"""`recallbench traces`: agents' own traces (OTLP JSON, Phoenix's span export) as the
query log the proxy would have written."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from recallbench.cli._console import make_console
from recallbench.cli._errors import reports_errors
from recallbench.cli._options import store_option, trace_options, workspace_option

if TYPE_CHECKING:
    from recallbench.online._traces import TraceFormat


@click.group()
def traces() -> None:
    """Read agents' traces as recallbench's query log (docs/traces.md)."""


@traces.command(
    name="import",
    epilog="""\b
Examples:
  recallbench traces import otel-traces.jsonl              # the Collector's file exporter
  recallbench traces import spans.jsonl --format phoenix   # a Phoenix span export
  recallbench traces import a.jsonl b.jsonl --store postgresql://rb@db/recallbench
  recallbench harvest --out golden.json                    # then harvest from the store
Each search is logged once, keyed by its trace and span id: importing a file again adds
nothing. Import the files of one trace together: a read is matched to the searches read
in the same import.
""",
)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@trace_options("The files' format.")
@store_option
@workspace_option
@reports_errors
def import_(
    files: tuple[Path, ...],
    trace_format: str | None,
    read_tools: tuple[str, ...],
    store_url: str | None,
    workspace: str,
) -> None:
    """Log the retrieval spans of trace files in the store, with their feedback.

    Every file is read and checked first: a malformed one is reported (file, line, JSON
    path) and nothing is written.
    """
    from recallbench.online._traces_harvest import import_traces

    done = import_traces(
        files,
        store_url,
        workspace,
        trace_format=cast("TraceFormat | None", trace_format),
        read_tools=frozenset(read_tools) or None,
    )
    console = make_console()
    for file in done.log.files:
        skipped = "".join(f"; {count} skipped: {why}" for why, count in file.skipped.items())
        console.print(
            f"{file.path} ({file.format}): {file.spans} spans, {file.searches} searches, "
            f"{file.reads} tool spans naming ids{skipped}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    console.print(
        f"{done.store} (workspace {done.workspace!r}): {done.queries} searches logged, "
        f"{done.already} already there; {done.events} feedback events",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
