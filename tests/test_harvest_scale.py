"""``recallbench harvest`` in two passes (the log without its texts, then the texts of the
sampled queries) writes the very dataset a pass over whole rows writes: on SQLite and
PostgreSQL, on data with ties, repeated texts whose memory texts change, texts of memories
not shown (not used: only a search that showed a memory gives its text), feedback on
memories never shown, categories, withheld texts and odd ids."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select

from recallbench.datasets._json_v1 import dump_json_dataset
from recallbench.online import _harvest
from recallbench.online._harvest import harvest, harvest_scan
from recallbench.store import (
    FeedbackEvent,
    Judgment,
    QueryLogEntry,
    Store,
    _query_log_store,
    open_store,
)
from recallbench.store._query_log_store import logged_moment

T0 = datetime(2026, 3, 1, tzinfo=UTC)
KINDS = ("read_after_search", "validated_useful", "validated_not_useful", "reference")
IDS = ("Zeta", "alpha", "éclair", "q-10", "q-9", "Q1", "_x", "z", "Ω", "a b", "ß")
TEXTS = (
    "Where is the budget review?",
    "where is the BUDGET review",
    "what does the user prefer",
    "which flight to Oslo",
    "Which flight to oslo!",
    "???",
    "[withheld sha256:abc123 20 chars]",
    "hotel in Rome",
)


def _data(seed: int, n: int = 400) -> tuple[list[QueryLogEntry], list[FeedbackEvent]]:
    rng = random.Random(seed)
    entries, events = [], []
    for i in range(n):
        docs = rng.sample([f"d{d}" for d in range(14)], rng.randint(0, 5))
        # the text of a memory changes now and then; some shown memories have none; a few
        # rows name a memory they did not show (the SDK keeps any texts it is given)
        texts = {
            d: f"memory {d} v{rng.randrange(3)}" for d in docs if rng.random() < 0.8 and d != "d13"
        }
        if rng.random() < 0.1 and (other := f"d{rng.randrange(17)}") not in docs:
            texts[other] = f"unshown v{rng.randrange(3)}"
        entries.append(
            QueryLogEntry(
                query_id=f"{IDS[i % len(IDS)]}-{i // len(IDS)}",
                text=rng.choice(TEXTS) if rng.random() < 0.5 else f"question {rng.randrange(80)}",
                created_at=T0 + timedelta(seconds=rng.randrange(25)),  # ties
                results=tuple(docs),
                texts=texts,
                intent=rng.choice(("fact", "task", None)),
                category=rng.choice((None, "travel", "work")),
            )
        )
        for _ in range(rng.choice((0, 0, 1, 2))):
            kind = rng.choice(KINDS)
            doc = rng.choice([*docs, "d14", "d15", "d16"])  # also about memories never shown
            events.append(
                FeedbackEvent(entries[-1].query_id, kind, T0, doc)  # type: ignore[arg-type]
            )
    return entries, events


@pytest.fixture(params=[3, 11])
def store(db_url: str, request: pytest.FixtureRequest) -> Iterator[Store]:
    entries, events = _data(request.param)
    rng = random.Random(request.param)
    judgments = [
        Judgment(e.query_id, rng.choice([*e.results, "d15"]), rng.randint(0, 3), "manual", T0)
        for e in entries[::9]
    ]
    with open_store(db_url) as opened:
        opened.log(queries=entries, feedback=events, judgments=judgments)
        yield opened


def _both(store: Store, sample: int | None) -> tuple[str, str]:
    entries = store.query_log()
    ids = [e.query_id for e in entries]
    whole = harvest(entries, store.feedback(ids), store.judgments(ids), sample_per_intent=sample)
    manual = sorted(store.judgments(source="manual"), key=lambda j: (j.query_id, j.doc_id))
    scanned = harvest_scan(
        store.query_log_scan(),
        store.query_log_details,
        store.feedback_stream(),
        manual,
        sample_per_intent=sample,
    )
    assert scanned[1] == whole[1]
    assert whole[0].queries and whole[1].withheld and whole[1].documents_without_text
    return dump_json_dataset(scanned[0]), dump_json_dataset(whole[0])


@pytest.mark.parametrize("sample", [None, 2])
def test_two_passes_write_the_dataset_of_whole_rows(store: Store, sample: int | None) -> None:
    scanned, whole = _both(store, sample)
    assert scanned == whole
    assert "unshown v" not in whole and ('"category": "' in whole or sample)


def test_two_passes_over_a_window_write_the_dataset_of_its_rows(store: Store) -> None:
    since, until = T0 + timedelta(seconds=4), T0 + timedelta(seconds=17)
    entries = store.query_log(since=since, until=until)
    ids = [e.query_id for e in entries]
    whole = harvest(entries, store.feedback(ids), store.judgments(ids))
    manual = sorted(store.judgments(source="manual"), key=lambda j: (j.query_id, j.doc_id))
    scanned = harvest_scan(
        store.query_log_scan(since, until),
        store.query_log_details,
        store.feedback_stream(since, until),
        manual,
    )
    assert scanned[1] == whole[1] and 0 < whole[1].logged < len(store.query_log())
    assert dump_json_dataset(scanned[0]) == dump_json_dataset(whole[0])


@pytest.mark.parametrize("batch", [1, 7, 16])
def test_the_same_dataset_whatever_the_batches(
    store: Store, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rows of one instant (16 on average here) are put in query id order across
    the batches the store reads: in one batch, over two, or over many."""
    monkeypatch.setattr(_query_log_store, "STREAM_BATCH", batch)
    scanned, whole = _both(store, None)
    assert scanned == whole


