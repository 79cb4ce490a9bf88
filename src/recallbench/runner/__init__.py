"""Runs a dataset against a system under test: timing, errors, recording."""

from recallbench.runner._outcome import (
    EXIT_SYSTEM_FAILED,
    SystemFailedError,
    failure_of,
    raise_for_failures,
    unmatched_advice,
    unmatched_results,
)
from recallbench.runner._revision import git_revision
from recallbench.runner._runner import DEFAULT_RESTARTS, Progress, run_dataset

__all__ = [
    "DEFAULT_RESTARTS",
    "EXIT_SYSTEM_FAILED",
    "Progress",
    "SystemFailedError",
    "failure_of",
    "git_revision",
    "raise_for_failures",
    "run_dataset",
    "unmatched_advice",
    "unmatched_results",
]
