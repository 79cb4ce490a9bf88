"""Make docs/images/dashboard-*.png: `recallbench serve` in headless Chromium, at 1440 and 390
pixels wide.

    .venv/bin/python docs/dashboard_screenshots.py

Runs of the builtin systems on the bundled sample are recorded into a fresh store as
`recallbench run --out DIR --store URL` records them (so the dashboard reaches every
query's ranking), the dashboard is started over it with ``--dataset agent-memory-sample``,
and each view is captured: the runs and their trends, one run, a comparison with its
"what changed" summary, one query of it side by side (in the side panel), and the
comparison in dark mode. Each picture is clipped to at most ``MAX_HEIGHT`` pixels so it
stays small. Needs Debian's chromium (/usr/bin/chromium) and Playwright's Python API.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from screenshots import ARGS, CHROMIUM, OUT
from screenshots import shoot as screenshot

WIDTHS = {1440: 900, 390: 844}
MAX_HEIGHT = {1440: 1500, 390: 2200}
RUNS = [
    ("builtin-lexical", "5"),
    ("builtin-lexical", "100"),
    ("builtin-dense", "100"),
]
"""(system, k) of each recorded run, oldest first: a two-run trend, a one-run trend."""
MEASURES = ["ndcg@10", "recall@10", "mrr@10"]


def record(folder: Path, store: str) -> list[int]:
    for index, (system, k) in enumerate(RUNS, start=1):
        command = [sys.executable, "-m", "recallbench", "run", "--system", system, "--k", k]
        command += ["--out", str(folder / f"run{index}"), "--store", store]
        for measure in MEASURES:
            command += ["-m", measure]
        subprocess.run(command, check=True, capture_output=True, cwd=folder)
    return list(range(1, len(RUNS) + 1))


def serve(folder: Path, store: str) -> tuple[subprocess.Popen[bytes], str]:
    log = folder / "serve.log"
    command = [sys.executable, "-m", "recallbench", "serve", "--store", store, "--port", "0"]
    command += ["--dataset", "agent-memory-sample"]
    env = {**os.environ, "RECALLBENCH_HOME": str(folder / "home")}
    env.pop("RECALLBENCH_SERVE_TOKEN", None)
    with log.open("w") as output:
        process = subprocess.Popen(command, stdout=output, stderr=output, env=env, cwd=folder)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"open (http://127\.0\.0\.1:\d+/\?token=\S+)", log.read_text())
        if found:
            return process, found.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.1)
    process.terminate()
    raise SystemExit(f"recallbench serve did not start:\n{log.read_text()}")


def shoot(page: object, name: str, width: int) -> None:
    screenshot(page, OUT / f"dashboard-{name}-{width}.png", width, MAX_HEIGHT[width])


def main() -> None:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        store = f"sqlite:///{folder / 'store.db'}"
        _, second, third = record(folder, store)
        process, url = serve(folder, store)
        origin = url.split("/?")[0]
        compare = f"{origin}/compare?a={second}&b={third}"
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                for width, height in WIDTHS.items():
                    for scheme in ("light", "dark"):
                        context = browser.new_context(
                            viewport={"width": width, "height": height}, color_scheme=scheme
                        )
                        page = context.new_page()
                        page.goto(url)
                        page.wait_for_selector("canvas[data-chart]")
                        page.wait_for_timeout(300)
                        if scheme == "dark":
                            page.goto(compare)
                            shoot(page, "dark", width)
                            context.close()
                            continue
                        shoot(page, "home", width)
                        page.goto(f"{origin}/runs/{third}")
                        shoot(page, "run", width)
                        page.goto(compare)
                        shoot(page, "compare", width)
                        worst = page.locator("#worse-queries a").first
                        worst.click()
                        page.wait_for_selector("#panel:not([hidden]) .sides")
                        page.evaluate("() => window.scrollTo(0, 0)")
                        page.screenshot(
                            path=str(OUT / f"dashboard-query-{width}.png"), full_page=False
                        )
                        print(f"wrote docs/images/dashboard-query-{width}.png")
                        context.close()
                browser.close()
        finally:
            process.terminate()
            process.wait(timeout=15)


if __name__ == "__main__":
    main()
