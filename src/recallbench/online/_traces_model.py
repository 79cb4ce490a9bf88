"""What the trace readers hand on: spans with flat attributes, located in their file, and
the problems found on the way.

A :class:`Span` is the common shape of an OTLP JSON span and of a row of Phoenix's span
export: its attributes are flat (``retrieval.documents.0.document.id``, as OpenTelemetry
SDKs set them and OTLP carries them), values as JSON gives them (``str``, ``int``,
``float``, ``bool``; an OTLP ``arrayValue`` is a tuple, a ``kvlistValue`` a dict). Each
attribute keeps the JSON path it was read from, so an error names the file, the line and
the path.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

from recallbench.core._errors import DatasetError, Problem

AttributeValue = Union[str, int, float, bool, tuple["AttributeValue", ...], dict[str, object]]  # noqa: UP007 (a recursive alias needs Union at run time)
"""An attribute's value, decoded from OTLP JSON's ``AnyValue`` or a Phoenix column."""

MAX_PROBLEMS = 50
"""Problems listed per file; past that they are counted (a hostile file must not make an
error message of millions of lines)."""


class TraceFileError(DatasetError):
    """A trace file is malformed: every problem found, by line and JSON path."""


@dataclass(frozen=True, slots=True)
class Span:
    """One span, whichever file format it came from."""

    trace_id: str
    """32 lower-case hex digits."""
    span_id: str
    """16 lower-case hex digits."""
    name: str
    start_ns: int
    """Start, nanoseconds since the Unix epoch (UTC)."""
    end_ns: int | None
    attributes: Mapping[str, AttributeValue]
    where: str
    """``line N: $.path.to.span`` in its file."""
    paths: Mapping[str, str] = field(default_factory=dict)
    """Attribute key -> the JSON path of its value, relative to the span."""

    def locate(self, key: str) -> str:
        """Where attribute ``key`` is in the file."""
        return f"{self.where}{self.paths.get(key, f'[{key!r}]')}"


class Problems:
    """The problems of one file: the first :data:`MAX_PROBLEMS` kept, the others counted."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.kept: list[Problem] = []
        self.more = 0

    def add(self, location: str, message: str) -> None:
        if len(self.kept) < MAX_PROBLEMS:
            self.kept.append(Problem(location, message))
        else:
            self.more += 1

    def __bool__(self) -> bool:
        return bool(self.kept)

    @property
    def count(self) -> int:
        """Every problem added, kept or only counted."""
        return len(self.kept) + self.more

    def raise_if_any(self) -> None:
        """:class:`TraceFileError` with every problem, if there is one."""
        if not self.kept:
            return
        listed = list(self.kept)
        if self.more:
            listed.append(Problem("", f"... and {self.more} more problems"))
        raise TraceFileError(self.source, listed)


def hex_id(value: object, digits: int) -> str | None:
    """``value`` as a trace or span id (``digits`` hex digits, lower-cased), or None when it
    is not one (OTLP JSON writes ids as hex, not base64: the OTLP specification, "JSON
    Protobuf Encoding"). An all-zero id is invalid (W3C Trace Context)."""
    if not isinstance(value, str) or len(value) != digits:
        return None
    lowered = value.lower()
    if any(c not in "0123456789abcdef" for c in lowered) or not lowered.strip("0"):
        return None
    return lowered


def json_lines(path: Path, problems: Problems) -> Iterator[tuple[int, str, object]]:
    """Each non-blank line of a JSON Lines file with its number and its parsed value, one
    line at a time (a file of any size is streamed); a line that is not JSON, or text that
    is not UTF-8 (which ends the reading), goes to ``problems`` with its line."""
    with path.open("r", encoding="utf-8", errors="strict") as lines:
        number = 0
        while True:
            try:
                line = lines.readline()
            except UnicodeDecodeError as error:
                problems.add(f"line {number + 1}", f"not UTF-8 text ({error.reason})")
                return
            if not line:
                return
            number += 1
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as error:
                cut = " (truncated?)" if not line.endswith("\n") else ""
                problems.add(
                    f"line {number}", f"not JSON{cut}: {error.msg} at column {error.colno}"
                )
                continue
            yield number, line, value


def read_span(
    problems: Problems,
    before: int,
    trace_id: str | None,
    span_id: str | None,
    name: object,
    start: int | None,
    end: int | None,
    attributes: Mapping[str, AttributeValue],
    at: str,
    paths: Mapping[str, str],
) -> Span | None:
    """The span a reader took apart, or None when reading it added a problem (``before``:
    :attr:`Problems.count` when it began) or it lacks its ids or its start."""
    if problems.count > before or not (trace_id and span_id) or start is None:
        return None
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        name=name if isinstance(name, str) else "",
        start_ns=start,
        end_ns=end,
        attributes=attributes,
        where=at,
        paths=paths,
    )
