"""The dashboard's query log and feedback pages, read from the store a page at a time."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recallbench.store import Store

PAGE = 50
"""Rows per page of the query log and of the feedback events."""


def telemetry(store: Store, page: int, search: str) -> dict[str, Any]:
    """The query log, newest first, a page at a time (filtered by words of the query),
    with each query's feedback counted by kind; and every feedback kind's total."""
    if search:  # no index answers a search of words: the texts are read, newest first
        words = search.casefold().split()
        matches: dict[str, bool] = {}  # by text: agents ask the same question again and again
        found = []
        for query_id, text in store.query_log_newest():
            match = matches.get(text)
            if match is None:
                folded = text.casefold()
                match = matches[text] = all(w in folded for w in words)
            if match:
                found.append(query_id)
        total = len(found)
        page_ids = found[page * PAGE : (page + 1) * PAGE]
        by_id = store.query_log_entries(page_ids)
        shown = [by_id[query_id] for query_id in page_ids]
    else:  # a page of rows and two aggregates, whatever the log's size
        total = store.query_log_count()
        shown = store.query_log_page(page * PAGE, PAGE) if page * PAGE < total else []
    feedback = store.feedback([e.query_id for e in shown]) if shown else []
    kinds: dict[str, Counter[str]] = {}
    for event in feedback:
        kinds.setdefault(event.query_id, Counter())[event.kind] += 1
    totals = store.feedback_counts()
    return {
        "entries": [
            {
                "id": e.query_id,
                "text": e.text,
                "created": f"{e.created_at:%Y-%m-%d %H:%M:%S}",
                "mode": e.mode or e.tool,
                "results": len(e.results),
                "latency": e.latency_ms,
                "golden": e.golden,
                "feedback": dict(kinds.get(e.query_id, {})),
            }
            for e in shown
        ],
        "total": total,
        "page": page,
        "pages": max(1, -(-total // PAGE)),
        "search": search,
        "totals": dict(totals),
    }


def telemetry_query(store: Store, query_id: str) -> dict[str, Any] | None:
    """One logged query: its results with texts and channels, its feedback and labels."""
    entry = store.query_log_entry(query_id)
    if entry is None:
        return None
    labels: dict[str, list[dict[str, Any]]] = {}
    for label in store.judgments([query_id]):
        labels.setdefault(label.doc_id, []).append(
            {"grade": label.grade, "source": label.source, "annotator": label.annotator}
        )
    channels = {
        doc: [n for n, ids in entry.channels.items() if doc in ids] for doc in entry.results
    }
    return {
        "entry": entry,
        "created": f"{entry.created_at:%Y-%m-%d %H:%M:%S}",
        "results": [
            {
                "rank": rank,
                "id": doc,
                "text": entry.texts.get(doc),
                "channels": channels[doc],
                "labels": labels.get(doc, []),
            }
            for rank, doc in enumerate(entry.results, 1)
        ],
        "feedback": store.feedback([query_id]),
    }


def feedback(store: Store, kind: str, page: int) -> dict[str, Any]:
    """Feedback events, newest first, a page at a time (of one kind when given)."""
    from recallbench.store import FEEDBACK_KINDS

    total = store.feedback_count(kind)
    return {
        "events": store.feedback_page(page * PAGE, PAGE, kind) if page * PAGE < total else [],
        "total": total,
        "page": page,
        "pages": max(1, -(-total // PAGE)),
        "kind": kind,
        "kinds": FEEDBACK_KINDS,
    }
