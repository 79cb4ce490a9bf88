"""axe-core's accessibility checks in a Playwright page (the browser tests' helper).

`make browser` installs axe-core from npm into .cache/axe; its script is injected into the
page under test and ``axe.run`` checks the page as drawn. Without the script the checks
skip with one line, unless RECALLBENCH_REQUIRE_BROWSER=1 (CI), where they fail."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

AXE = Path(__file__).resolve().parents[1] / ".cache" / "axe" / "node_modules" / "axe-core"
SERIOUS = ("serious", "critical")
COLOURS = ("color-contrast", "link-in-text-block")
"""The rules a colour scheme changes: enough to check a page again in dark mode."""


def _script() -> str:
    path = AXE / "axe.min.js"
    if not path.exists():
        reason = f"needs {path} (make browser)"
        if os.environ.get("RECALLBENCH_REQUIRE_BROWSER") == "1":
            pytest.fail(f"RECALLBENCH_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    return path.read_text(encoding="utf-8")


def violations(
    page: Any, impacts: tuple[str, ...] = SERIOUS, rules: tuple[str, ...] | None = None
) -> list[str]:
    """The page's axe violations of these impacts (of these ``rules`` only, when given),
    one line each: rule, impact, the first few offending elements."""
    if not page.evaluate("() => typeof window.axe === 'object'"):  # once a document
        page.add_script_tag(content=_script())
    options: dict[str, Any] = {"resultTypes": ["violations"]}
    if rules is not None:
        options["runOnly"] = {"type": "rule", "values": list(rules)}
    found = page.evaluate(
        "async (options) => (await axe.run(document, options)).violations", options
    )
    lines = []
    for violation in found:
        if violation.get("impact") not in impacts:
            continue
        targets = ", ".join(str(node["target"]) for node in violation["nodes"][:3])
        lines.append(f"{violation['id']} ({violation['impact']}): {targets}")
    return lines
