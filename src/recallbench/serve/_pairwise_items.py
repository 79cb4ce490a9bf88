"""The pairwise items of the queue: two different rankings of one query to compare blind, a
shadow test's control and treatment (``shadow_runs``) or two logged searches of the same
text that returned different lists (two modes or systems)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import select

from recallbench.store._engine import transaction
from recallbench.store._tables import shadow_runs

if TYPE_CHECKING:
    from recallbench.store import QueryLogEntry, Store

TEXT_MAX = 6_000
"""Memory texts longer than this are cut for display."""


@dataclass(frozen=True, slots=True)
class Ranking:
    label: str
    results: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PairwiseItem:
    """Two rankings of one query to compare."""

    item: str
    """Stable id: ``shadow:ID`` or ``log:QUERY_ID:QUERY_ID``."""
    query_text: str
    first: Ranking
    second: Ranking
    texts: dict[str, str]
    """Memory id -> text, where known."""


def cut(text: str | None) -> str | None:
    """``text`` cut to TEXT_MAX characters for display."""
    if text is None or len(text) <= TEXT_MAX:
        return text
    return text[:TEXT_MAX] + " …"


def _texts(entries: Sequence[QueryLogEntry]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for entry in entries:
        for doc, text in entry.texts.items():
            texts.setdefault(doc, cut(text) or "")
    return texts


def shadow_items(
    store: Store, log: Sequence[QueryLogEntry], newest: int | None = None
) -> list[PairwiseItem]:
    """A shadow test's control and treatment lists of each shadowed query (of the
    ``newest`` shadow runs only, when given), oldest first."""
    by_id = {entry.query_id: entry for entry in log}
    c = shadow_runs.c
    query = select(shadow_runs).where(c.workspace_id == store.workspace)
    if newest is not None:
        query = query.order_by(c.created_at.desc(), c.id.desc()).limit(newest)
    else:
        query = query.order_by(c.created_at, c.id)
    with transaction(store._engine) as connection:
        found = list(connection.execute(query).mappings())
        rows = found[::-1] if newest is not None else found
        items = []
        for row in rows:
            control = tuple(json.loads(row["control_results"]))
            treatment = tuple(json.loads(row["treatment_results"]))
            if control == treatment:
                continue  # nothing to choose between
            entry = by_id.get(row["query_id"])
            items.append(
                PairwiseItem(
                    item=f"shadow:{row['id']}",
                    query_text=entry.text if entry else row["query_id"],
                    first=Ranking("control", control),
                    second=Ranking("treatment", treatment),
                    texts=_texts([entry] if entry else []),
                )
            )
    return items


def log_items(log: Sequence[QueryLogEntry]) -> list[PairwiseItem]:
    """Logged searches of the same text (case and spaces aside) that returned different
    lists: the first two different lists of each text."""
    groups: dict[str, list[QueryLogEntry]] = {}
    for entry in log:
        groups.setdefault(" ".join(entry.text.casefold().split()), []).append(entry)
    items = []
    for entries in groups.values():
        first = entries[0]
        second = next((e for e in entries[1:] if e.results != first.results), None)
        if second is None:
            continue
        items.append(
            PairwiseItem(
                item=f"log:{first.query_id}:{second.query_id}",
                query_text=first.text,
                first=Ranking(_label(first), first.results),
                second=Ranking(_label(second), second.results),
                texts=_texts([first, second]),
            )
        )
    return items


def _label(entry: QueryLogEntry) -> str:
    how = entry.mode or entry.tool or "search"
    return f"{how} ({entry.query_id})"
