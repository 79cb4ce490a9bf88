"""Debian's Chromium driven by Playwright, for the tests of the HTML pages and the dashboard.

Playwright's own browser download is never used (its CDN is unreachable here): the system
Chromium is launched with the flags that keep it off the network. Without Chromium or
Playwright the tests skip with one line, unless RECALLBENCH_REQUIRE_BROWSER=1 (CI), where
they fail."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[1] / ".cache" / "screenshots"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",  # else its connections are refused, many at a time
    "--disable-component-update",
    "--disable-sync",
]


def missing() -> str | None:
    """Why the browser cannot run here, or None."""
    if not CHROMIUM.exists():
        return f"needs {CHROMIUM} (apt-get install -y chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "needs playwright (pip install playwright; no browser download)"
    return None


def launched_browser() -> Iterator[Any]:
    """A headless Chromium for a module's tests (use as a fixture body)."""
    reason = missing()
    if reason is not None:
        if os.environ.get("RECALLBENCH_REQUIRE_BROWSER") == "1":
            pytest.fail(f"RECALLBENCH_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield browser
        browser.close()


def recallbench(arguments: list[str]) -> str:
    """The command in a process of its own (its output): in this one, the browser of
    another module's tests may hold the running event loop that asyncio.run refuses."""
    done = subprocess.run(
        [sys.executable, "-m", "recallbench", *arguments], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout
