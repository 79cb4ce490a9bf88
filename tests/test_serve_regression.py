"""Debugging a regression on the dashboard, through Starlette's TestClient: two runs recorded
as `recallbench run --out DIR --store URL` records them (their folders as source), one
query side by side with grades, rank moves and the relevant memories each run missed;
what changed at the top of the comparison; a folder that is gone; '–' with its reason for
a measure no query scored; the run page's intervals."""

from __future__ import annotations

import html
import re
import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from recallbench.report import read_report
from recallbench.report._what_changed import what_changed
from recallbench.serve import Dashboard
from recallbench.serve._auth import COOKIE
from recallbench.serve._regression import moves
from recallbench.store import open_store
from test_serve_seed import reports, seed, seed_folders

TOKEN = "regression-token"
BASE = "http://127.0.0.1:8772"


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, list[int]]:
    """(store URL, the runs' parent folder, the two folder runs' ids)."""
    root = tmp_path_factory.mktemp("regression")
    url = f"sqlite:///{root / 'store.db'}"
    seed(url)
    return url, root / "runs", seed_folders(url, root / "runs")


@pytest.fixture
def web(folders: tuple[str, Path, list[int]]) -> Iterator[TestClient]:
    with open_store(folders[0]) as store:
        yield client(store)


def client(store: Any, **options: Any) -> TestClient:
    opened = TestClient(Dashboard(store, TOKEN, **options).app, base_url=BASE)
    opened.cookies.set(COOKIE, TOKEN)
    return opened


