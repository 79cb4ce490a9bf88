"""`recallbench serve` in a real headless Chromium: the command started as a process on a
free port over a seeded SQLite store, the printed URL opened, every view drawn, 20 pairs
labelled from the keyboard (with a skip and two undos on the way), a blind pairwise choice
made, and the rows checked in the store. Screenshots of every view go to
.cache/screenshots/ (gitignored).

Needs Debian's chromium (/usr/bin/chromium) and Playwright's Python API; without them these
tests skip with one line, unless RECALLBENCH_REQUIRE_BROWSER=1, where they fail."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headless_browser import SCREENSHOTS, launched_browser
from recallbench.serve._preferences import preferences
from recallbench.store import open_store
from served_dashboard import serving
from test_serve_seed import seed

LABELS = 20
START_TIMEOUT = 60.0


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launched_browser()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(the printed URL with its token, the store's URL) of `recallbench serve` over a
    seeded store."""
    store = f"sqlite:///{tmp_path / 'store.db'}"
    seed(store)
    with serving(tmp_path, store, "tester") as url:
        yield url, store


def shot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"serve-{name}.png"), full_page=True)


def showing(page: Any) -> tuple[str, str]:
    pair = page.locator("#pair")
    return pair.get_attribute("data-query"), pair.get_attribute("data-doc")


def press(page: Any, key: str) -> tuple[str, str]:
    """Press ``key`` on the annotation page; the pair the next page shows."""
    with page.expect_navigation():
        page.keyboard.press(key)
    page.wait_for_selector("main[data-view=annotate]")
    note = page.locator(".note")
    assert note.count() == 0 or note.inner_text().startswith("undone"), note.inner_text()
    return showing(page)


def test_label_twenty_pairs_by_keyboard(browser: Any, served: tuple[str, str]) -> None:
    url, store_url = served
    origin = url.split("/?")[0]
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    page = context.new_page()
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))

    page.goto(url)
    assert page.url == origin + "/"  # the token left the address bar for a cookie
    page.wait_for_selector("canvas[data-chart]")
    page.wait_for_timeout(200)
    inked = page.eval_on_selector_all(
        "canvas[data-chart]",
        """canvases => canvases.map(c => {
            const pixels = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            let ink = 0;
            for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 0) ink++;
            return ink;
        })""",
    )
    assert len(inked) == 2 and all(ink > 500 for ink in inked), inked
    shot(page, "runs")

    page.locator("input.pick[value='5']").check()
    page.locator("input.pick[value='4']").check()
    with page.expect_navigation():
        page.click("#compare-picked")
    assert page.url.endswith("/compare?a=4&b=5")
    rows = page.locator("#per-query tbody tr")
    everything = rows.count()
    page.check("#different-only")
    assert 0 < page.locator("#per-query tbody tr:visible").count() <= everything
    assert page.url.endswith("#different")
    shot(page, "compare")

    for path, name, text in [
        ("/runs/4", "run", "Run #4: builtin-lexical"),
        ("/shadow", "shadow", "No shadow test has run"),
        ("/telemetry", "telemetry", "10 logged queries"),
        ("/telemetry/log-00", "query", "read_after_search"),
        ("/feedback", "feedback", "3 events"),
    ]:
        page.goto(origin + path)
        assert text in page.locator("main").inner_text(), path
        shot(page, name)

    page.goto(origin + "/annotate")
    labelled: dict[tuple[str, str], int] = {}
    pair = showing(page)
    undone = False
    while len(labelled) < LABELS:
        grade = len(labelled) % 4
        labelled[pair] = grade
        pair = press(page, str(grade))
        if len(labelled) == LABELS // 2 and not undone:
            undone = True  # once: a skip, its undo, then the undo of the last label
            skipped = pair
            pair = press(page, "s")
            assert pair != skipped
            assert press(page, "u") == skipped
            shot(page, "annotate")
            last = next(reversed(labelled))
            assert press(page, "u") == last
            del labelled[last]
            pair = last
    assert "of 50 pairs left" in page.locator("#progress").inner_text()

    page.goto(origin + "/agreement")
    assert "20 by both" in page.locator("main").inner_text()
    assert page.locator("#confusion tbody tr").count() == 4
    shot(page, "agreement")

    page.goto(origin + "/pairwise")
    item = page.locator("#item").get_attribute("data-item")
    shown = page.locator("input[name=shown]").first.get_attribute("value")
    assert page.locator(".side").count() == 2
    shot(page, "pairwise")
    with page.expect_navigation():
        page.keyboard.press("2")

    assert errors == []
    assert all(r.startswith(origin + "/") for r in requests), requests
    context.close()

    with open_store(store_url) as store:
        rows = store.judgments(source="manual")
        assert len(rows) == LABELS
        assert {(j.query_id, j.doc_id): j.grade for j in rows} == labelled
        assert {j.annotator for j in rows} == {"tester"}
        [choice] = preferences(store._engine, store.workspace)
    assert choice.item == item and choice.annotator == "tester"
    assert choice.preferred == ("second" if shown == "first" else "first")
