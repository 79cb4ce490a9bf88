"""report.html, comparison.html and leaderboard.html in a real headless Chromium, opened from
disk (file://): charts drawn, drill-down, filters, the URL hash, no console error and no
request but file://. Screenshots of every view go to .cache/screenshots/ (gitignored).

Needs Debian's chromium (/usr/bin/chromium) and Playwright's Python API; without them these
tests skip with one line, unless RECALLBENCH_REQUIRE_BROWSER=1, where they fail."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from headless_browser import SCREENSHOTS, launched_browser, recallbench
from recallbench.core import Dataset, Run
from recallbench.core._run import Hit, QueryResult, RunSpec
from recallbench.measures import parse_measures
from recallbench.render import write_outputs
from recallbench.report import build_report

MEASURES = ["-m", "ndcg@10", "-m", "recall@10", "-m", "mrr@10"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launched_browser()


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two systems on the bundled dataset (reports and a leaderboard), and their comparison."""
    out = tmp_path_factory.mktemp("html")
    systems = ["--system", "builtin-lexical", "--system", "builtin-hybrid"]
    recallbench(["run", *systems, *MEASURES, "--out", str(out), "-q"])
    inputs = [str(out / "builtin-lexical"), str(out / "builtin-hybrid")]
    compare = ["compare", *inputs, "--out", str(out / "comparison"), "-q"]
    recallbench(compare)
    return out


