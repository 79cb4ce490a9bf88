"""What the screenshot scripts share (docs/dashboard_screenshots.py,
docs/report_screenshots.py): where the images go, Debian's Chromium and its flags, and one
screenshot clipped to a height (the committed images stay small)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "images"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def shoot(page: Any, path: Path, width: int, max_height: int) -> None:
    """The page from its top, ``width`` wide and at most ``max_height`` tall, into ``path``."""
    height = page.evaluate("() => document.documentElement.scrollHeight")
    clip = {"x": 0, "y": 0, "width": width, "height": min(height, max_height)}
    page.screenshot(path=str(path), full_page=True, clip=clip)
    print(f"wrote {path.relative_to(OUT.parent.parent)} ({path.stat().st_size // 1024} KB)")
