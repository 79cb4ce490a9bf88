"""Make docs/images/report-*.png and comparison-*.png: report.html and comparison.html in
headless Chromium, at 1440 and 390 pixels wide, and report.html in dark mode.

    .venv/bin/python docs/report_screenshots.py

Two builtin systems are run on the bundled sample (`recallbench run --system A --system B`)
and compared (`recallbench compare A B --out ...`); each page is opened from disk as a
reader would open it, and captured: report.html's summary (the at-a-glance block, charts,
every section of report.md), comparison.html's summary and its "What changed" view, and
report.html in the dark colour scheme. Each picture is clipped to at most ``MAX_HEIGHT``
pixels so it stays small. Needs Debian's chromium (/usr/bin/chromium) and Playwright's
Python API.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from screenshots import ARGS, CHROMIUM, OUT
from screenshots import shoot as screenshot

WIDTHS = {1440: 900, 390: 844}
MAX_HEIGHT = {1440: 2000, 390: 2400}
SYSTEMS = ["builtin-lexical", "builtin-hybrid"]
MEASURES = ["ndcg@10", "recall@10", "mrr@10"]
SHOTS = [
    # (file name, page, URL fragment, colour scheme, widths)
    ("report-{width}", "builtin-hybrid/report.html", "", "light", (1440, 390)),
    ("report-dark-{width}", "builtin-hybrid/report.html", "", "dark", (1440,)),
    ("comparison-{width}", "comparison/comparison.html", "", "light", (1440, 390)),
    ("comparison-changes-{width}", "comparison/comparison.html", "#view=changes", "light", (1440,)),
]


def write_pages(folder: Path) -> None:
    """The two reports, their leaderboard and their comparison, as the CLI writes them."""
    recallbench = [sys.executable, "-m", "recallbench"]
    command = [*recallbench, "run", "--out", str(folder), "-q"]
    for system in SYSTEMS:
        command += ["--system", system]
    for measure in MEASURES:
        command += ["-m", measure]
    subprocess.run(command, check=True, capture_output=True, cwd=folder)
    inputs = [str(folder / system) for system in SYSTEMS]
    compare = [*recallbench, "compare", *inputs, "--out", str(folder / "comparison"), "-q"]
    subprocess.run(compare, check=True, capture_output=True, cwd=folder)


def shoot(page: object, name: str, width: int) -> None:
    screenshot(page, OUT / f"{name}.png", width, MAX_HEIGHT[width])


def main() -> None:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        write_pages(folder)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for name, page_path, fragment, scheme, widths in SHOTS:
                for width in widths:
                    context = browser.new_context(
                        viewport={"width": width, "height": WIDTHS[width]}, color_scheme=scheme
                    )
                    page = context.new_page()
                    page.goto((folder / page_path).as_uri() + fragment)
                    page.wait_for_selector("main[data-view]")
                    page.wait_for_timeout(300)  # charts are drawn after the view
                    shoot(page, name.format(width=width), width)
                    context.close()
            browser.close()


if __name__ == "__main__":
    main()
