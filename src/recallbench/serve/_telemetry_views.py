"""The dashboard's query log and feedback pages, read from the store a page at a time."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recallbench.store import Store

PAGE = 50
"""Rows per page of the query log and of the feedback events."""
COUNT_CAP = 10_000
"""The query log is counted up to this many rows (or as far as the page asked for): beyond,
the page says "more than" (an exact count reads every row, seconds at 10M rows)."""
SEARCH_ROWS = 50_000
"""A search reads this many of the newest logged queries per page asked for (no index
answers a search of words): beyond, the page says how many it searched and its older pages
search further."""


def telemetry(store: Store, page: int, search: str) -> dict[str, Any]:
    """The query log, newest first, a page at a time (filtered by words of the query),
    with each query's feedback counted by kind; and every feedback kind's total.

    ``more``: the log goes on past what was counted (``total`` is then a lower bound) or,
    with a search, past the newest ``searched`` queries read (``total`` matches in them);
    the page after this one counts or searches further."""
    more = False  # the log goes on past what was counted or searched
    searched = 0
    if search:  # no index answers a search of words: the texts are read, newest first
        words = search.casefold().split()
        matches: dict[str, bool] = {}  # by text: agents ask the same question again and again
        hits: list[tuple[int, str]] = []  # (row newest first, query id)
        budget = SEARCH_ROWS * (page + 1)  # the most pages 0..page can read
        for query_id, text in store.query_log_newest(budget + 1):
            if searched == budget:
                more = True
                break
            match = matches.get(text)
            if match is None:
                folded = text.casefold()
                match = matches[text] = all(w in folded for w in words)
            if match:
                hits.append((searched, query_id))
            searched += 1
        bounds = _search_pages(hits, searched, more)
        total = len(hits)
        first, end = bounds[page] if page < len(bounds) else (0, 0)
        page_ids = [query_id for _, query_id in hits[first:end]]
        by_id = store.query_log_entries(page_ids)
        shown = [by_id[query_id] for query_id in page_ids if query_id in by_id]
        pages = page + 2 if more else len(bounds)
    else:  # a page of rows, a capped count and an aggregate, whatever the log's size
        cap = max(COUNT_CAP, (page + 2) * PAGE)  # enough to know whether an older page is
        total = store.query_log_count_upto(cap)
        more = total > cap
        total = min(total, cap)
        shown = store.query_log_page(page * PAGE, PAGE) if page * PAGE < total else []
        pages = max(-(-total // PAGE), page + 2 if more else 0)
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
        "more": more,
        "searched": searched,
        "page": page,
        "pages": max(1, pages),
        "search": search,
        "totals": dict(totals),
    }


def _search_pages(hits: list[tuple[int, str]], rows: int, more: bool) -> list[tuple[int, int]]:
    """(first, end) of each page's matches in ``hits``: a page holds the next ``PAGE``
    matches found within ``SEARCH_ROWS`` rows of where the page before it stopped (fewer
    when those rows hold fewer), so page N reads at most ``SEARCH_ROWS * (N + 1)`` rows
    and the pages cover every match once; a log of at most ``SEARCH_ROWS`` rows is paged
    ``PAGE`` matches at a time. ``rows``: the rows read; ``more``: the log goes on."""
    bounds: list[tuple[int, int]] = []
    start = hit = 0
    while True:
        first, stop = hit, start + SEARCH_ROWS
        while hit < len(hits) and hits[hit][0] < stop and hit - first < PAGE:
            hit += 1
        bounds.append((first, hit))
        start = hits[hit - 1][0] + 1 if hit - first == PAGE else min(stop, rows)
        if start >= rows or (hit == len(hits) and not more):
            return bounds


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
