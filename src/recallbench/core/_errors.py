"""One error hierarchy for everything a user can get wrong.

The command line prints a :class:`RecallbenchError` without a traceback and exits with
its ``exit_code`` (2: bad input or usage).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Problem:
    """One defect in an input, located by JSON path or ``file:line``."""

    location: str
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message}" if self.location else self.message


class RecallbenchError(Exception):
    """Base class of the errors recallbench reports to users."""

    exit_code = 2


class DatasetError(RecallbenchError):
    """A dataset, qrels or run file is malformed; carries every problem found."""

    def __init__(self, source: str, problems: Iterable[Problem]) -> None:
        self.source = source
        self.problems: Sequence[Problem] = tuple(problems)
        super().__init__(self._render())

    def _render(self) -> str:
        count = len(self.problems)
        noun = "problem" if count == 1 else "problems"
        lines = [f"{self.source}: {count} {noun}"]
        lines.extend(f"  {problem}" for problem in self.problems)
        return "\n".join(lines)


class RunFileError(DatasetError):
    """A run file (TREC or recallbench JSON) is malformed."""


class UnknownMeasureError(RecallbenchError):
    """A measure name that no measure parses."""


class UnknownNameError(RecallbenchError):
    """A dataset or system name that is not registered."""


class ConfigError(RecallbenchError):
    """Bad options or configuration."""


class SystemUnderTestError(RecallbenchError):
    """A system under test could not be set up or answered wrongly: its command did not
    start, exited, hung at start, lacks a tool, answered off its format. Exit code 3, "the
    system under test failed", as when its queries fail: the same profile or command can
    work on another machine or at another moment, so it is not bad input (2), which is
    what recallbench can tell is wrong before starting anything."""

    exit_code = 3
