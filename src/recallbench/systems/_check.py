"""The smoke check of a system (``recallbench systems check``): start it, ingest three
documents, run two searches whose answer is known and one that matches nothing (a server
that answers "no results" in words its profile does not know fails there, not in the middle
of a run), and say what works.

Shared by ``systems check`` and ``systems init`` (which checks the profile it proposes).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from recallbench.core import Document, Query, SystemUnderTestError
from recallbench.systems._protocol import SystemUnderTest

EXIT_NO_PROFILE = 1
"""``systems init`` found no working profile: the best guess is written (when there is
one) with the reasons in its comments."""

CHECK_DOCUMENTS = (
    Document(
        id="check-1",
        title="Ledger database",
        text="The ledger runs on PostgreSQL since March; the old MySQL replica was switched "
        "off after the migration.",
    ),
    Document(
        id="check-2",
        title="Deploy freeze",
        text="Deploys are frozen on Fridays: anything merged after Thursday noon waits for "
        "Monday's release train.",
    ),
    Document(
        id="check-3",
        title="Pull request descriptions",
        text="Priya prefers PR descriptions with a test plan and a screenshot of any change "
        "to the user interface.",
    ),
)
"""Memories as agents store them: a title (10 characters or more) and a text of 80 or more,
which servers that validate what they store (a title required, a minimum length) accept."""
CHECK_SEARCHES = (("PostgreSQL", "check-1"), ("Fridays", "check-2"))
"""Query text -> the document id that must be among its hits."""
NO_MATCH = "zqxjvorbnik"
"""A query no check document matches: its search must answer, with any hits or none."""


@dataclass(frozen=True, slots=True)
class CheckLine:
    """One step of the check and whether it worked."""

    ok: bool
    text: str

    def __str__(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'}  {self.text}"


async def check_system(system: SystemUnderTest) -> list[CheckLine]:
    """Run the check on ``system`` (set up here, closed at the end). A failure to start
    or ingest propagates (SystemUnderTestError); a search that misses is a failed line."""
    lines: list[CheckLine] = []
    start = time.perf_counter()
    try:
        await system.setup(CHECK_DOCUMENTS)
        elapsed = time.perf_counter() - start
        lines.append(CheckLine(True, f"started and ingested 3 documents in {elapsed:.2f} s"))
        for text, expected in CHECK_SEARCHES:
            hits = await system.search(Query(id="check", text=text), 5)
            ids = [hit.doc_id for hit in hits]
            scored = "with scores" if any(h.score is not None for h in hits) else "no scores"
            lines.append(CheckLine(expected in ids, f"search {text!r}: {ids} ({scored})"))
        lines.append(await _nothing_found(system))
    finally:
        await system.close()
    return lines


async def _nothing_found(system: SystemUnderTest) -> CheckLine:
    """The search that matches nothing: an answer (with or without hits) is right; an
    error is the line, with its message (e.g. an answer saying "no results" that the
    profile's ``[results] empty`` does not know)."""
    try:
        hits = await system.search(Query(id="check-none", text=NO_MATCH), 5)
    except SystemUnderTestError as error:
        return CheckLine(False, f"search {NO_MATCH!r} (matches nothing): {error}")
    return CheckLine(True, f"search {NO_MATCH!r} (matches nothing): {[h.doc_id for h in hits]}")


def passed(lines: list[CheckLine]) -> bool:
    """Every step of the check worked."""
    return bool(lines) and all(line.ok for line in lines)
