"""The dashboard laid out, accessible and debuggable in a real headless Chromium:
`recallbench serve --dataset agent-memory-sample` over a seeded store with two runs
recorded from their output folders. Every page the application declares (its GET routes,
parameters filled in, so a page added later is covered) at 390×844 and 1440×900: no
horizontal overflow, no Content-Security-Policy violation, no script error, and no serious
or critical axe-core violation. Then a keyboard-only pass through a query list and its side
panel, the comparison's sort by Δ and filters, the query log filtered as you type, dark
mode, and the axis of a one-run trend chart.

Needs Debian's chromium and Playwright (tests/headless_browser.py); axe-core from
`make browser` (tests/axe.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.routing import Route

from axe import COLOURS, violations
from headless_browser import launched_browser
from recallbench.serve import Dashboard
from recallbench.store import open_store
from served_dashboard import serving
from test_serve_seed import seed, seed_folders

SIZES = ((390, 844), (1440, 900))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launched_browser()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str], list[int]]]:
    """(the dashboard's origin with the token's URL, every page to visit, the two folder
    runs' ids)."""
    root = tmp_path_factory.mktemp("layout")
    store = f"sqlite:///{root / 'store.db'}"
    seed(store)
    first, second = seed_folders(store, root / "runs")
    with open_store(store) as opened:
        pages = page_paths(Dashboard(opened, "x"), first, second)
    with serving(root, store, "tester", "--dataset", "agent-memory-sample") as url:
        yield url, pages, [first, second]


def page_paths(dashboard: Dashboard, first: int, second: int) -> list[str]:
    """A URL of every GET page route, its path parameters and the query strings the known
    pages need filled in."""
    queries = {
        "/compare": f"?a={first}&b={second}",
        "/compare/query": f"?a={first}&b={second}&q=q002",
        "/compare/full": f"?a={first}&b={second}",
        "/runs/{run_id:int}/query": "?q=q002",
    }
    paths = []
    for route in dashboard.starlette.routes:
        if not isinstance(route, Route) or "GET" not in (route.methods or ()):
            continue
        if route.path.startswith("/static/"):
            continue
        path = route.path.replace("{run_id:int}", str(second))
        path = re.sub(r"\{[^}]+\}", "log-00", path)
        paths.append(path + queries.get(route.path, ""))
    paths.append("/compare")  # the comparison's empty form too
    return paths


def opened(browser: Any, url: str, **options: Any) -> tuple[Any, Any, list[str]]:
    """A context holding the token's cookie, its page and the list its errors and CSP
    violations go to."""
    context = browser.new_context(**options)
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(url)
    return context, page, problems


def origin(url: str) -> str:
    return url.split("/?")[0]


def settle(page: Any) -> None:
    page.wait_for_load_state("load")
    page.wait_for_timeout(100)


def test_no_page_is_wider_than_the_window(
    browser: Any, served: tuple[str, list[str], list[int]]
) -> None:
    url, paths, _ = served
    assert len(paths) >= 14, paths
    wide: list[str] = []
    for width, height in SIZES:
        context, page, problems = opened(browser, url, viewport={"width": width, "height": height})
        page.add_init_script(
            "window.__csp = []; document.addEventListener('securitypolicyviolation',"
            " e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"
        )
        for path in paths:
            response = page.goto(origin(url) + path)
            assert response is not None and response.status < 500, (path, response)
            headers = response.headers
            assert "frame-ancestors 'none'" in headers["content-security-policy"], path
            assert headers["x-frame-options"] == "DENY", path
            assert headers["x-content-type-options"] == "nosniff", path
            settle(page)
            sizes = page.evaluate(
                "() => [document.documentElement.scrollWidth, window.innerWidth, window.__csp]"
            )
            if sizes[0] > sizes[1]:
                wide.append(f"{path} at {width}: {sizes[0] - sizes[1]} px too wide")
            assert sizes[2] == [], (path, sizes[2])
        assert problems == [], problems
        context.close()
    assert wide == []


def test_every_page_passes_axe(browser: Any, served: tuple[str, list[str], list[int]]) -> None:
    """Serious and critical axe-core violations: every rule light and wide, the rules a
    colour scheme changes (contrast) dark and narrow (axe is injected into the page: this
    context bypasses the CSP, checked above)."""
    url, paths, _ = served
    found: list[str] = []
    for scheme, (width, height) in [("light", SIZES[1]), ("dark", SIZES[0])]:
        context, page, _ = opened(
            browser,
            url,
            viewport={"width": width, "height": height},
            bypass_csp=True,
            color_scheme=scheme,
        )
        for path in paths:
            if path.startswith("/compare/full"):
                continue  # the report page of `recallbench compare`: tested with the reports
            page.goto(origin(url) + path)
            settle(page)
            rules = COLOURS if scheme == "dark" else None
            found += [
                f"{path} ({scheme}, {width}): {line}" for line in violations(page, rules=rules)
            ]
        context.close()
    assert found == []


def test_a_query_list_by_keyboard_only(
    browser: Any, served: tuple[str, list[str], list[int]]
) -> None:
    url, _, (first, second) = served
    context, page, problems = opened(browser, url, viewport={"width": 1440, "height": 900})
    page.goto(origin(url) + f"/compare?a={first}&b={second}")
    settle(page)
    for _ in range(120):  # Tab until the focus reaches the query list
        page.keyboard.press("Tab")
        if page.evaluate("() => !!document.activeElement.closest('#per-query tbody tr')"):
            break
    row_id = "() => document.activeElement.querySelector('a').textContent"
    assert page.evaluate("() => document.activeElement.matches('#per-query tbody tr')")
    assert page.evaluate("() => document.activeElement.rowIndex") == 1
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("k")
    assert page.evaluate("() => document.activeElement.rowIndex") == 2
    for _ in range(30):
        page.keyboard.press("j")
    chosen = page.evaluate(row_id)
    place = "() => Math.round(document.activeElement.getBoundingClientRect().top)"
    assert page.evaluate("() => window.scrollY") > 0  # the list scrolled with the focus
    before = page.evaluate(place)
    page.keyboard.press("Enter")
    page.wait_for_selector("#panel:not([hidden]) .sides")
    assert page.locator("#panel-title").inner_text() != "Loading…"
    assert page.locator("#panel .side").count() == 2
    assert page.locator("#panel ol.ranked li").count() > 0
    # the list kept its place: the row where it was on the screen
    assert (
        page.evaluate(
            "() => Math.round(document.querySelector('tr.open').getBoundingClientRect().top)"
        )
        == before
    )
    page.locator("#per-query tbody tr.open").focus()  # back to the list: j shows the next
    page.keyboard.press("j")
    following = page.evaluate(row_id)
    page.wait_for_function(
        "q => document.querySelector('#panel #query-sides')?.dataset.query === q", arg=following
    )
    assert page.evaluate(row_id) == following  # the focus stayed on the list
    page.keyboard.press("k")
    page.wait_for_function(
        "q => document.querySelector('#panel #query-sides')?.dataset.query === q", arg=chosen
    )
    panel_box = page.locator("#panel").bounding_box()
    assert panel_box is not None and panel_box["x"] > 600  # beside the list, not over it
    page.keyboard.press("Escape")
    assert page.locator("#panel").is_hidden()
    assert page.evaluate(row_id) == chosen  # focus back on the row
    assert page.evaluate(place) == before
    # the same on a narrow screen: a drawer over the list, the list's place kept
    page.set_viewport_size({"width": 390, "height": 844})
    page.evaluate("() => document.activeElement.scrollIntoView({block: 'center'})")
    before = page.evaluate(place)
    page.keyboard.press("Enter")
    page.wait_for_selector("#panel:not([hidden]) .sides")
    box = page.locator("#panel").bounding_box()
    assert box is not None and box["x"] == 0 and box["width"] == 390
    assert page.evaluate("() => document.querySelector('main').inert")  # a modal drawer
    assert page.get_attribute("#panel", "aria-modal") == "true"
    page.keyboard.press("Escape")
    assert not page.evaluate("() => document.querySelector('main').inert")
    assert page.evaluate(row_id) == chosen
    assert page.evaluate(place) == before
    assert problems == []
    context.close()


def test_sort_by_delta_and_filters(browser: Any, served: tuple[str, list[str], list[int]]) -> None:
    url, _, (first, second) = served
    context, page, problems = opened(browser, url, viewport={"width": 1440, "height": 900})
    page.goto(origin(url) + f"/compare?a={first}&b={second}")
    settle(page)
    deltas = """() => Array.from(document.querySelectorAll('#per-query tbody tr'))
        .map(r => r.cells[3].dataset.delta).filter(d => d !== '').map(Number)"""
    header = page.locator("#per-query thead button.sort").first
    header.focus()
    page.keyboard.press("Enter")  # by keyboard: ascending, worst first
    values = page.evaluate(deltas)
    assert values == sorted(values) and values[0] < 0
    assert page.locator("#per-query thead th").nth(3).get_attribute("aria-sort") == "ascending"
    header.click()
    values = page.evaluate(deltas)
    assert values == sorted(values, reverse=True)
    category = page.locator("#filter-category option").nth(1).inner_text()
    page.select_option("#filter-category", category)
    shown = page.locator("#per-query tbody tr:visible")
    assert 0 < shown.count() < page.locator("#per-query tbody tr").count()
    assert set(
        page.eval_on_selector_all(
            "#per-query tbody tr:not(.filtered-out)", "rows => rows.map(r => r.dataset.category)"
        )
    ) == {category}
    page.select_option("#filter-direction", "worse")
    directions = page.eval_on_selector_all(
        "#per-query tbody tr:not(.filtered-out)", "rows => rows.map(r => r.dataset.direction)"
    )
    assert set(directions) <= {"worse"}
    assert (
        page.locator("#shown-count").inner_text()
        == f"{len(directions)} of " + str(page.locator("#per-query tbody tr").count()) + " queries"
    )
    page.select_option("#filter-direction", "")
    page.fill("#filter-threshold", "0.2")
    big = page.eval_on_selector_all(
        "#per-query tbody tr:not(.filtered-out)", "rows => rows.map(r => r.cells[3].dataset.delta)"
    )
    assert big and all(abs(float(d)) >= 0.2 for d in big)
    page.reload()  # the filters are kept in the URL
    settle(page)
    assert page.input_value("#filter-category") == category
    assert page.input_value("#filter-threshold") == "0.2"
    assert problems == []
    context.close()


def test_the_query_log_filters_as_you_type(
    browser: Any, served: tuple[str, list[str], list[int]]
) -> None:
    url, _, _ = served
    context, page, problems = opened(browser, url, viewport={"width": 1440, "height": 900})
    page.goto(origin(url) + "/telemetry")
    rows = page.locator("table.log tbody tr")
    everything = rows.count()
    word = page.locator("table.log tbody tr a").first.inner_text().split()[0]
    page.locator("#log-q").press_sequentially(word, delay=20)
    page.wait_for_function(
        f"() => document.querySelectorAll('table.log tbody tr').length < {everything}"
    )
    assert page.url.endswith("?q=" + word)  # no Enter, no page load: the URL follows
    assert all(
        word.lower() in t.lower() for t in page.locator("table.log tbody tr a").all_inner_texts()
    )
    page.locator("table.log tbody tr").first.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#panel:not([hidden]) ol.results")
    page.goto(origin(url) + "/feedback")  # a kind applies as soon as it is picked
    with page.expect_navigation():
        page.select_option("select[name=kind]", "re_search")
    assert page.url.endswith("?kind=re_search")
    assert page.locator("table.list tbody tr").count() == 1
    assert problems == []
    context.close()


def test_dark_mode_and_a_one_run_chart(
    browser: Any, served: tuple[str, list[str], list[int]]
) -> None:
    url, _, _ = served
    context, page, problems = opened(
        browser, url, viewport={"width": 1440, "height": 900}, color_scheme="dark"
    )
    page.wait_for_selector("canvas[data-chart]")
    settle(page)
    background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    red, green, blue = (int(v) for v in re.findall(r"\d+", background)[:3])
    assert max(red, green, blue) < 60, background
    ink = page.evaluate("() => getComputedStyle(document.body).color")
    assert min(int(v) for v in re.findall(r"\d+", ink)[:3]) > 180, ink
    axes = page.eval_on_selector_all(
        "canvas[data-chart]",
        """canvases => canvases.map(c => {
            const chart = Chart.getChart(c);
            return [chart.data.labels.length, chart.scales.y.min, chart.scales.y.max,
                    chart.options.scales.x.grid.color];
        })""",
    )
    single = [a for a in axes if a[0] == 1]
    assert single and all(a[1] == 0 and a[2] == 1 for a in single), axes
    assert all(a[3] != "rgba(0,0,0,0.1)" for a in axes)  # grid lines from the dark palette
    assert problems == []
    context.close()
