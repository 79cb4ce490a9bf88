"""The smoke check of a system (``recallbench systems check``): start it, ingest three
documents, run two searches whose answer is known, and say what works.

Shared by ``systems check`` and ``systems init`` (which checks the profile it proposes).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from recallbench.core import Document, Query
from recallbench.systems._protocol import SystemUnderTest

EXIT_NO_PROFILE = 1
"""``systems init`` found no working profile: the best guess is written (when there is
one) with the reasons in its comments."""

CHECK_DOCUMENTS = (
    Document(id="check-1", text="The ledger runs on PostgreSQL since March."),
    Document(id="check-2", text="Deploys are frozen on Fridays."),
    Document(id="check-3", text="Priya prefers PR descriptions with a test plan."),
)
CHECK_SEARCHES = (("PostgreSQL", "check-1"), ("Fridays", "check-2"))
"""Query text -> the document id that must be among its hits."""


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
    finally:
        await system.close()
    return lines


def passed(lines: list[CheckLine]) -> bool:
    """Every step of the check worked."""
    return bool(lines) and all(line.ok for line in lines)
