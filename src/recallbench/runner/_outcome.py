"""When a run's failed queries make the command fail (exit 3), and what it then says."""

from __future__ import annotations

from collections.abc import Sequence

from recallbench.core import RecallbenchError, Run

EXIT_SYSTEM_FAILED = 3
"""The exit code of a run whose system failed: every query failed, or (``--strict``) any."""


class SystemFailedError(RecallbenchError):
    """The system under test failed queries: the reports are written, the command fails."""

    exit_code = EXIT_SYSTEM_FAILED


def failure_of(run: Run, strict: bool = False) -> str | None:
    """Why ``run`` fails the command, or None: every query failed (a run that measured
    nothing), or, ``strict``, any query failed."""
    failed = [result for result in run.results if result.error is not None]
    if not failed or (not strict and len(failed) < len(run.results)):
        return None
    share = "every query" if len(failed) == len(run.results) else f"{len(failed)} queries"
    restarts = f" (after {run.spec.restarts} restarts)" if run.spec.restarts else ""
    return (
        f"{run.spec.system}: {share} of {len(run.results)} failed{restarts}; "
        f"first error ({failed[0].query_id}): {failed[0].error}"
    )


def raise_for_failures(runs: Sequence[Run], strict: bool = False) -> None:
    """SystemFailedError naming every run that fails the command."""
    reasons = [reason for run in runs if (reason := failure_of(run, strict)) is not None]
    if reasons:
        raise SystemFailedError("\n".join(reasons))