@pytest.mark.parametrize("batch", [1, 5, 20_000])
def test_the_scan_is_in_the_order_of_the_log(
    store: Store, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_query_log_store, "STREAM_BATCH", batch)
    entries = sorted(store.query_log(), key=lambda e: (e.created_at, e.query_id))
    scanned = list(store.query_log_scan())
    assert [row[0] for row in scanned] == [e.query_id for e in entries]
    assert [logged_moment(row[3]) for row in scanned] == [e.created_at for e in entries]
    assert [row[0] for row in store.query_log_stream()] == [e.query_id for e in entries]
    since, until = T0 + timedelta(seconds=5), T0 + timedelta(seconds=9)
    window = [e.query_id for e in entries if since <= e.created_at < until]
    assert [row[0] for row in store.query_log_scan(since, until)] == window
    assert len(list(store.feedback_stream())) == store.feedback_count()


def test_the_same_dataset_in_another_time_zone(db_url: str) -> None:
    """PostgreSQL sends a log's instants as text in the session's time zone (an offset
    of -03:30 or -02:30 here): the dataset is the one of whole rows all the same, and the
    connection gives datetimes again after the scan."""
    if db_url.startswith("postgresql"):
        from sqlalchemy import create_engine, text

        name = db_url.rsplit("/", 1)[1]
        engine = create_engine(db_url, isolation_level="AUTOCOMMIT")
        with engine.connect() as connection:
            connection.execute(
                text(f"ALTER DATABASE \"{name}\" SET timezone TO 'America/St_Johns'")
            )
        engine.dispose()
    entries, events = _data(5)
    with open_store(db_url) as store:
        store.log(queries=entries, feedback=events)
        scanned, whole = _both(store, None)
        assert scanned == whole
        assert all(isinstance(row[3], str) for row in store.query_log_scan())
        with store._engine.connect() as connection:
            assert isinstance(connection.execute(select(func.now())).scalar_one(), datetime)


def test_the_comparison_fails_when_the_texts_are_not_the_newest(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading each memory's text from the oldest row that has it (a plausible slip)
    changes the dataset, and the test above would say so."""
    real = _harvest._fill_texts

    def oldest_first(chosen, details):  # type: ignore[no-untyped-def]
        for item in chosen:
            item.query_ids.reverse()
            item.row_results.reverse()
        real(chosen, details)
        for item in chosen:
            item.query_ids.reverse()
            item.row_results.reverse()

    monkeypatch.setattr(_harvest, "_fill_texts", oldest_first)
    with pytest.raises(AssertionError):
        test_two_passes_write_the_dataset_of_whole_rows(store, None)


def test_only_the_sampled_queries_rows_are_read(store: Store) -> None:
    asked: list[str] = []

    def details(ids):  # type: ignore[no-untyped-def]
        asked.extend(ids)
        return store.query_log_details(ids)

    manual = sorted(store.judgments(source="manual"), key=lambda j: (j.query_id, j.doc_id))
    _, stats = harvest_scan(
        store.query_log_scan(), details, store.feedback_stream(), manual, sample_per_intent=1
    )
    assert 0 < len(set(asked)) < stats.logged // 4


def test_a_text_counts_only_for_a_memory_its_search_showed() -> None:
    shown = QueryLogEntry("a", "budget", T0, results=("d1",), texts={"d1": "one", "d2": "x"})
    later = QueryLogEntry("b", "budget", T0 + timedelta(1), results=("d2",), texts={"d2": "two"})
    read = [FeedbackEvent(q, "read_after_search", T0, d) for q, d in (("a", "d1"), ("a", "d2"))]
    dataset, _ = harvest([shown], read, [])
    assert [d.id for d in dataset.documents] == ["d1"]  # d2's text came with d1's search
    dataset, _ = harvest([shown, later], read, [])
    assert {d.id: d.text for d in dataset.documents} == {"d1": "one", "d2": "two"}


def test_reading_ahead_passes_errors_on_and_ends_its_thread() -> None:
    def failing() -> Iterator[list[int]]:
        yield [1]
        yield [2]
        raise RuntimeError("connection lost")

    ahead = _query_log_store._read_ahead(failing())
    assert next(ahead) == [1]
    with pytest.raises(RuntimeError, match="connection lost"):
        list(ahead)
    closed: list[bool] = []

    def endless() -> Iterator[list[int]]:
        try:
            while True:
                yield [0]
        finally:
            closed.append(True)

    threads = threading.active_count()
    ahead = _query_log_store._read_ahead(endless())
    assert next(ahead) == [0]
    ahead.close()  # the reader stops early: the thread closes the batches and ends
    assert closed == [True] and threading.active_count() == threads


def test_a_scan_left_early_ends_its_read(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_query_log_store, "STREAM_BATCH", 3)
    threads = threading.active_count()
    rows = store.query_log_scan()
    first = next(rows)
    del rows  # its transaction ends, and on PostgreSQL the thread reading ahead
    assert threading.active_count() == threads
    ids = [row[0] for row in store.query_log_scan()]  # the store reads on as before
    assert len(ids) == store.query_log_count() == 400 and ids[0] == first[0]
