"""The `recallbench` command line: a thin layer over the library, one module per group."""

from __future__ import annotations

import click

from recallbench import __version__
from recallbench.cli._datasets import datasets
from recallbench.cli._run import run


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="""\b
Examples:
  recallbench run                      # builtin system on the bundled sample
  recallbench datasets show agent-memory-sample
Exit codes: 0 success, 1 gate failed, 2 bad input or usage, 130 interrupted.
""",
)
@click.version_option(__version__, prog_name="recallbench")
def main() -> None:
    """Measure, compare and gate the retrieval quality of AI-agent memory systems."""


main.add_command(run)
main.add_command(datasets)

__all__ = ["main"]
