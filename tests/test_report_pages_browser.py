"""report.html, comparison.html and leaderboard.html as people use them, in headless Chromium:
report.html says everything report.md says; no page is wider than a phone's screen (tables
scroll in their own box); the dark colour scheme is dark and readable; axe-core finds no
serious or critical accessibility violation, light or dark; the tabs and the query rows
work from the keyboard; and a report of 10,000 queries is drawn in under 2 seconds.

Needs Debian's chromium and Playwright, and axe-core (`make browser`) for the accessibility
checks; without them these tests skip with one line, unless RECALLBENCH_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from axe import COLOURS, violations
from headless_browser import launched_browser, recallbench
from recallbench.core import Dataset, Run
from recallbench.core._run import Hit, QueryResult, RunSpec
from recallbench.measures import parse_measures
from recallbench.render import render_markdown, write_outputs
from recallbench.report import build_report

WIDTHS = [(390, 844), (1440, 900)]
LOAD_BUDGET_MS = 2_000
COMPUTED = """colour => {
    const probe = document.createElement('div');
    probe.style.color = colour;
    document.body.append(probe);
    return getComputedStyle(probe).color;
}"""
"""A CSS colour as the browser computes it: rgb(r, g, b)."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launched_browser()


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two systems on the bundled dataset, their leaderboard and comparison, and one report
    with failures, channels, categories and missed memories (``rich/``)."""
    out = tmp_path_factory.mktemp("pages")
    systems = ["--system", "builtin-lexical", "--system", "builtin-hybrid"]
    measures = ["-m", "ndcg@10", "-m", "recall@10", "-m", "mrr@10"]
    recallbench(["run", *systems, *measures, "--out", str(out), "-q"])
    inputs = [str(out / "builtin-lexical"), str(out / "builtin-hybrid")]
    recallbench(["compare", *inputs, "--out", str(out / "comparison"), "-q"])
    dataset, run = rich_run(80)
    report = build_report(dataset, run, parse_measures(["ndcg@10", "recall@10", "mrr@10"]))
    assert report.counts.failed and report.channels is not None and report.breakdowns
    write_outputs(out / "rich", run, report, dataset)
    return out


def rich_run(queries: int, seed: int = 0, categories: int = 4) -> tuple[Dataset, Run]:
    """A dataset and a run with everything report.md can show: categories and intents,
    two retrieval channels, failed queries, and relevant memories not returned."""
    rng = random.Random(seed)
    documents = [{"id": f"m{n}", "text": f"memory {n} about ledgers"} for n in range(queries * 3)]
    dataset = Dataset.model_validate(
        {
            "name": "rich",
            "documents": documents,
            "queries": [
                {
                    "id": f"q{n}",
                    "text": f"question {n}?",
                    "category": f"c{n % categories}",
                    "intent": f"i{n % 3}",
                }
                for n in range(queries)
            ],
            "qrels": {f"q{n}": {f"m{3 * n}": 2, f"m{3 * n + 1}": 1} for n in range(queries)},
        }
    )
    ids = [d["id"] for d in documents]
    results = []
    for n in range(queries):
        if n % 10 == 3:
            results.append(QueryResult(query_id=f"q{n}", error="connection refused"))
            continue
        picked = [f"m{3 * n}"] if rng.random() < 0.6 else []
        picked += rng.sample(ids, 5)
        hits = tuple(
            Hit(
                doc_id=d,
                score=1 - i / 10,
                channels=(("lexical",), ("dense",), ("lexical", "dense"))[i % 3],
            )
            for i, d in enumerate(dict.fromkeys(picked))
        )
        results.append(QueryResult(query_id=f"q{n}", hits=hits, latency_ms=rng.uniform(1, 9)))
    run = Run(spec=RunSpec(system="rich-system", dataset=dataset.ref, k=10), results=tuple(results))
    return dataset, run


def _open(
    browser: Any, path: Path, width: int = 1440, height: int = 900, dark: bool = False
) -> Any:
    context = browser.new_context(
        viewport={"width": width, "height": height}, color_scheme="dark" if dark else "light"
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(path.as_uri())
    page.wait_for_selector("main[data-view]")
    _until(page, "performance.getEntriesByName('recallbench:rendered').length > 0")
    page.errors = errors
    return page


def _until(page: Any, condition: str, timeout_ms: int = 10_000) -> None:
    """Wait for a JavaScript condition (wait_for_function would eval it: the page's
    Content-Security-Policy forbids that)."""
    for _ in range(timeout_ms // 20):
        if page.evaluate(f"() => Boolean({condition})"):
            return
        page.wait_for_timeout(20)
    raise AssertionError(f"never true: {condition}")


def _pages(out: Path) -> list[Path]:
    return [
        out / "builtin-hybrid" / "report.html",
        out / "rich" / "report.html",
        out / "comparison" / "comparison.html",
        out / "leaderboard.html",
    ]


# ---- report.html says what report.md says ----------------------------------------------


def _md_sections(markdown: str) -> tuple[list[str], list[list[str]]]:
    """report.md's section titles (## lines) and the header cells of each of its tables."""
    unescape = lambda text: re.sub(r"\\(.)", r"\1", text).strip()  # noqa: E731
    titles = [unescape(line[3:]) for line in markdown.splitlines() if line.startswith("## ")]
    lines = markdown.splitlines()
    headers = [
        [unescape(cell) for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        for line, after in pairwise(lines)
        if line.startswith("|") and after.startswith("|---")
    ]
    return titles, headers


def test_report_html_has_every_section_and_table_of_report_md(out: Path, browser: Any) -> None:
    from recallbench.report import read_report

    report = read_report(out / "rich" / "report.json")
    titles, headers = _md_sections(render_markdown(report))
    assert {"Summary", "Channels", "By category", "By intent", "Rules", "Measures"} <= set(titles)
    page = _open(browser, out / "rich" / "report.html")
    shown = page.locator("main h2").all_inner_texts()
    for title in titles:
        assert title in shown, (title, shown)
    tables = page.eval_on_selector_all(
        "main table",
        "ts => ts.map(t => [...t.querySelectorAll('thead th')].map(h => h.textContent))",
    )
    for header in headers:
        assert any(set(header) <= set(table) for table in tables), (header, tables)
    # the worst queries with what they missed, and every failure with its error
    worst = page.locator("tr.worst-row").evaluate_all("rows => rows.map(r => r.dataset.id)")
    assert worst == report.worst_queries
    missed = page.locator("tr.worst-row td:last-child").all_inner_texts()
    assert any(text != "none" for text in missed)
    failed = [q.id for q in report.queries if q.status == "failed"]
    assert (
        page.locator("tr.failure-row").evaluate_all("rows => rows.map(r => r.dataset.id)") == failed
    )
    assert "connection refused" in page.inner_text("tr.failure-row >> nth=0")
    glance = page.inner_text("section.glance")
    assert "rich-system" in glance and "failures" in glance and "worst category" in glance
    assert re.search(r"95% CI \[\d\.\d{3}, \d\.\d{3}\]", glance)
    assert "nan" not in page.inner_text("main").lower().split()
    assert page.errors == []


def test_comparison_shows_what_changed(out: Path, browser: Any) -> None:
    page = _open(browser, out / "comparison" / "comparison.html")
    glance = page.inner_text("section.glance")
    assert re.search(r"\d+ worse · \d+ better", glance)
    page.click("[role=tab][data-view=changes]")
    assert page.locator("main h2").first.inner_text().startswith("What changed: builtin-hybrid")
    _until(page, "document.querySelectorAll('canvas').length >= 2")
    titles = page.locator("section.figure h3").all_inner_texts()
    assert any(t.startswith("Δ ndcg@10 per query") for t in titles), titles
    worse = page.locator("tr.changed-row").first
    query = worse.get_attribute("data-id")
    worse.click()
    page.wait_for_selector("#detail")
    assert page.inner_text("#detail h2").startswith(f"{query}:")
    assert page.errors == []


def test_one_point_has_a_sensible_axis(tmp_path: Path, browser: Any) -> None:
    dataset, run = rich_run(20, categories=1)
    report = build_report(dataset, run, parse_measures(["ndcg@10"]))
    write_outputs(tmp_path, run, report, dataset)
    page = _open(browser, tmp_path / "report.html")
    axis = page.evaluate(
        "() => { const c = Chart.getChart(document.querySelector('canvas')); "
        "return [c.data.labels.length, c.scales.y.min, c.scales.y.max]; }"
    )
    assert axis == [1, 0, 1]  # a score in [0, 1] on its whole scale, not 0.993-1.000
    assert page.errors == []


# ---- width, colour scheme, accessibility ---------------------------------------------------


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_no_page_is_wider_than_the_screen(out: Path, browser: Any, width: int, height: int) -> None:
    for path in _pages(out):
        page = _open(browser, path, width, height)
        views = page.locator("nav[role=tablist] [role=tab]").evaluate_all(
            "tabs => tabs.map(t => t.dataset.view)"
        )
        for view in views:
            page.click(f"[role=tab][data-view={view}]")
            page.wait_for_timeout(50)
            scroll, inner = page.evaluate(
                "[document.documentElement.scrollWidth, window.innerWidth]"
            )
            assert scroll <= inner, (path.name, view, width, scroll)
        assert page.errors == []
        page.context.close()


def _luminance(colour: str) -> float:
    values = [int(v) / 255 for v in re.findall(r"\d+", colour)[:3]]
    linear = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in values]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def test_dark_colour_scheme_is_dark_and_readable(out: Path, browser: Any) -> None:
    for path in _pages(out):
        page = _open(browser, path, dark=True)
        style = "getComputedStyle(document.body)"
        background, text = page.evaluate(f"[{style}.backgroundColor, {style}.color]")
        dark, light = _luminance(background), _luminance(text)
        assert dark < 0.05, background
        assert (light + 0.05) / (dark + 0.05) >= 7, (background, text)  # WCAG AAA
        # charts take the scheme's colours: their labels are light on the dark page
        assert _luminance(page.evaluate(COMPUTED, page.evaluate("Chart.defaults.color"))) > 0.3
        assert page.errors == []
        page.context.close()


