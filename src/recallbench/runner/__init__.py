"""Runs a dataset against a system under test: timing, errors, recording."""

from recallbench.runner._revision import git_revision
from recallbench.runner._runner import Progress, run_dataset

__all__ = ["Progress", "git_revision", "run_dataset"]
