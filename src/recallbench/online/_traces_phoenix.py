"""Spans from Arize Phoenix's span export: one span per line (JSON Lines), with the
columns of ``px.Client().get_spans_dataframe()``, as
``df.reset_index().to_json(path, orient="records", lines=True)`` writes them.

Sources followed: Arize Phoenix documentation, "Extract Data from Spans" / "Export Data &
Query Spans" (Phoenix 4 to 12): the columns ``name``, ``span_kind``, ``parent_id``,
``start_time``, ``end_time``, ``status_code``, ``context.span_id``, ``context.trace_id``
and one ``attributes.<key>`` column per OpenInference attribute, list attributes such as
``attributes.retrieval.documents`` holding a list of objects with keys such as
``document.id`` (openinference-semantic-conventions 0.1.42). Also read: rows whose
``context`` and ``attributes`` are nested objects (Phoenix's span JSON, its REST API's
spans), with attributes flat (``"input.value"``) or nested (``{"input": {"value"}}``).

Times are ISO 8601 strings (no zone: UTC) or numbers of milliseconds since the epoch
(pandas' ``to_json`` default). Every row becomes a :class:`Span` with the flat attribute
keys an OpenTelemetry SDK would have set (``retrieval.documents.0.document.id``), so that
one mapping reads both formats.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from recallbench.online._traces_model import (
    AttributeValue,
    Problems,
    Span,
    hex_id,
    json_lines,
    read_span,
)

SPAN_KIND = "openinference.span.kind"


def read_phoenix_jsonl(path: Path, problems: Problems) -> Iterator[Span]:
    """The spans of a Phoenix span export (JSON Lines), in file order; defects go to
    ``problems``."""
    for number, line, row in json_lines(path, problems):
        if number == 1 and line.lstrip().startswith("["):
            problems.add(
                "line 1",
                "a JSON array: write the export as JSON Lines, "
                'df.reset_index().to_json(path, orient="records", lines=True)',
            )
            return
        span = _row_span(row, f"line {number}: $", problems)
        if span is not None:
            yield span


def _row_span(row: object, at: str, problems: Problems) -> Span | None:
    if not isinstance(row, dict):
        problems.add(at, "expected an object (one span per line)")
        return None
    before = problems.count
    nested_context = row.get("context")
    context: dict[str, object] = nested_context if isinstance(nested_context, dict) else {}
    trace_raw = row.get("context.trace_id", context.get("trace_id"))
    span_raw = row.get("context.span_id", context.get("span_id", row.get("span_id")))
    trace_id, span_id = hex_id(trace_raw, 32), hex_id(span_raw, 16)
    if trace_id is None:
        problems.add(f'{at}["context.trace_id"]', f"expected 32 hex digits, got {trace_raw!r}")
    if span_id is None:
        problems.add(f'{at}["context.span_id"]', f"expected 16 hex digits, got {span_raw!r}")
    start = _time(row.get("start_time"), f'{at}["start_time"]', problems, required=True)
    end = _time(row.get("end_time"), f'{at}["end_time"]', problems, required=False)
    attributes: dict[str, AttributeValue] = {}
    paths: dict[str, str] = {}
    nested = row.get("attributes")
    if isinstance(nested, dict):
        _flatten("", nested, '["attributes"]', attributes, paths)
    elif nested is not None:
        problems.add(f'{at}["attributes"]', "expected an object")
    for column, value in row.items():
        if column.startswith("attributes."):
            _flatten(
                column[len("attributes.") :], value, f"[{json.dumps(column)}]", attributes, paths
            )
    kind = row.get("span_kind")
    if isinstance(kind, str) and SPAN_KIND not in attributes:
        attributes[SPAN_KIND] = kind
        paths[SPAN_KIND] = '["span_kind"]'
    name = row.get("name")
    return read_span(problems, before, trace_id, span_id, name, start, end, attributes, at, paths)


def _flatten(
    key: str,
    value: object,
    at: str,
    out: dict[str, AttributeValue],
    paths: dict[str, str],
) -> None:
    """``value`` under ``key`` as flat attributes: objects and lists of objects are
    walked (``retrieval.documents.0.document.id``), other lists kept as tuples; nulls
    (pandas' NaN) left out."""
    if value is None:
        return
    if isinstance(value, dict):
        for name, item in value.items():
            _flatten(
                f"{key}.{name}" if key else str(name), item, f"{at}[{json.dumps(name)}]", out, paths
            )
    elif isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        for index, item in enumerate(value):
            _flatten(f"{key}.{index}", item, f"{at}[{index}]", out, paths)
    elif isinstance(value, list):
        out[key] = tuple(item for item in value if isinstance(item, (str, int, float, bool)))
        paths[key] = at
    elif isinstance(value, (str, int, float, bool)):
        out[key] = value
        paths[key] = at


def _time(value: object, at: str, problems: Problems, *, required: bool) -> int | None:
    """Nanoseconds since the epoch from an ISO string or epoch milliseconds."""
    if value is None:
        if required:
            problems.add(at, "missing")
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value * 1_000_000)
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
            delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
            return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    problems.add(at, f"expected an ISO 8601 time or epoch milliseconds, got {value!r}")
    return None
