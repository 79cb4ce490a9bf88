"""The `recallbench` command line: a thin layer over the library, one module per group.

Command modules are imported only when their command runs, so `recallbench evaluate` on a
small file does not pay for the imports of `recallbench run`.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from recallbench._version import __version__
from recallbench.cli._errors import DEBUG_ENV, DEBUG_META, EXIT_CODES, guarded

COMMANDS = {
    "init": ("recallbench.cli._init", "init"),
    "run": ("recallbench.cli._run", "run"),
    "bench": ("recallbench.cli._bench", "bench"),
    "merge": ("recallbench.cli._merge", "merge"),
    "evaluate": ("recallbench.cli._evaluate", "evaluate"),
    "extract": ("recallbench.cli._extract", "extract"),
    "decisions": ("recallbench.cli._decisions", "decisions"),
    "compare": ("recallbench.cli._compare", "compare"),
    "power": ("recallbench.cli._power", "power"),
    "history": ("recallbench.cli._history", "history"),
    "store": ("recallbench.cli._store", "store"),
    "gate": ("recallbench.cli._gate", "gate"),
    "baseline": ("recallbench.cli._gate", "baseline"),
    "harvest": ("recallbench.cli._harvest", "harvest"),
    "traces": ("recallbench.cli._traces", "traces"),
    "judge": ("recallbench.cli._judge", "judge"),
    "labels": ("recallbench.cli._labels", "labels"),
    "qa": ("recallbench.cli._qa", "qa"),
    "proxy": ("recallbench.cli._proxy", "proxy"),
    "shadow": ("recallbench.cli._shadow", "shadow"),
    "flags": ("recallbench.cli._flags", "flags"),
    "serve": ("recallbench.cli._serve", "serve"),
    "datasets": ("recallbench.cli._datasets", "datasets"),
    "systems": ("recallbench.cli._systems", "systems"),
    "measures": ("recallbench.cli._measures", "measures"),
}
"""Command name -> (module, attribute), imported on first use."""


class LazyGroup(click.Group):
    """A group whose subcommands are imported when invoked (or when help lists them)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS:
            module, attribute = COMMANDS[cmd_name]
            command: Any = getattr(importlib.import_module(module), attribute)
            return command  # type: ignore[no-any-return]
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        # the boundary around every subcommand, whether or not it is decorated with
        # reports_errors: a failure while importing or running it is a message, not a traceback
        return guarded(super().invoke, ctx)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="""\b
Examples:
  recallbench run                      # builtin system on the bundled sample
  recallbench datasets show agent-memory-sample
  recallbench evaluate -q -m ndcg_cut.10 qrels.txt run.txt   # trec_eval-compatible
  recallbench compare out/builtin-lexical out/builtin-hybrid   # paired statistics
  recallbench power --delta 0.05 --sd 0.15                     # queries needed
"""
    + EXIT_CODES,
)
@click.version_option(__version__, prog_name="recallbench")
@click.option(
    "--debug",
    is_flag=True,
    envvar=DEBUG_ENV,
    help=f"Show the traceback of a failure instead of its message (or set {DEBUG_ENV}=1).",
)
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Measure, compare and gate the retrieval quality of AI-agent memory systems."""
    ctx.meta[DEBUG_META] = debug


__all__ = ["main"]
