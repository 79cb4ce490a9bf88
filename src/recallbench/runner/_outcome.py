"""When a run's failed queries (or unmatched results) make the command fail (exit 3), and
what it then says."""

from __future__ import annotations

from collections.abc import Sequence

from recallbench.core import RecallbenchError, Run

EXIT_SYSTEM_FAILED = 3
"""The exit code of a run whose system failed: every query failed, every result it
returned matched no document, or (``--strict``) any query failed."""


class SystemFailedError(RecallbenchError):
    """The system under test failed queries: the reports are written, the command fails."""

    exit_code = EXIT_SYSTEM_FAILED


def unmatched_results(run: Run) -> tuple[int, int]:
    """(results that matched no document of the dataset, results returned in all), as the
    system counted them (an MCP server's ``unmatched_results``); (0, hits) when it did not.
    Both count every search, repeats included."""
    settings = run.spec.settings
    unmatched = settings.get("unmatched_results")
    unmatched = unmatched if isinstance(unmatched, int) else 0
    returned = settings.get("returned_results")
    if not isinstance(returned, int) or returned < unmatched:  # a run made before the count
        returned = unmatched + sum(len(result.hits) for result in run.results)
    return unmatched, returned


def unmatched_advice(run: Run) -> str:
    """What to check when results match no document: the profile's ``[results] id`` (with
    its value) or ``match``, in the profile's file when the run names it."""
    settings = run.spec.settings
    profile = settings.get("profile")
    results = profile.get("results") if isinstance(profile, dict) else None
    results = results if isinstance(results, dict) else {}
    match, path = results.get("match", "id"), results.get("id")
    now = f"match = {match!r}" + (f", id = {path!r}" if match == "id" and path else "")
    where = settings.get("profile_file")
    return (
        f"check [results] id (the path to a hit's document id: 'tags[0]' picks a list's "
        f"first item) or match (now {now}) in {where or 'the profile of ' + run.spec.system}"
    )


def _all_unmatched(run: Run) -> str | None:
    """Why a run whose every returned result matched no document measured nothing."""
    unmatched, returned = unmatched_results(run)
    if not unmatched or unmatched < returned:
        return None
    return (
        f"{run.spec.system}: all {unmatched} results the system returned matched no document "
        f"of the dataset, so every measure is 0; {unmatched_advice(run)}"
    )


def failure_of(run: Run, strict: bool = False) -> str | None:
    """Why ``run`` fails the command, or None: every query failed, or every result the
    system returned matched no document of the dataset (both a run that measured nothing),
    or, ``strict``, any query failed."""
    failed = [result for result in run.results if result.error is not None]
    if not failed or (not strict and len(failed) < len(run.results)):
        return _all_unmatched(run)
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
