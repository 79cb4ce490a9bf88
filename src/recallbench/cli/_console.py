"""The terminal every command prints to, in a module of its own so that a command imports
it without the imports of `run` (the gates, the report builder, scipy)."""

from __future__ import annotations

import os
import sys

from rich.console import Console

from recallbench.cli._run_io import ReaderMayLeave


def make_console(quiet: bool = False) -> Console:
    """The user's terminal width; 120 columns in logs (unless COLUMNS says otherwise)."""
    probe = Console()
    width = None if probe.is_terminal or "COLUMNS" in os.environ else 120
    return Console(quiet=quiet, width=width, file=ReaderMayLeave(sys.stdout))  # type: ignore[arg-type]


def show_progress(console: Console) -> bool:
    """Progress bars on an interactive terminal only, never in CI logs."""
    return console.is_terminal and not os.environ.get("CI")
