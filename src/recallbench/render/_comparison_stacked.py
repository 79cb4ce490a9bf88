"""A comparison in a narrow terminal: stacked blocks instead of tables too wide to read.

A table wider than the terminal has its cells cut to ``0.…``; below that width each row
becomes a block: its name and verdict on one line, then ``name value`` pairs filled into
lines that fit. Breakdowns become one narrow table per measure.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

UNBOUNDED = 100_000
"""A width no table reaches: a table's natural width is measured within it."""
INDENT = "  "
SEPARATOR = " · "


def fits(console: Console, table: Table) -> bool:
    """Whether ``table`` shows whole (no cell cut) at the console's width."""
    unbounded = console.options.update_width(UNBOUNDED)
    return Measurement.get(console, unbounded, table).maximum <= console.width


def filled(pairs: Sequence[tuple[str, str]], width: int) -> list[str]:
    """``name value`` pairs joined into lines no wider than ``width`` (a pair wider than
    that is a line of its own), each indented."""
    lines: list[str] = []
    line = ""
    for name, value in pairs:
        item = f"{name} {value}"
        joined = f"{line}{SEPARATOR}{item}" if line else item
        if line and len(INDENT) + len(joined) > width:
            lines.append(INDENT + line)
            line = item
        else:
            line = joined
    if line:
        lines.append(INDENT + line)
    return lines


def print_blocks(
    console: Console,
    title: str,
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    styles: Sequence[str] = (),
    verdicts: Sequence[str] = (),
) -> None:
    """One block per row: its first cell (and verdict) as a heading, the rest as pairs."""
    console.print(f"[bold]{escape(title)}[/bold]", highlight=False)
    for index, cells in enumerate(rows):
        verdict = verdicts[index] if index < len(verdicts) else ""
        style = styles[index] if index < len(styles) else ""
        heading = cells[0] + (f": {verdict}" if verdict else "")
        console.print(escape(heading), style=style or None, highlight=False)
        pairs = list(zip(header[1:], cells[1:], strict=True))
        for line in filled(pairs, console.width):
            console.print(escape(line), highlight=False, soft_wrap=True)


def print_group_tables(
    console: Console, title: str, header: Sequence[str], rows: Sequence[Sequence[str]]
) -> None:
    """A breakdown (``group, system, n, Δ m...``) as one narrow table per measure."""
    for column, name in enumerate(header[3:], start=3):
        table = Table(title=f"{title}: {name}", box=box.SIMPLE_HEAD, pad_edge=False)
        for index, label in enumerate(("group", "system", "n", "Δ")):
            table.add_column(label, justify="left" if index < 2 else "right")
        for row in rows:
            table.add_row(*map(escape, (row[0], row[1], row[2], row[column])))
        console.print(table)
