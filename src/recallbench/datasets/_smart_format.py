"""The SMART record grammar of the Glasgow test collections (Cranfield, CISI, MED, CACM,
ADI, ...).

A SMART file is a sequence of records. ``.I id`` starts a record; a line holding only a
field marker (a dot and one capital letter) starts a field, whose content is every line up
to the next marker. A field may repeat (CISI gives one ``.A`` per author). A record may lack
any field, ``.W`` included, or have none at all (a trailing ``.I`` with nothing after it).
A marker this module does not know is a located error rather than text silently lost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import JsonValue

from recallbench.core import Problem
from recallbench.datasets._provenance import read_lines

FIELDS = {
    "T": "title",
    "A": "authors",
    "B": "biblio",
    "W": "text",
    "X": "cross_references",
    "K": "keywords",
    "C": "classification",
    "N": "notes",
}
"""SMART field letters and the names they get here (``.I`` starts a record); ``.N``
(CACM: entry date, a query's author) is a free note."""

_MARKER = re.compile(r"\.([A-Z])\s*")


@dataclass
class SmartRecord:
    """One ``.I`` record: its id, the line it starts on and its fields' raw lines."""

    id: str
    line: int
    fields: dict[str, list[list[str]]] = field(default_factory=dict)
    """Field letter -> one list of lines per occurrence of the field."""

    def has(self, letter: str) -> bool:
        return letter in self.fields

    def block(self, letter: str) -> str:
        """The field's lines as written (right-stripped), outer blank lines removed."""
        return "\n".join(
            "\n".join(line.rstrip() for line in lines) for lines in self.fields.get(letter, [])
        ).strip()

    def collapsed(self, letter: str) -> list[str]:
        """Each non-empty occurrence of the field on one line, whitespace collapsed."""
        values = (" ".join(" ".join(lines).split()) for lines in self.fields.get(letter, []))
        return [value for value in values if value]

    def extra_metadata(self, skip: tuple[str, ...]) -> dict[str, JsonValue]:
        """Every field but ``skip`` under its name: authors and cross references as lists
        (one entry per author, one per reference line), the others as one string."""
        metadata: dict[str, JsonValue] = {}
        for letter in self.fields:
            if letter in skip:
                continue
            if letter == "A":
                authors: list[JsonValue] = list(self.collapsed("A"))
                if authors:
                    metadata[FIELDS[letter]] = authors
            elif letter == "X":
                references: list[JsonValue] = [
                    " ".join(line.split())
                    for lines in self.fields["X"]
                    for line in lines
                    if line.strip()
                ]
                metadata[FIELDS[letter]] = references
            elif value := "; ".join(self.collapsed(letter)):
                metadata[FIELDS[letter]] = value
        return metadata


def read_smart(path: Path, problems: list[Problem]) -> list[SmartRecord]:
    """Every record of a SMART file; each malformed line is reported with its ``file:line``."""
    records: list[SmartRecord] = []
    seen: dict[str, int] = {}
    current: SmartRecord | None = None
    lines: list[str] | None = None  # the open field's lines
    for number, line in read_lines(path, problems):
        if line.startswith(".I") and (len(line) == 2 or line[2].isspace()):
            tokens = line.split()
            lines = None
            # a bad or repeated record is still opened, unlisted, so that its fields do
            # not add a problem on every line
            current = SmartRecord(tokens[1] if len(tokens) == 2 else "", number)
            if len(tokens) != 2:
                problems.append(Problem(f"{path}:{number}", "expected '.I <record id>'"))
                continue
            if tokens[1] in seen:
                problems.append(
                    Problem(
                        f"{path}:{number}",
                        f"record {tokens[1]!r} appears twice (first at line {seen[tokens[1]]})",
                    )
                )
                continue
            seen[tokens[1]] = number
            records.append(current)
        elif marker := _MARKER.fullmatch(line):
            letter = marker.group(1)
            if current is None:
                problems.append(Problem(f"{path}:{number}", f"field .{letter} before any .I"))
            elif letter not in FIELDS:
                known = ", ".join(f".{name}" for name in FIELDS)
                problems.append(
                    Problem(f"{path}:{number}", f"unknown field .{letter} (known: .I, {known})")
                )
                lines = []  # its content is not read, nor reported line by line
            else:
                lines = []
                current.fields.setdefault(letter, []).append(lines)
        elif lines is not None:
            lines.append(line)
        elif line.strip() and current is not None:
            problems.append(
                Problem(f"{path}:{number}", "text outside a field (expected a marker such as .W)")
            )
        elif line.strip():
            problems.append(Problem(f"{path}:{number}", "text before the first .I record"))
    if not records and path.exists():
        problems.append(Problem(str(path), "no .I records: not a SMART file"))
    return records