def text(page: str) -> str:
    """The page's words, tags dropped and spaces collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_rank_moves() -> None:
    found, dropped = moves(["a", "b", "c", "d"], ["c", "a", "e", "b"])
    assert found == {"c": "↑2", "a": "↓1", "e": "new", "b": "↓2"}
    assert dropped == ["d"]
    assert moves([], ["x"]) == ({"x": "new"}, [])


def test_one_query_side_by_side(web: TestClient, folders: tuple[str, Path, list[int]]) -> None:
    _, root, (first, second) = folders
    a, b = read_report(root / "first"), read_report(root / "second")
    # a query where the second run lost a relevant memory from its first 20
    query = next(
        q
        for q, other in zip(a.queries, b.queries, strict=True)
        if set(q.relevant) - set(other.returned) and set(q.relevant) & set(q.returned)
    )
    other = next(q for q in b.queries if q.id == query.id)
    page = web.get(f"/compare/query?a={first}&b={second}&q={query.id}")
    assert page.status_code == 200
    words = text(page.text)
    assert query.text in words and f"Run #{first}" in words and f"Run #{second}" in words
    missed = sorted(set(query.relevant) - set(other.returned))
    section = page.text.split(f'id="side-{second}"')[1]
    for doc in missed:
        assert f"<strong>{doc}</strong>" in section.split("Relevant memories missed")[1]
    ranked = re.findall(r'<span class="rank">(\d+)</span>', section)
    assert ranked == [str(i) for i in range(1, min(20, len(other.returned)) + 1)]
    expected, dropped = moves(query.returned[:20], other.returned[:20])
    shown = re.findall(r'class="move[^"]*">([^<]*)</span>', section)
    assert [m for m in shown if m] == [
        expected[d] for d in other.returned[:20] if expected[d] != "="
    ]
    first_side = page.text.split(f'id="side-{first}"')[1].split(f'id="side-{second}"')[0]
    assert first_side.count("dropped</span>") == len(dropped)
    assert "graded by the reports" in words.lower() or "Graded by the reports" in words
    # one run's query: the same list, without moves
    single = web.get(f"/runs/{second}/query?q={query.id}")
    assert single.status_code == 200 and "↑" not in single.text


def test_grades_from_the_dataset_with_texts(folders: tuple[str, Path, list[int]]) -> None:
    from recallbench.datasets import load_dataset

    url, _, (first, second) = folders
    dataset = load_dataset("agent-memory-sample")
    query = dataset.queries[0]
    with open_store(url) as store:
        page = client(store, dataset=dataset).get(
            f"/compare/query?a={first}&b={second}&q={query.id}"
        )
    words = text(page.text)
    assert "the dataset's judgments" in words
    doc = next(iter(dataset.qrels[query.id]))
    texts = {d.id: d.text for d in dataset.documents}
    assert texts[doc][:40] in words


def test_what_changed_tops_the_comparison(
    web: TestClient, folders: tuple[str, Path, list[int]]
) -> None:
    _, root, (first, second) = folders
    a, b = read_report(root / "first"), read_report(root / "second")
    expected = what_changed(
        {q.id: q.values.get("ndcg@10") for q in a.queries},
        {q.id: q.values.get("ndcg@10") for q in b.queries},
        {q.id: [q.category] if q.category else [] for q in a.queries},
    )
    page = web.get(f"/compare?a={first}&b={second}").text
    assert page.index('id="what-changed"') < page.index('class="paired"')
    words = text(page)
    assert f"{len(expected.worse)} quer" in words and f"{len(expected.better)} better" in words
    listed = re.findall(r'<li><a href="/compare/query\?[^"]*q=([^"]+)" data-panel>', page)
    assert listed == [c.query_id for c in expected.worse[:10]]
    rows = re.findall(
        r"<tr><td>([^<]+)</td><td class=\"num\">(\d+)</td>",
        page.split('id="by-category"')[1].split("</table>")[0],
    )
    assert [(name, int(n)) for name, n in rows] == [
        (c.category, c.compared) for c in expected.categories
    ]
    # the per-query table carries what its filters and sort use
    assert 'id="filter-category"' in page and 'id="filter-intent"' in page
    assert 'data-direction="worse"' in page and 'data-category="' in page
    assert re.search(r'data-delta="-0\.\d+"', page)
    assert 'aria-sort="none"' in page and 'class="sort"' in page
    assert "/compare/full?a=" in page
    recall = what_changed(
        {q.id: q.values.get("recall@10") for q in a.queries},
        {q.id: q.values.get("recall@10") for q in b.queries},
        {},
    )
    chosen = text(web.get(f"/compare?a={first}&b={second}&m=recall@10").text)
    assert "What changed on recall@10" in chosen
    assert f"{len(recall.worse)} quer" in chosen and f"{len(recall.better)} better" in chosen


def test_a_folder_that_is_gone(folders: tuple[str, Path, list[int]], tmp_path: Path) -> None:
    url, root, (first, second) = folders
    copy = tmp_path / "store.db"
    shutil.copy(url.removeprefix("sqlite:///"), copy)
    with open_store(f"sqlite:///{copy}") as store:
        source = store.get(second).source
        assert source is not None and Path(source) == (root / "second").resolve()
        moved = Path(source).with_name("second-moved")
        Path(source).rename(moved)
        try:
            web = client(store)
            compared = text(web.get(f"/compare?a={first}&b={second}").text)
            assert f"run #{second}'s folder {source} is gone (moved or deleted)" in compared
            full = web.get(f"/compare/full?a={first}&b={second}")
            assert full.status_code == 404 and "is gone" in full.text
            detail = web.get(f"/compare/query?a={first}&b={second}&q=q001")
            assert detail.status_code == 200 and "is gone" in detail.text
            assert f"Run #{first}" in text(detail.text)  # the other run's side still shows
            seeded = web.get("/compare?a=1&b=2").text  # runs recorded from Python: no folder
            assert "has no recorded folder" in seeded
        finally:
            moved.rename(source)


def test_full_comparison_from_run_folders(
    web: TestClient, folders: tuple[str, Path, list[int]]
) -> None:
    _, _, (first, second) = folders
    page = web.get(f"/compare/full?a={first}&b={second}")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src 'self' 'sha256-" in page.headers["content-security-policy"]


def test_no_value_is_a_dash_with_its_reason(tmp_path: Path) -> None:
    """A measure no query scored (n = 0): '–' and why, never nan; intervals otherwise."""
    lexical = reports()["builtin-lexical"]
    queries = [
        q.model_copy(update={"values": {**q.values, "recall@10": None}}) for q in lexical.queries
    ]
    later = lexical.created_at + timedelta(hours=1)
    empty = lexical.model_copy(
        update={
            "queries": queries,
            "means": {**lexical.means, "recall@10": None},
            "created_at": later,
        }
    )
    with open_store(f"sqlite:///{tmp_path / 'store.db'}") as store:
        other = store.record(lexical)
        run = store.record(empty)  # the newest of the series: its means head the trend table
        web = client(store)
        page = web.get(f"/runs/{run.id}").text
        means = text(page.split('id="means"')[1].split("</table>")[0])
        assert "nan" not in page.lower().replace("nano", "")
        assert re.search(r"recall@10 0 – n = 0: no query has a value", means), means
        assert re.search(r"ndcg@10 \d+ 0\.\d{4} 0\.\d{4} – 0\.\d{4}", means), means
        home = web.get("/").text
        assert "nan" not in text(home).lower().split()
        assert "n = 0: no query has a value" in text(home)
        compared = text(web.get(f"/compare?a={run.id}&b={other.id}").text)
        assert "+nan" not in compared and "not tested" in compared
        assert "no query with a relevant judgment" in compared
