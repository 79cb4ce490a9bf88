"""Relevance labels from the judge, into the store's ``judgments`` table (source ``llm``).

The judge's label sits beside any label a person gave, never over it: the table keeps one
row per (query, memory, source), so a manual row cannot be overwritten by an ``llm`` one,
and :func:`resolved_grades` reads a manual label before the judge's. Both are kept because
the agreement between them is what tells whether the judge can be trusted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from recallbench.judges._judgment import Judgment
from recallbench.judges._task_kinds import Relevance
from recallbench.store import Judgment as StoredJudgment
from recallbench.store import Store
from recallbench.store._telemetry import JudgmentSource

LLM: JudgmentSource = "llm"
"""The judge's source (allowed by migration m004)."""


def record_llm_labels(
    store: Store,
    labels: Iterable[tuple[str, str, Judgment[Relevance]]],
    now: datetime | None = None,
) -> int:
    """Write (query id, memory id, judgment) relevance labels with source ``llm``, the
    answering model as annotator and its stated confidence; a later label of the judge
    replaces its earlier one. Failed judgments have no grade and are skipped. Returns the
    number written."""
    now = now or datetime.now(UTC)
    rows = [
        StoredJudgment(
            query_id=query_id,
            doc_id=doc_id,
            grade=judgment.value.grade,
            source=LLM,
            created_at=now,
            annotator=judgment.model or None,
            confidence=judgment.value.confidence,
        )
        for query_id, doc_id, judgment in labels
        if judgment.value is not None
    ]
    store.log(judgments=rows)
    return len(rows)


def resolved_grades(
    store: Store, query_ids: Sequence[str] | None = None
) -> dict[tuple[str, str], StoredJudgment]:
    """One label per (query, memory) among the manual and the judge's labels: the manual
    one whenever there is one."""
    resolved: dict[tuple[str, str], StoredJudgment] = {}
    for source in (LLM, "manual"):  # manual last: it replaces the judge's
        for label in store.judgments(query_ids, source=source):
            resolved[(label.query_id, label.doc_id)] = label
    return resolved
