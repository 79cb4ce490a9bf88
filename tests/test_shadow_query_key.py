"""The query unit stored with the pair (``shadow_runs.query_key``, m014): the proxy writes
it, m014 fills it on rows written before, and a test decides on it exactly as on the keys
of the logged texts it replaces (both engines)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import delete, text, update

from recallbench.core._query_key import query_key
from recallbench.online._shadow_decide import decide_test
from recallbench.online._shadow_rule import GraduationRule
from recallbench.stats._interleaving import team_draft
from recallbench.store import FeedbackEvent, QueryLogEntry, Store, _migrations, open_store
from recallbench.store._tables import shadow_checkpoints, shadow_runs

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
RULE = GraduationRule(measure="rr", unit="query", min_queries=5)


def traffic(texts: int = 30, repeats: int = 3) -> tuple[list[dict[str, Any]], list[Any]]:
    """Pairs shown interleaved, each text searched ``repeats`` times in other wordings
    (one unit), the treatment placing the read document higher on every other text."""
    rows, entries, events = [], [], []
    for repeat in range(repeats):
        for i in range(texts):
            query_id = f"q{repeat}-{i}"
            wording = f"Note {i}?" if repeat % 2 else f"note {i}"
            at = T0 + timedelta(seconds=repeat * texts + i)
            control = ["x", "y", f"d{i}"]
            treatment = [f"d{i}", "x", "y"] if i % 2 else control
            drafted = team_draft(control, treatment, query_id)
            rows.append(
                {
                    "query_id": query_id,
                    "control_results": control,
                    "treatment_results": treatment,
                    "control_latency_ms": 10.0,
                    "treatment_latency_ms": 11.0,
                    "created_at": at,
                    "interleaved": list(zip(drafted.items, drafted.teams, strict=True)),
                    "interleaved_credited": len(drafted.items),
                    "control": "A",
                    "treatment": "B",
                }
            )
            entries.append(QueryLogEntry(query_id, wording, at, tuple(control)))
            events.append(FeedbackEvent(query_id, "read_after_search", at, doc_id=f"d{i}"))
    return rows, [*entries, *events]


def start(store: Store) -> Any:
    return store.start_shadow_test(
        "t", "A", "B", RULE.measure, RULE.to_dict(), RULE.to_dict()["guardrails"], at=T0
    )


def log(store: Store, logged: list[Any]) -> None:
    store.log(
        queries=[e for e in logged if isinstance(e, QueryLogEntry)],
        feedback=[e for e in logged if isinstance(e, FeedbackEvent)],
    )


def test_the_stored_key_decides_as_the_logged_text_did(db_url: str) -> None:
    rows, logged = traffic()
    texts = {e.query_id: e.text for e in logged if isinstance(e, QueryLogEntry)}
    with open_store(db_url) as store:
        test = start(store)
        store.log_shadow_runs(
            [{**row, "query_key": query_key(texts[row["query_id"]])} for row in rows]
        )
        log(store, logged)
        stored = decide_test(store, test)
        # pairs are only ever rewritten by a migration, which drops the checkpoints as here
        with store._engine.begin() as connection:  # as a store loaded without the key
            connection.execute(update(shadow_runs).values(query_key=None))
            connection.execute(delete(shadow_checkpoints))
        looked_up = decide_test(store, test)
        with store._engine.begin() as connection:  # a wrong key is read: the test can fail
            connection.execute(update(shadow_runs).values(query_key=shadow_runs.c.query_id))
            connection.execute(delete(shadow_checkpoints))
        wrong = decide_test(store, test)
    assert stored.to_dict() == looked_up.to_dict()
    # the wordings of a text are one unit, read from the stored key
    assert (stored.units, stored.repeats) == (30, 60)
    assert wrong.to_dict() != stored.to_dict() and wrong.units == 90


def test_m014_fills_the_key_of_pairs_written_before(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows, logged = traffic(texts=10)
    with monkeypatch.context() as patched:
        patched.setattr(_migrations, "MIGRATIONS", _migrations.MIGRATIONS[:13])
        with open_store(db_url) as old:
            old.log_shadow_runs([*rows, {**rows[0], "query_id": "never-logged"}])
            log(old, logged)
    with open_store(db_url) as store, store._engine.connect() as connection:
        rows_read = connection.execute(text("SELECT query_id, query_key FROM shadow_runs"))
        keys = {row.query_id: row.query_key for row in rows_read}
    texts = {e.query_id: e.text for e in logged if isinstance(e, QueryLogEntry)}
    assert keys == {**{q: query_key(t) for q, t in texts.items()}, "never-logged": None}