@pytest.mark.parametrize("dark", [False, True])
def test_no_serious_accessibility_violation(out: Path, browser: Any, dark: bool) -> None:
    """Every rule in light; in dark the rules a colour scheme changes (contrast)."""
    rules = COLOURS if dark else None
    for path in _pages(out):
        page = _open(browser, path, dark=dark)
        views = page.locator("[role=tab]").evaluate_all("tabs => tabs.map(t => t.dataset.view)")
        for view in views:
            page.click(f"[role=tab][data-view={view}]")
            page.wait_for_timeout(50)
            scheme = "dark" if dark else "light"
            assert violations(page, rules=rules) == [], (path.name, view, scheme)
            rows = page.locator("tr[data-id]")
            if view == "queries" and rows.count():  # and a query opened, hits and texts
                rows.first.click()
                page.wait_for_selector("#detail")
                assert violations(page, rules=rules) == [], (path.name, "detail", scheme)
        page.context.close()


# ---- keyboard --------------------------------------------------------------------------------


def test_tabs_and_rows_work_from_the_keyboard(out: Path, browser: Any) -> None:
    page = _open(browser, out / "rich" / "report.html")
    tabs = page.locator("[role=tablist] [role=tab]")
    assert tabs.count() == 3
    assert page.get_attribute("#app", "role") == "tabpanel"
    page.focus("[role=tab][aria-selected=true]")
    page.keyboard.press("ArrowRight")
    assert page.get_attribute("[role=tab][aria-selected=true]", "data-view") == "charts"
    assert page.evaluate("document.activeElement.dataset.view") == "charts"
    page.keyboard.press("End")
    assert page.get_attribute("main", "data-view") == "queries"
    page.keyboard.press("ArrowRight")  # wraps round to the first
    assert page.get_attribute("main", "data-view") == "summary"
    page.keyboard.press("ArrowLeft")
    assert page.get_attribute("main", "data-view") == "queries"
    # filter as you type: no Enter needed
    page.locator("input[name=q]").press_sequentially("q1")
    _until(page, "document.querySelector('#count').textContent.startsWith('11 of')")
    assert page.evaluate("document.activeElement.name") == "q"
    row = page.locator("tr.query-row").first
    row.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#detail")
    assert "query=q1" in page.url
    assert page.evaluate("document.activeElement.dataset.id") == "q1"
    page.keyboard.press(" ")
    page.wait_for_selector("#detail", state="detached")
    assert page.errors == []


