"""Turn recallbench errors into a message and an exit code, never a traceback."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

from recallbench.core._errors import RecallbenchError

P = ParamSpec("P")
R = TypeVar("R")

EXIT_INTERRUPTED = 130


def warn(message: str) -> None:
    """A note on standard error (rich is imported only when something is printed)."""
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True, highlight=False, soft_wrap=True).print(escape(message))


def reports_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Print a :class:`RecallbenchError` and exit with its code; Ctrl-C exits 130."""

    @wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except RecallbenchError as error:
            from rich.console import Console
            from rich.markup import escape

            Console(stderr=True, highlight=False, soft_wrap=True).print(
                f"[bold red]error:[/bold red] {escape(str(error))}"
            )
            sys.exit(error.exit_code)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            sys.exit(EXIT_INTERRUPTED)

    return wrapper
