"""A gate's verdict for people and for CI: terminal table, Markdown for a PR comment (and
GitHub's job summary), JUnit XML for test dashboards."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from recallbench.gates._checks import Status
from recallbench.gates._gate import GateResult
from recallbench.report._escape import md_text

STATUSES: tuple[Status, ...] = ("pass", "warn", "fail")

ICONS = {"pass": "✅", "warn": "⚠️", "fail": "❌"}
STYLES = {"pass": "green", "warn": "yellow", "fail": "bold red"}


def _headline(result: GateResult) -> str:
    counts = ", ".join(f"{result.count(status)} {status}" for status in STATUSES)
    strict = " (strict)" if result.strict else ""
    return f"gate {result.status.upper()}{strict}: {result.system} on {result.dataset} — {counts}"


def render_gate(result: GateResult, console: Console) -> None:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("", no_wrap=True)
    table.add_column("check", no_wrap=True)
    table.add_column("numbers")
    for check in result.checks:
        table.add_row(
            f"[{STYLES[check.status]}]{check.status}[/]",
            escape(check.name),
            escape(check.message),
        )
    console.print(table)
    where = f"baseline: {result.baseline}" if result.baseline else "baseline: none"
    console.print(escape(where), style="dim", highlight=False)
    if result.undecided:
        console.print(escape(_undecided(result)), style="yellow", highlight=False)
    console.print(f"[{STYLES[result.status]}]{escape(_headline(result))}[/]", highlight=False)


def render_gate_markdown(result: GateResult) -> str:
    """A PR comment: the verdict first, then every check."""
    lines = [
        f"## {ICONS[result.status]} recallbench gate: {result.status}",
        "",
        f"**{md_text(result.system)}** on **{md_text(result.dataset)}** "
        f"(sha256 `{result.dataset_sha256[:12]}`), report of {result.report_created}.",
        "",
        f"Baseline: {md_text(result.baseline or 'none')}."
        + (f" Configuration: `{result.config}`." if result.config else ""),
        "",
        "| | check | numbers |",
        "|---|---|---|",
    ]
    for check in result.checks:
        lines.append(f"| {ICONS[check.status]} | {_cell(check.name)} | {_cell(check.message)} |")
    lines += ["", md_text(_headline(result)) + "."]
    if result.undecided:
        lines += ["", md_text(_undecided(result)) + "."]
    return "\n".join(lines) + "\n"


def _undecided(result: GateResult) -> str:
    names = ", ".join(check.name for check in result.undecided)
    return (
        f"Cannot judge {len(result.undecided)} drop(s) ({names}): too few differing queries "
        "for the paired test; `--accept` keeps this run out of the baseline"
    )


def _cell(text: str) -> str:
    """Text safe in a Markdown table cell (names from datasets and systems included)."""
    return md_text(text)


def render_junit(result: GateResult) -> str:
    """JUnit XML: one test case per check; a failing check is a <failure>, a drop that
    could not be judged is <skipped> (dashboards show it apart), another warning is
    reported in <system-out> (dashboards count it as passed)."""
    suites = ET.Element("testsuites", name="recallbench")
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=f"recallbench gate: {result.system} on {result.dataset}",
        tests=str(len(result.checks)),
        failures=str(result.count("fail")),
        errors="0",
        skipped=str(sum(1 for check in result.undecided if check.status == "warn")),
        timestamp=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("system", result.system),
        ("dataset", result.dataset),
        ("dataset_sha256", result.dataset_sha256),
        ("baseline", result.baseline or "none"),
        ("strict", str(result.strict).lower()),
    ):
        ET.SubElement(properties, "property", name=name, value=value)
    for check in result.checks:
        case = ET.SubElement(
            suite, "testcase", classname=f"recallbench.gate.{check.group}", name=check.name
        )
        if check.status == "fail":
            failure = ET.SubElement(case, "failure", message=check.message, type="gate")
            failure.text = check.message
        elif check.undecided:
            ET.SubElement(case, "skipped", message=check.message)
        elif check.status == "warn":
            ET.SubElement(case, "system-out").text = f"warning: {check.message}"
    ET.indent(suites)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
    )
