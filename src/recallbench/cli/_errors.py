"""The command line's one error boundary: every failure becomes a located message and an
exit code, never a traceback (unless ``--debug`` or ``RECALLBENCH_DEBUG=1`` asks for it).

What reaches the boundary and how it is shown:

- a :class:`RecallbenchError` (bad input, said where): its message, its ``exit_code`` (2);
- an ``OSError`` naming a file: ``path: reason``, exit 2 (the user named that path);
  bytes that are not UTF-8: exit 2;
- a database error: the history store's URL (password masked) and the driver's reason,
  exit 2 for a malformed URL, else 69 (the database failed, not the input);
- an error of a provider's SDK or the network: 69;
- anything else is a bug: ``internal error: ...``, exit 70 (EX_SOFTWARE), please report it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

import click

from recallbench.core._errors import RecallbenchError

P = ParamSpec("P")
R = TypeVar("R")

EXIT_BAD_INPUT = 2
EXIT_SERVICE_FAILED = 69
"""EX_UNAVAILABLE: the database, the network or a provider's API failed."""
EXIT_INTERNAL = 70
"""EX_SOFTWARE: a bug in recallbench."""
EXIT_INTERRUPTED = 130

EXIT_CODES = f"""\b
Exit codes:
  0    success (gate passed)
  1    gate failed or regression found
  {EXIT_BAD_INPUT}    bad input or usage: the message says what and where
  3    the system under test failed: did not start, or every query (any under --strict)
  {EXIT_SERVICE_FAILED}   a service failed: the store's database, the network, a provider's API
  {EXIT_INTERNAL}   internal error: a bug in recallbench (rerun with --debug, please report it)
  {EXIT_INTERRUPTED}  interrupted"""
"""The exit codes, as the top-level help lists them."""

DEBUG_ENV = "RECALLBENCH_DEBUG"
DEBUG_META = "recallbench.debug"
"""Key of the root click context's ``meta`` that ``--debug`` sets."""
_TRUE = frozenset({"1", "true", "yes", "on"})

_SERVICE_MODULES = frozenset(
    {
        "anthropic",
        "openai",
        "cohere",
        "voyageai",
        "google",
        "httpx",
        "httpcore",
        "requests",
        "urllib3",
        "aiohttp",
        "psycopg",
        "psycopg2",
        "mcp",
        "anyio",
    }
)
"""Top-level packages whose exceptions mean a service failed (an SDK, the network, a
database driver), not that recallbench has a bug."""


def warn(message: str) -> None:
    """A note on standard error (rich is imported only when something is printed)."""
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True, highlight=False, soft_wrap=True).print(escape(message))


def debugging() -> bool:
    """Whether failures should keep their traceback: ``--debug`` or ``$RECALLBENCH_DEBUG``."""
    context = click.get_current_context(silent=True)
    if context is not None and context.find_root().meta.get(DEBUG_META):
        return True
    return os.environ.get(DEBUG_ENV, "").strip().lower() in _TRUE


def describe(error: BaseException) -> tuple[str, int]:
    """The message and exit code the command line shows for ``error``."""
    if isinstance(error, RecallbenchError):
        return str(error), error.exit_code
    database = _database_error(error)
    if database is not None:
        return database
    if isinstance(error, OSError):
        return _os_error(error)
    if isinstance(error, UnicodeDecodeError):  # a reader that did not locate it: still input
        return f"an input is not UTF-8 text ({error.reason} at byte {error.start})", EXIT_BAD_INPUT
    package = type(error).__module__.partition(".")[0]
    if package in _SERVICE_MODULES:
        return f"{package}: {type(error).__name__}: {error}", EXIT_SERVICE_FAILED
    return (
        f"internal error: {type(error).__name__}: {error} "
        "(rerun with --debug for the traceback; please report it)",
        EXIT_INTERNAL,
    )


def _os_error(error: OSError) -> tuple[str, int]:
    reason = error.strerror or str(error) or type(error).__name__
    if error.filename is None:  # a socket, a pipe: the system failed, not a named input
        return f"{type(error).__name__}: {reason}", EXIT_SERVICE_FAILED
    where = os.fsdecode(error.filename)
    if error.filename2 is not None:
        where += f" -> {os.fsdecode(error.filename2)}"
    return f"{where}: {reason}", EXIT_BAD_INPUT


def _database_error(error: BaseException) -> tuple[str, int] | None:
    """A SQLAlchemy error (the module is loaded when one can exist): the store, masked."""
    exc = sys.modules.get("sqlalchemy.exc")
    if exc is None or not isinstance(error, exc.SQLAlchemyError):
        return None
    from recallbench.store._engine import STORE_ATTRIBUTE

    store = getattr(error, STORE_ATTRIBUTE, None)
    where = f"history store {store}" if store else "history store"
    reason = getattr(error, "orig", None) or error
    if isinstance(error, exc.ArgumentError):
        return f"{where}: {reason}", EXIT_BAD_INPUT
    return f"{where}: {type(reason).__name__}: {reason}", EXIT_SERVICE_FAILED


def _report(message: str) -> None:
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True, highlight=False, soft_wrap=True).print(
        f"[bold red]error:[/bold red] {escape(message)}"
    )


def guarded(call: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """``call(*args, **kwargs)`` behind the boundary: a failure is printed and exits."""
    try:
        return call(*args, **kwargs)
    except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
        raise  # click's own: usage errors (exit 2), ctx.exit(); click prints them
    except KeyboardInterrupt:
        if debugging():
            raise
        print("interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    except Exception as error:
        if debugging():
            raise
        message, code = describe(error)
        _report(message)
        sys.exit(code)


def reports_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Run ``command`` behind the error boundary (see the module doc)."""

    @wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        return guarded(command, *args, **kwargs)

    return wrapper
