"""Options shared by several commands, declared once (each command words its own help)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from recallbench.cli._types import FiniteFloat

F = TypeVar("F", bound=Callable[..., Any])


def measures_option(help_text: str) -> Callable[[F], F]:
    """``-m/--measure MEASURE``, repeatable, into ``measure_names``."""
    return click.option(
        "-m", "--measure", "measure_names", multiple=True, metavar="MEASURE", help=help_text
    )


def out_option(help_text: str, default: Path | None = None) -> Callable[[F], F]:
    """``--out DIR`` into ``out_dir``."""
    return click.option(
        "--out",
        "out_dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=default,
        show_default=default is not None,
        help=help_text,
    )


def systems_option(help_text: str) -> Callable[[F], F]:
    """``--system NAME``, repeatable, into ``system_names``."""
    return click.option("--system", "system_names", multiple=True, metavar="NAME", help=help_text)


def timeout_option(help_text: str) -> Callable[[F], F]:
    """``--timeout SECONDS`` (above 0, default 60) into ``timeout``."""
    return click.option(
        "--timeout",
        metavar="SECONDS",
        type=FiniteFloat(min=0, min_open=True),
        default=60.0,
        show_default=True,
        help=help_text,
    )


quiet_option = click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")


config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="recallbench.toml or pyproject.toml (default: found in the current folder); "
    "its datasets, systems, measures and k apply where no flag is given.",
)

store_option = click.option(
    "--store",
    "store_url",
    metavar="URL",
    help="Store URL (default: $RECALLBENCH_STORE, else SQLite in $RECALLBENCH_HOME).",
)
"""``--store URL`` into ``store_url``: the history and telemetry store."""

workspace_option = click.option(
    "--workspace", default="default", show_default=True, help="The store's workspace."
)

format_option = click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="A table for people or JSON for programs.",
)
"""``--format table|json`` into ``output_format``."""

store_options = [
    store_option,
    click.option("--no-store", is_flag=True, help="Do not record the run in the history store."),
]


def trace_options(files_help: str) -> Callable[[F], F]:
    """``--format`` and ``--read-tool`` of the commands that read trace files."""

    def apply(command: F) -> F:
        command = click.option(
            "--read-tool",
            "read_tools",
            multiple=True,
            metavar="NAME",
            help="Only tool spans of this name are reads (repeatable). Default: every tool span.",
        )(command)
        return click.option(
            "--format",
            "trace_format",
            type=click.Choice(["otlp-json", "phoenix"]),
            help=f"{files_help} Default: told from each file's first line.",
        )(command)

    return apply


def with_store_options(command: F) -> F:
    """``--store URL`` and ``--no-store``."""
    for option in reversed(store_options):
        command = option(command)
    return command


def with_judge_cache_options(command: F) -> F:
    """``--judge-cache PATH|URL`` into ``cache_spec`` and ``--strict``: where a judge's (or
    answer model's) calls are cached, and replay-only mode."""
    strict = click.option(
        "--strict",
        is_flag=True,
        help="Replay only: ask no model and exit 2 when any call is not in the cache (CI).",
    )
    cache = click.option(
        "--judge-cache",
        "cache_spec",
        metavar="PATH|URL",
        help="Where model calls are cached and replayed: a .jsonl file (sorted, to commit "
        "beside a project), a store URL, or 'none'. Default: the history store.",
    )
    return cache(strict(command))
