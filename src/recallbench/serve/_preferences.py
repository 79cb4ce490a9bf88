"""Where blind pairwise preferences go: the ``pairwise_preferences`` table of the store.

The ``judgments`` table holds graded labels of one (query, memory) pair; a preference
between two rankings of a query is another kind of label, so it gets its own table in the
same database (SQLite or PostgreSQL), made by the store's migration m006 like every other
table. One row per (workspace, item, annotator): a later choice of the same annotator
replaces the earlier.

``preferred`` names the ranking in the item's own order (``first``, ``second`` or ``tie``),
never the side it was shown on: ``shown`` records which one was on the left
(``first`` or ``second``), so that position bias can be studied afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import Engine, delete, select

from recallbench.store._engine import transaction
from recallbench.store._tables import pairwise_preferences

Preferred = Literal["first", "second", "tie"]
PREFERRED: tuple[Preferred, ...] = ("first", "second", "tie")


@dataclass(frozen=True, slots=True)
class Preference:
    """One annotator's choice between the two rankings of a pairwise item."""

    item: str
    query_text: str
    first_label: str
    first_results: tuple[str, ...]
    second_label: str
    second_results: tuple[str, ...]
    preferred: Preferred
    shown: Literal["first", "second"]
    annotator: str
    created_at: datetime


def save(engine: Engine, workspace: str, preference: Preference) -> None:
    """Write ``preference``, replacing the annotator's earlier choice on the same item."""
    table = pairwise_preferences
    with transaction(engine, write=True) as connection:
        connection.execute(
            delete(table).where(
                table.c.workspace_id == workspace,
                table.c.item == preference.item,
                table.c.annotator == preference.annotator,
            )
        )
        connection.execute(
            table.insert().values(
                workspace_id=workspace,
                item=preference.item,
                query_text=preference.query_text,
                first_label=preference.first_label,
                first_results=json.dumps(list(preference.first_results)),
                second_label=preference.second_label,
                second_results=json.dumps(list(preference.second_results)),
                preferred=preference.preferred,
                shown=preference.shown,
                annotator=preference.annotator,
                created_at=preference.created_at,
            )
        )


def remove(engine: Engine, workspace: str, item: str, annotator: str) -> bool:
    """Forget the annotator's choice on ``item`` (undo); False when none was stored."""
    table = pairwise_preferences
    with transaction(engine, write=True) as connection:
        deleted = connection.execute(
            delete(table).where(
                table.c.workspace_id == workspace,
                table.c.item == item,
                table.c.annotator == annotator,
            )
        )
        return deleted.rowcount > 0


def preferences(
    engine: Engine, workspace: str, items: Sequence[str] | None = None
) -> list[Preference]:
    """Every stored preference of the workspace (of these items when given), oldest first."""
    table = pairwise_preferences
    query = select(table).where(table.c.workspace_id == workspace)
    if items is not None:
        query = query.where(table.c.item.in_(list(items)))
    with transaction(engine) as connection:
        rows = connection.execute(query.order_by(table.c.created_at, table.c.id)).mappings().all()
    return [
        Preference(
            item=row["item"],
            query_text=row["query_text"],
            first_label=row["first_label"],
            first_results=tuple(json.loads(row["first_results"])),
            second_label=row["second_label"],
            second_results=tuple(json.loads(row["second_results"])),
            preferred=row["preferred"],
            shown=row["shown"],
            annotator=row["annotator"],
            created_at=row["created_at"],
        )
        for row in rows
    ]
