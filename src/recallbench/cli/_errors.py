"""Turn recallbench errors into a message and an exit code, never a traceback."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

from rich.console import Console
from rich.markup import escape

from recallbench.core import RecallbenchError

P = ParamSpec("P")
R = TypeVar("R")

EXIT_INTERRUPTED = 130

stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def reports_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Print a :class:`RecallbenchError` and exit with its code; Ctrl-C exits 130."""

    @wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except RecallbenchError as error:
            stderr.print(f"[bold red]error:[/bold red] {escape(str(error))}")
            sys.exit(error.exit_code)
        except KeyboardInterrupt:
            stderr.print("interrupted")
            sys.exit(EXIT_INTERRUPTED)

    return wrapper
