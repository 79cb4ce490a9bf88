"""The judging pool in a real headless Chromium: two runs of two builtin systems recorded
by `recallbench run --store --out`, the dashboard started with `--pool A --pool B
--dataset` on the same dataset, pooled pairs labelled from the keyboard in the pool's
order, /pool's progress moving with them (and free of serious accessibility violations),
and `recallbench labels export` carrying the labels with their provenance.

Needs Debian's chromium and Playwright (see tests/headless_browser.py); screenshots go to
.cache/screenshots/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from axe import violations
from headless_browser import SCREENSHOTS, launched_browser
from recallbench.datasets import DEFAULT_DATASET, load_dataset
from recallbench.serve._pool import Pool, read_pooled_runs
from recallbench.store import open_store
from served_dashboard import serving

LABELS = 6


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launched_browser()


def _cli(tmp_path: Path, *args: str) -> str:
    env = {**os.environ, "RECALLBENCH_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-m", "recallbench", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def shot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"serve-pool-{name}.png"), full_page=True)


def showing(page: Any) -> tuple[str, str]:
    pair = page.locator("#pair")
    return pair.get_attribute("data-query"), pair.get_attribute("data-doc")


def test_label_the_pool_of_two_runs(browser: Any, tmp_path: Path) -> None:
    store_url = f"sqlite:///{tmp_path / 'store.db'}"
    for system, out in (("builtin-lexical", "lexical"), ("builtin-hybrid", "hybrid")):
        said = _cli(
            tmp_path, "run", "--system", system, "--store", store_url, "--out", str(tmp_path / out)
        )
        assert "recorded run #" in said
    dataset = load_dataset(DEFAULT_DATASET)
    with open_store(store_url) as store:
        ids = [run.id for run in store.runs()]
        assert len(ids) == 2
        # the queue offers the pool before the dataset's own (already judged) pairs
        pool = Pool(dataset, read_pooled_runs(store, ids, dataset), depth=10)
    expected = [entry.key for entry in pool.entries[:LABELS]]
    pooled = len(pool.entries)
    both = [e for e in pool.entries[:LABELS] if len(e.ranks) == 2]
    assert both, "the first pairs of the depth order are returned by both runs"

    options = ["--dataset", DEFAULT_DATASET, "--pool", str(ids[0]), "--pool", str(ids[1])]
    with serving(tmp_path, store_url, "tester", *options) as url:
        origin = url.split("/?")[0]
        # bypass_csp: the dashboard allows its own scripts only, and axe is injected
        context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(url)

        page.goto(origin + "/pool")
        assert page.locator("#pool-count").inner_text() == f"0 of {pooled} pooled pairs"
        assert page.locator("#pool-runs tbody tr").count() == 2
        assert page.locator("#pool-depths tbody tr").count() == 10
        assert violations(page) == []
        shot(page, "empty")

        page.goto(origin + "/annotate")
        labelled: dict[tuple[str, str], int] = {}
        origins = []
        while len(labelled) < LABELS:
            pair = showing(page)
            origins.append(page.locator("#progress").inner_text())
            grade = len(labelled) % 4
            labelled[pair] = grade
            if len(labelled) == 2:
                shot(page, "annotate")
            with page.expect_navigation():
                page.keyboard.press(str(grade))
            page.wait_for_selector("main[data-view=annotate]")
        assert list(labelled) == expected  # the pool's order, unjudged pairs only
        assert all("from the pool of run" in said for said in origins), origins
        named = " ".join(origins)
        assert f"#{ids[0]}" in named and f"#{ids[1]}" in named
        assert any(f"pool of runs #{ids[0]}, #{ids[1]} (rank 1)" in said for said in origins)

        page.goto(origin + "/pool")
        assert page.locator("#pool-count").inner_text() == f"{LABELS} of {pooled} pooled pairs"
        assert page.locator("#pool-progress").get_attribute("value") == str(LABELS)
        in_run = [sum(1 for e in pool.entries[:LABELS] if run in e.ranks) for run in ids]
        for run, count in zip(ids, in_run, strict=True):
            row = page.locator(f"#pool-runs tr[data-run='{run}'] td")
            assert row.nth(3).inner_text() == str(count)
        at_one = sum(1 for e in pool.entries[:LABELS] if e.rank == 1)
        assert page.locator("#pool-depths tr[data-rank='1'] td").nth(2).inner_text() == str(at_one)
        assert violations(page) == []
        shot(page, "progress")
        assert errors == []
        context.close()

    out = tmp_path / "labelled.json"
    said = _cli(
        tmp_path,
        *["labels", "export", "--dataset", DEFAULT_DATASET, "--store", store_url],
        *["--out", str(out)],
    )
    assert f"{LABELS} manual labels ({LABELS} new" in said
    data = json.loads(out.read_text(encoding="utf-8"))
    for (query, doc), grade in labelled.items():
        assert data["qrels"][query][doc] == grade
        assert data["label_sources"][query][doc]["source"] == "manual"
        assert data["label_sources"][query][doc]["by"] == "tester"
    sources = sum(len(by_doc) for by_doc in data["label_sources"].values())
    assert sources == LABELS  # the authors' labels stay theirs, without a source entry