# ---- size --------------------------------------------------------------------------------------


def test_ten_thousand_queries_are_drawn_in_under_two_seconds(browser: Any, tmp_path: Path) -> None:
    from test_report_html import _dataset, _run  # the generator of the size test

    dataset = _dataset(10_000, 20_000, 300)
    run = _run(dataset)
    report = build_report(dataset, run, parse_measures(["ndcg@10", "recall@10", "mrr@10"]))
    write_outputs(tmp_path, run, report, dataset)
    timings = []
    for _ in range(2):  # the first open also reads the file from disk
        page = _open(browser, tmp_path / "report.html")
        timings.append(
            page.evaluate(
                """() => {
                const nav = performance.getEntriesByType('navigation')[0];
                const drawn = performance.getEntriesByName('recallbench:rendered')[0].startTime;
                return [nav.loadEventEnd, drawn];
            }"""
            )
        )
        assert page.locator("canvas").count() >= 2
        page.click("[role=tab][data-view=queries]")
        assert page.locator("tr.query-row").count() == 100
        assert page.errors == []
        page.context.close()
    load, drawn = min(timings, key=lambda t: max(t))
    print(f"10,000 queries: load event {load:.0f} ms, first view drawn {drawn:.0f} ms")
    assert max(load, drawn) < LOAD_BUDGET_MS, timings
