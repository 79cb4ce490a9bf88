"""The dashboard's query log page on a log larger than it reads at once: a capped count
says "more than", a search reads the newest queries a page at a time and says how many;
paging older covers every row, and every match, exactly once; a log within the limits
shows what a full count and a full search show."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from recallbench.serve import Dashboard, _telemetry_views
from recallbench.serve._auth import COOKIE
from recallbench.store import QueryLogEntry, Store, open_store

T0 = datetime(2026, 3, 1, tzinfo=UTC)
WORDS = ("Budget review", "flight to Oslo", "budget of the hotel", "coffee")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    entries = [  # ties: four queries an instant
        QueryLogEntry(f"q{i:03d}", f"{WORDS[i % 4]} {i}", T0 + timedelta(seconds=i // 4))
        for i in range(230)
    ]
    with open_store(f"sqlite:///{tmp_path / 's.db'}") as opened:
        opened.log(queries=entries)
        yield opened


def _newest(store: Store) -> list[str]:
    return [e.query_id for e in store.query_log()][::-1]


def _all_pages(store: Store, search: str) -> tuple[list[str], list[dict[str, object]]]:
    seen: list[str] = []
    pages = []
    for page in range(100):
        data = _telemetry_views.telemetry(store, page, search)
        pages.append(data)
        seen += [e["id"] for e in data["entries"]]
        if page + 1 >= data["pages"]:
            break
    return seen, pages


@pytest.mark.parametrize("limits", [(10_000, 50_000), (60, 70), (7, 13)])
def test_older_pages_cover_the_log_and_the_matches_once(
    store: Store, monkeypatch: pytest.MonkeyPatch, limits: tuple[int, int]
) -> None:
    monkeypatch.setattr(_telemetry_views, "COUNT_CAP", limits[0])
    monkeypatch.setattr(_telemetry_views, "SEARCH_ROWS", limits[1])
    newest = _newest(store)
    seen, pages = _all_pages(store, "")
    assert seen == newest
    assert pages[-1]["more"] is False and pages[-1]["total"] == len(newest)
    assert pages[0]["more"] is (limits[0] < len(newest))
    texts = dict(zip(newest, [e.text for e in store.query_log()][::-1], strict=True))
    for search in ("budget", "OSLO flight", "nothing like it"):
        words = search.casefold().split()
        wanted = [q for q in newest if all(w in texts[q].casefold() for w in words)]
        found, pages = _all_pages(store, search)
        assert found == wanted
        assert pages[-1]["more"] is False and pages[-1]["total"] == len(wanted)
        if limits[1] < len(newest):  # a search reads the newest rows only, and says so
            assert pages[0]["more"] is True and pages[0]["searched"] == limits[1]


def test_a_small_log_shows_the_full_count_and_search(store: Store) -> None:
    data = _telemetry_views.telemetry(store, 1, "budget")
    assert data["total"] == 115 and data["pages"] == 3 and data["more"] is False
    assert _telemetry_views.telemetry(store, 0, "")["total"] == 230


def test_the_page_says_what_it_counted_and_searched(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_telemetry_views, "COUNT_CAP", 100)
    monkeypatch.setattr(_telemetry_views, "SEARCH_ROWS", 40)
    web = TestClient(Dashboard(store, "t").app, base_url="http://127.0.0.1")
    web.cookies.set(COOKIE, "t")
    first = web.get("/telemetry").text
    assert "more than 100 logged queries" in first and "page 1\n" in first
    assert 'href="?page=1&amp;q="' in first
    found = web.get("/telemetry?q=coffee").text
    assert "10 of the newest 40 logged queries matching" in found
    assert "older (searches further)" in found and 'href="?page=1&amp;q=coffee"' in found
    none = web.get("/telemetry?q=zebra").text
    assert "No match among the newest 40 logged queries." in none
    assert "No logged query matches." in web.get("/telemetry?q=zebra&page=5").text
