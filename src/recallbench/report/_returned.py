"""What a report says about the answers themselves, beyond the measures: results that
matched no document, documents the system refused, scores, and the depth actually asked."""

from __future__ import annotations

from recallbench.core import Run, RunSpec
from recallbench.runner import unmatched_advice, unmatched_results

NOT_INGESTED_SHOWN = 10


def scores_returned(run: Run) -> bool:
    """Whether the system returned scores: on a hit that was scored, or (counted by the
    system) on a result that matched no document."""
    if any(hit.score is not None for result in run.results for hit in result.hits):
        return True
    scored = run.spec.settings.get("scored_results")
    return isinstance(scored, int) and scored > 0


def searched_depth(spec: RunSpec) -> int | None:
    """How many results each search asked for when the system capped it below ``k`` (an
    MCP profile's ``[search] max_k``); None when searches asked for ``k``."""
    profile = spec.settings.get("profile")
    search = profile.get("search") if isinstance(profile, dict) else None
    cap = search.get("max_k") if isinstance(search, dict) else None
    if isinstance(cap, int) and spec.k is not None and cap < spec.k:
        return cap
    return None


def depth_note(k: int | None, searched: int | None) -> str:
    """``k = 100``, or with a cap ``k = 100 (the profile caps searches at 20: measures at
    cutoffs above 20 see at most 20 results)``; "" without a k."""
    if k is None:
        return ""
    if searched is None:
        return f"k = {k}"
    return (
        f"k = {k} (the profile caps searches at {searched}: measures at cutoffs above "
        f"{searched} see at most {searched} results)"
    )


def unmatched_line(run: Run) -> str | None:
    """``1827 of 1827 returned results matched no document of the dataset (not scored)``,
    or None when every result matched one."""
    unmatched, returned = unmatched_results(run)
    if not unmatched:
        return None
    return f"{unmatched} of {returned} returned results matched no document of the dataset"


def returned_warnings(run: Run) -> list[str]:
    """Warnings about the answers: most (or all) returned results matched no document (a
    wrong ``[results] id`` or ``match``, most likely), documents the system refused."""
    warnings = []
    unmatched, returned = unmatched_results(run)
    if unmatched and 2 * unmatched > returned:
        share = "all" if unmatched == returned else f"{unmatched / returned:.0%} of the"
        warnings.append(
            f"{share} {returned} results the system returned matched no document of the "
            f"dataset and were not scored (the measures count them as misses): "
            f"{unmatched_advice(run)}"
        )
    ids = not_ingested(run.spec)
    if ids:
        refused = run.spec.settings.get("not_ingested")
        shown = ", ".join(ids[:NOT_INGESTED_SHOWN])
        more = f" and {len(ids) - NOT_INGESTED_SHOWN} more" if len(ids) > NOT_INGESTED_SHOWN else ""
        call = refused[0] if isinstance(refused, list) else None
        first = call.get("error", "") if isinstance(call, dict) else ""
        warnings.append(
            f"{len(ids)} document{' was' if len(ids) == 1 else 's were'} not ingested "
            "(refused by the system; "
            f"[ingest] on_error = 'skip'): {shown}{more}; queries that need them cannot find "
            f"them; first refusal: {str(first)[:200]}"
        )
    return warnings


def not_ingested(spec: RunSpec) -> list[str]:
    """The ids of the documents the system refused to store (its ``not_ingested``)."""
    refused = spec.settings.get("not_ingested")
    ids: list[str] = []
    for call in refused if isinstance(refused, list) else []:
        listed = call.get("ids") if isinstance(call, dict) else None
        ids += map(str, listed) if isinstance(listed, list) else []
    return ids