@dataclass
class Opened:
    """A page and everything it did: requests, console errors, uncaught exceptions."""

    page: Any
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def check_clean(self) -> None:
        assert self.errors == []
        assert self.requests, "the page was not loaded"
        assert all(url.startswith("file://") for url in self.requests), self.requests

    def shot(self, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


@pytest.fixture
def open_page(browser: Any) -> Iterator[Any]:
    contexts = []

    def opener(path: Path, fragment: str = "") -> Opened:
        context = browser.new_context(viewport={"width": 1360, "height": 900})
        contexts.append(context)
        page = context.new_page()
        opened = Opened(page)
        page.on("request", lambda request: opened.requests.append(request.url))
        page.on(
            "console",
            lambda message: opened.errors.append(message.text) if message.type == "error" else None,
        )
        page.on("pageerror", lambda error: opened.errors.append(str(error)))
        page.goto(path.as_uri() + fragment)
        page.wait_for_selector("main[data-view]")
        return opened

    yield opener
    for context in contexts:
        context.close()


def _drawn_charts(page: Any, least: int) -> None:
    """At least ``least`` canvases with a size and ink on them (Chart.js drew into them)."""
    page.wait_for_function(f"document.querySelectorAll('canvas').length >= {least}")
    page.wait_for_timeout(100)  # charts are created after the view is in the document
    sizes = page.eval_on_selector_all(
        "canvas",
        """canvases => canvases.map(c => {
            const box = c.getBoundingClientRect();
            const pixels = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            let ink = 0;
            for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 0) ink++;
            return [box.width, box.height, ink];
        })""",
    )
    assert len(sizes) >= least
    for width, height, ink in sizes:
        assert width > 100 and height > 100 and ink > 500, sizes


def _rows(page: Any, selector: str) -> int:
    return int(page.locator(selector).count())


def test_report_summary_shows_means_with_intervals(out: Path, open_page: Any) -> None:
    opened = open_page(out / "builtin-hybrid" / "report.html")
    page = opened.page
    assert page.title().startswith("builtin-hybrid on agent-memory-sample")
    text = page.inner_text("main")
    assert "95% CI" in text and "ndcg@10" in text and "BCa" in text
    _drawn_charts(page, 1)
    opened.shot("report-summary")
    opened.check_clean()


def test_report_charts_draw_breakdowns_distribution_and_latency(out: Path, open_page: Any) -> None:
    opened = open_page(out / "builtin-hybrid" / "report.html")
    page = opened.page
    page.click("button[data-view=charts]")
    titles = page.locator("section.figure h3").all_inner_texts()
    assert any("by category" in t for t in titles)
    assert any("by intent" in t for t in titles)
    assert any("Distribution of ndcg@10" in t for t in titles)
    assert "Latency (ms)" in titles
    _drawn_charts(page, 4)
    page.select_option("select[name=measure]", "mrr@10")
    assert "#view=charts&measure=mrr%4010" in page.url
    _drawn_charts(page, 4)
    opened.shot("report-charts")
    opened.check_clean()


def test_report_drill_down_shows_hits_grades_texts_and_missed_gold(
    out: Path, open_page: Any
) -> None:
    opened = open_page(out / "builtin-lexical" / "report.html", "#view=queries")
    page = opened.page
    assert _rows(page, "tr.query-row") == 100  # a page of rows, then "next"
    page.select_option("select[name=sort]", "worst")
    page.locator("tr.query-row").first.click()
    detail = page.locator("#detail")
    detail.wait_for()
    assert _rows(page, "#detail tr.hit") > 0
    assert _rows(page, "#detail .memory") > 0  # memory texts, from the dataset
    assert "Gold memories missed" in detail.inner_text()
    opened.shot("report-drill-down")
    # the open query and the filters live in the URL: a reload shows the same thing
    query = page.locator("tr.query-row.selected td").first.inner_text()
    assert f"query={query}" in page.url
    page.reload()
    page.wait_for_selector("#detail")
    assert page.locator("#detail h2").inner_text().startswith(query)
    page.fill("input[name=q]", "zzz-no-such-query")
    page.press("input[name=q]", "Enter")
    assert _rows(page, "tr.query-row") == 0
    opened.check_clean()


def test_comparison_different_only_and_rank_classes(out: Path, open_page: Any) -> None:
    opened = open_page(out / "comparison" / "comparison.html")
    page = opened.page
    text = page.inner_text("main")
    assert "builtin-lexical" in text and "incompatible" in text
    _drawn_charts(page, 2)  # differences with intervals, rank-change classes
    opened.shot("comparison-summary")
    page.click("button[data-view=queries]")
    total = _rows(page, "tr.compare-row")
    page.check("input[name=different]")
    different = _rows(page, "tr.compare-row")
    assert 0 < different < total
    assert "different=1" in page.url
    page.select_option("select[name=rank]", "identical")
    identical = _rows(page, "tr.compare-row")
    assert identical < different
    page.select_option("select[name=rank]", "")
    page.locator("tr.compare-row").first.click()
    page.wait_for_selector("#detail")
    assert page.locator("#detail .drill > section").count() == 2  # baseline and system
    assert _rows(page, "#detail tr.hit") > 0
    opened.shot("comparison-queries")
    page.click("button[data-view=groups]")
    _drawn_charts(page, 1)
    opened.shot("comparison-groups")
    opened.check_clean()


def test_leaderboard_shows_intervals_and_links_reports(out: Path, open_page: Any) -> None:
    opened = open_page(out / "leaderboard.html")
    page = opened.page
    assert _rows(page, "section.board tbody tr") == 2
    assert "[95% CI]" in page.inner_text("main")
    _drawn_charts(page, 1)
    opened.shot("leaderboard")
    page.click("button[data-view=categories]")
    _drawn_charts(page, 1)
    opened.shot("leaderboard-categories")
    page.click("button[data-view=leaderboard]")
    page.click("section.board a >> nth=0")
    page.wait_for_selector("main[data-view=summary]")
    assert page.url.endswith("/report.html")
    _drawn_charts(page, 1)
    opened.check_clean()


def test_hostile_texts_show_as_text_and_run_nothing(tmp_path: Path, open_page: Any) -> None:
    from test_report_html import HOSTILE  # the same texts as the escaping unit test

    dataset = Dataset.model_validate(
        {
            "name": "hostile",
            "documents": [{"id": "m1", "text": HOSTILE}, {"id": "m2", "text": "<b>bold</b>"}],
            "queries": [{"id": "q1", "text": "<img src=x onerror=window.pwned=2>"}],
            "qrels": {"q1": {"m1": 1}},
        }
    )
    run = Run(
        spec=RunSpec(system="hostile", dataset=dataset.ref, k=2),
        results=(QueryResult(query_id="q1", hits=(Hit(doc_id="m2"), Hit(doc_id="m1"))),),
    )
    write_outputs(tmp_path, run, build_report(dataset, run, parse_measures(["mrr@10"])), dataset)
    opened = open_page(tmp_path / "report.html", "#view=queries&query=q1")
    page = opened.page
    page.wait_for_selector("#detail")
    assert page.evaluate("window.pwned") is None
    assert page.locator("#detail img, #detail b").count() == 0
    memories = page.locator("#detail .memory").all_inner_texts()
    assert any("</script><script>window.pwned = 1</script>" in text for text in memories)
    assert any("<b>bold</b>" in text for text in memories)
    opened.check_clean()


def test_two_thousand_queries_open_and_drill_down(tmp_path: Path, open_page: Any) -> None:
    from test_report_html import _dataset, _run  # the generator of the size test

    dataset = _dataset(2_000, 6_000, 2_000)
    run = _run(dataset)
    report = build_report(dataset, run, parse_measures(["ndcg@10", "recall@10", "mrr@10"]))
    write_outputs(tmp_path, run, report, dataset)
    opened = open_page(tmp_path / "report.html", "#view=queries&sort=worst")
    page = opened.page
    assert _rows(page, "tr.query-row") == 100  # a page at a time
    assert "2000 of 2000 queries" in page.inner_text("#count")
    first = page.locator("tr.query-row").first.get_attribute("data-id")
    page.click("button[name=next]")
    assert "page=2" in page.url and "rows 101–200 of 2000" in page.inner_text("main")
    assert page.locator("tr.query-row").first.get_attribute("data-id") != first
    page.locator("tr.query-row").nth(3).click()
    page.wait_for_selector("#detail tr.hit")
    assert _rows(page, "#detail tr.hit") == 20
    page.click("button[data-view=charts]")
    _drawn_charts(page, 4)
    opened.shot("report-2000-queries-charts")
    opened.check_clean()
