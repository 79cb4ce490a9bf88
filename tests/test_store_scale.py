"""A large store stays fast (``benchmarks/store_scale.py`` times it at 10M logged queries):
these catch a regression cheaply. The hot reads use their indexes (the query plans, on
SQLite and PostgreSQL), pages cover every row exactly once, and what SQL aggregates or
streams equals what the Python over whole tables gave, on data with ties, duplicates,
withheld texts and ids that sort differently by code point and by locale."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event, insert

from recallbench.core._query_key import query_key
from recallbench.datasets._json_v1 import dump_json_dataset
from recallbench.online._harvest import harvest, harvest_log
from recallbench.store import FeedbackEvent, Judgment, QueryLogEntry, Store, open_store
from recallbench.store._tables import eval_queries, eval_query_values, eval_runs

T0 = datetime(2026, 3, 1, tzinfo=UTC)
KINDS = ("read_after_search", "validated_useful", "validated_not_useful", "re_search")
IDS = ("Zeta", "alpha", "éclair", "q-10", "q-9", "Q1", "_x", "z", "Ω", "a b")
TEXTS = (
    "Where is the budget review?",
    "where is the BUDGET review",
    "what does the user prefer",
    "What does the user prefer?!",
    "which flight to Oslo",
    "???",
    "[withheld sha256:abc123 20 chars]",
)


def _data(seed: int = 3, n: int = 240) -> tuple[list[QueryLogEntry], list[FeedbackEvent]]:
    """Queries at a few instants (ties), repeated texts, odd ids; feedback on half."""
    rng = random.Random(seed)
    entries, events = [], []
    for i in range(n):
        docs = rng.sample([f"d{d}" for d in range(12)], rng.randint(1, 5))
        texts = {d: f"memory {d} " * rng.randint(1, 3) for d in docs if rng.random() < 0.8}
        entries.append(
            QueryLogEntry(
                query_id=f"{IDS[i % len(IDS)]}-{i // len(IDS)}",
                text=rng.choice(TEXTS),
                created_at=T0 + timedelta(seconds=rng.randrange(30)),
                results=tuple(docs),
                texts=texts,
                intent=rng.choice(("fact", "task", None)),
                session_id=f"s{i // 6}",
            )
        )
        if rng.random() < 0.5:
            for _ in range(rng.randint(1, 3)):
                kind = rng.choice(KINDS)
                events.append(
                    FeedbackEvent(
                        query_id=entries[-1].query_id,
                        kind=kind,  # type: ignore[arg-type]
                        created_at=T0 + timedelta(seconds=rng.randrange(40)),
                        doc_id=None if kind == "re_search" else rng.choice(docs),
                    )
                )
    return entries, events


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    entries, events = _data()
    rng = random.Random(5)
    judgments = [
        Judgment(e.query_id, e.results[0], rng.randint(0, 3), "manual", created_at=T0)
        for e in entries[::7]
    ]
    with open_store(db_url) as opened:
        opened.log(queries=entries, feedback=events, judgments=judgments)
        yield opened


def test_pages_cover_every_row_exactly_once(store: Store) -> None:
    newest = [e.query_id for e in store.query_log()][::-1]
    for size in (1, 7, 50):
        paged = [
            e.query_id
            for offset in range(0, len(newest) + size, size)
            for e in store.query_log_page(offset, size)
        ]
        assert paged == newest
    events = store.feedback()[::-1]
    for kind in ("", *KINDS):
        wanted = [e.event_id for e in events if not kind or e.kind == kind]
        paged = [
            e.event_id
            for offset in range(0, len(wanted) + 9, 9)
            for e in store.feedback_page(offset, 9, kind)
        ]
        assert paged == wanted and len(set(paged)) == len(paged) > 0
        assert store.feedback_count(kind) == len(wanted)
    assert store.query_log_count() == len(newest)
    assert [q for q, _ in store.query_log_newest()] == newest
    assert store.query_log_entry(newest[3]) == store.query_log_entries([newest[3]])[newest[3]]
    assert store.query_log_entry("never logged") is None


def test_sql_aggregates_equal_the_python_ones(store: Store) -> None:
    counted = Counter(e.kind for e in store.feedback())  # in the order of the first events
    assert list(store.feedback_counts().items()) == list(counted.items())
    with open_store(store.url.replace("***", ""), "another") as other:  # an empty workspace
        assert other.feedback_counts() == {} and other.query_log_count() == 0


def test_feedback_counts_order_kinds_first_seen_at_one_instant_by_id(db_url: str) -> None:
    """Two kinds whose first events share an instant: the one logged first comes first."""
    events = [
        FeedbackEvent("q", "validated_useful", T0, "d"),
        FeedbackEvent("q", "read_after_search", T0, "d"),
        FeedbackEvent("q", "read_after_search", T0 - timedelta(seconds=0), "e"),
    ]
    with open_store(db_url) as store:
        store.log(queries=[QueryLogEntry("q", "x", T0)], feedback=events)
        assert list(store.feedback_counts()) == ["validated_useful", "read_after_search"]


@pytest.mark.parametrize(
    "window", [(None, None), (T0 + timedelta(seconds=10), T0 + timedelta(seconds=20))]
)
def test_streamed_harvest_equals_the_harvest_of_entries(
    store: Store, window: tuple[datetime | None, datetime | None]
) -> None:
    since, until = window
    entries = store.query_log(since=since, until=until)
    ids = [e.query_id for e in entries]
    for sample in (None, 2):
        expected = harvest(
            entries, store.feedback(ids), store.judgments(ids), sample_per_intent=sample
        )
        manual = sorted(store.judgments(source="manual"), key=lambda j: (j.query_id, j.doc_id))
        streamed = harvest_log(
            store.query_log_stream(since, until),
            store.feedback_stream(since, until),
            manual,
            sample_per_intent=sample,
        )
        assert streamed[1] == expected[1] and expected[1].logged == len(entries)
        assert dump_json_dataset(streamed[0]) == dump_json_dataset(expected[0])
        assert expected[0].queries and expected[1].withheld  # the data exercises both


def test_query_values_of_equals_query_values_per_run(store: Store) -> None:
    engine, w = store._engine, store.workspace
    with engine.begin() as connection:
        for run_id in (5, 11, 2):
            connection.execute(
                insert(eval_runs),
                {
                    "id": run_id, "workspace_id": w, "system": "s", "system_settings": "{}",
                    "dataset_name": "d", "dataset_version": "1", "dataset_sha256": "ab" * 32,
                    "relevance_threshold": 1, "recallbench_version": "0", "rules": "{}",
                    "created_at": T0, "recorded_at": T0, "accepted": False, "queries": 3,
                    "evaluated": 3, "failed": 0, "missing": 0, "no_relevant": 0,
                },
            )  # fmt: skip
            connection.execute(
                insert(eval_queries),
                [
                    {"run_id": run_id, "workspace_id": w, "query_id": q, "position": p,
                     "status": "ok"}
                    for p, q in enumerate(["z", "a", "é"][:: 1 if run_id % 2 else -1])
                ],
            )  # fmt: skip
            connection.execute(
                insert(eval_query_values),
                [
                    {"run_id": run_id, "workspace_id": w, "query_id": q, "measure": m,
                     "value": None if (run_id + len(m)) % 3 == 0 else run_id / 10}
                    for q in ("z", "a") for m in ("mrr", "ndcg@10")
                ],
            )  # fmt: skip
    runs = store.runs()
    assert [r.id for r in runs] == [11, 5, 2]
    assert store.query_values_of(runs) == [store.query_values(r.id) for r in runs]


def test_a_shadow_test_keys_only_its_paired_queries(store: Store) -> None:
    logged = store.query_log()
    start, end = T0 + timedelta(seconds=5), T0 + timedelta(seconds=25)
    store.log_shadow_runs(
        [
            {"query_id": e.query_id, "control_results": ["a"], "treatment_results": ["b"],
             "created_at": T0 + timedelta(seconds=i % 30)}
            for i, e in enumerate(logged[::3])
        ]
    )  # fmt: skip
    paired = {r["query_id"] for r in store.shadow_runs(since=start, until=end)}
    in_window = {e.query_id: e.text for e in logged if start <= e.created_at <= end}
    texts = store.shadowed_query_texts(start, end)
    assert texts == {q: t for q, t in in_window.items() if q in paired}
    assert texts and {query_key(t) for t in texts.values()}


# -- query plans --------------------------------------------------------------------------


@contextmanager
def _statements(store: Store) -> Iterator[list[tuple[str, Any]]]:
    seen: list[tuple[str, Any]] = []

    def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            seen.append((statement, parameters))

    event.listen(store._engine, "before_cursor_execute", capture)
    try:
        yield seen
    finally:
        event.remove(store._engine, "before_cursor_execute", capture)


def _plan(store: Store, read: Callable[[], object]) -> str:
    """The plan of the one SELECT ``read`` runs (the PostgreSQL planner told to avoid
    sequential scans, bitmap scans and full sorts: a handful of rows would otherwise be
    read whole and sorted, rightly; an index that can serve the query is then used)."""
    with _statements(store) as seen:
        result = read()
        if isinstance(result, Iterator):
            list(result)
    (statement, parameters), *rest = seen
    assert not rest, seen
    with store._engine.connect() as connection:
        if connection.dialect.name == "sqlite":
            rows = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
            return "\n".join(str(row[-1]) for row in rows)
        connection.exec_driver_sql("ANALYZE")  # the statistics a store of any size has
        for method in ("seqscan", "bitmapscan", "sort"):  # what a large table would avoid
            connection.exec_driver_sql(f"SET enable_{method} = off")
        rows = connection.exec_driver_sql(f"EXPLAIN {statement}", parameters)
        return "\n".join(str(row[0]) for row in rows)


HOT_READS: dict[str, tuple[Callable[[Store], object], str, bool]] = {
    # name: (read, the index it must use, whether the index alone gives the order)
    "feedback page": (lambda s: s.feedback_page(100, 50), "ix_feedback_events_created", True),
    "feedback page of a kind": (
        lambda s: s.feedback_page(100, 50, "validated_useful"),
        "ix_feedback_events_kind",
        True,
    ),
    "feedback count of a kind": (
        lambda s: s.feedback_count("re_search"),
        "ix_feedback_events_kind",
        True,
    ),
    "feedback of some queries": (
        lambda s: s.feedback(["alpha-3", "Zeta-1"]),
        "ix_feedback_events_query",  # not an index giving the order: it holds every event
        True,
    ),
    "query log page": (lambda s: s.query_log_page(100, 50), "ix_query_log_created", False),
    "harvest's stream": (lambda s: s.query_log_stream(), "ix_query_log_created", False),
    "harvest's scan": (lambda s: s.query_log_scan(), "ix_query_log_created", False),
    "harvest's texts": (
        lambda s: s.query_log_details(["alpha-3", "Zeta-1"]),
        "query_log_query",
        True,
    ),
    "a logged query": (lambda s: s.query_log_entry("alpha-3"), "query_log_query", True),
}


@pytest.mark.parametrize("name", list(HOT_READS))
def test_the_hot_reads_use_their_indexes(store: Store, name: str) -> None:
    read, index, ordered = HOT_READS[name]
    plan = _plan(store, lambda: read(store))
    if store._engine.dialect.name == "sqlite":
        assert index in plan or "autoindex_query_log" in plan, plan
        assert "SCAN feedback_events\n" not in plan + "\n" and "SCAN query_log\n" not in plan
        if ordered:
            assert "TEMP B-TREE" not in plan, plan
        else:  # only the ties within one instant are sorted
            assert "TEMP B-TREE FOR ORDER BY" not in plan, plan
    else:
        assert index in plan, plan
        assert "Seq Scan" not in plan, plan
        if ordered:
            assert "Sort" not in plan, plan


def test_feedback_counts_read_the_kind_index_alone(db_url: str) -> None:
    with open_store(db_url) as store:
        plan = _plan(store, store.feedback_counts)
    assert "ix_feedback_events_kind" in plan, plan
    if db_url.startswith("sqlite"):
        assert "COVERING INDEX" in plan, plan
    else:
        assert "Seq Scan" not in plan, plan
