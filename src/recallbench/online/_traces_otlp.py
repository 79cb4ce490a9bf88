"""Spans from OTLP JSON files, as the OpenTelemetry Collector's ``file`` exporter writes
them: one ``ExportTraceServiceRequest`` JSON object per line (JSON Lines).

Sources followed:

- OTLP specification 1.5.0, "JSON Protobuf Encoding": the protobuf JSON mapping with
  lowerCamelCase field names, ``traceId`` / ``spanId`` as hex strings (not base64), 64-bit
  integers as decimal strings or numbers, enums as integers.
- opentelemetry-proto 1.5.0, ``opentelemetry/proto/trace/v1/trace.proto`` and
  ``common/v1/common.proto``: ``resourceSpans[] -> scopeSpans[] -> spans[]``; an attribute
  is ``{key, value: AnyValue}`` with ``AnyValue`` one of ``stringValue``, ``boolValue``,
  ``intValue``, ``doubleValue``, ``arrayValue {values: []}``, ``kvlistValue {values: []}``,
  ``bytesValue``. (Collector releases before 0.68 wrote ``instrumentationLibrarySpans``;
  it is read as ``scopeSpans``.)

The file is read one line at a time: a file of any size is streamed, never loaded whole.
Problems are collected with the line and JSON path of each (``Problems``); the caller
raises them once the file is read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from recallbench.online._traces_model import (
    AttributeValue,
    Problems,
    Span,
    hex_id,
    json_lines,
    read_span,
)

_SCALARS = ("stringValue", "boolValue", "intValue", "doubleValue", "bytesValue")


def read_otlp_json(path: Path, problems: Problems) -> Iterator[Span]:
    """The spans of an OTLP JSON Lines file, in file order; defects go to ``problems``."""
    for number, _, request in json_lines(path, problems):
        yield from _request_spans(request, number, problems)


def _request_spans(request: object, line: int, problems: Problems) -> Iterator[Span]:
    at = f"line {line}: $"
    if not isinstance(request, dict):
        problems.add(at, "expected an ExportTraceServiceRequest object")
        return
    for r, resource in _list(request, "resourceSpans", at, problems):
        here = f"{at}.resourceSpans[{r}]"
        key = "scopeSpans" if "scopeSpans" in resource else "instrumentationLibrarySpans"
        for s, scope in _list(resource, key, here, problems):
            for n, span in _list(scope, "spans", f"{here}.{key}[{s}]", problems):
                read = _span(span, f"{here}.{key}[{s}].spans[{n}]", problems)
                if read is not None:
                    yield read


def _list(
    parent: dict[str, Any], key: str, at: str, problems: Problems
) -> Iterator[tuple[int, dict[str, Any]]]:
    """The objects of ``parent[key]`` (absent: none), each with its index."""
    value = parent.get(key)
    if value is None:
        return
    if not isinstance(value, list):
        problems.add(f"{at}.{key}", f"expected an array, got {_kind(value)}")
        return
    for index, item in enumerate(value):
        if isinstance(item, dict):
            yield index, item
        else:
            problems.add(f"{at}.{key}[{index}]", f"expected an object, got {_kind(item)}")


def _span(span: dict[str, Any], at: str, problems: Problems) -> Span | None:
    """A span, or None (its problems added) when its ids or start time are unusable."""
    before = problems.count
    trace_id = hex_id(span.get("traceId"), 32)
    if trace_id is None:
        problems.add(f"{at}.traceId", f"expected 32 hex digits, got {_shown(span.get('traceId'))}")
    span_id = hex_id(span.get("spanId"), 16)
    if span_id is None:
        problems.add(f"{at}.spanId", f"expected 16 hex digits, got {_shown(span.get('spanId'))}")
    start = _nanos(span, "startTimeUnixNano", at, problems, required=True)
    end = _nanos(span, "endTimeUnixNano", at, problems, required=False)
    name = span.get("name", "")
    if not isinstance(name, str):
        problems.add(f"{at}.name", f"expected a string, got {_kind(name)}")
    attributes: dict[str, AttributeValue] = {}
    paths: dict[str, str] = {}
    for index, item in _list(span, "attributes", at, problems):
        key = item.get("key")
        where = f"{at}.attributes[{index}]"
        if not isinstance(key, str) or not key:
            problems.add(f"{where}.key", f"expected a non-empty string, got {_shown(key)}")
            continue
        value = any_value(item.get("value"), f"{where}.value", problems)
        if value is not None:
            attributes[key] = value
            paths[key] = f".attributes[{index}].value"
    return read_span(problems, before, trace_id, span_id, name, start, end, attributes, at, paths)


def any_value(value: object, at: str, problems: Problems) -> AttributeValue | None:
    """An OTLP ``AnyValue`` decoded; None for an empty one or a defect (added)."""
    if value is None or value == {}:
        return None
    if not isinstance(value, dict):
        problems.add(at, f"expected an AnyValue object, got {_kind(value)}")
        return None
    if "arrayValue" in value:
        items = _values(value["arrayValue"], f"{at}.arrayValue", problems)
        decoded = [any_value(item, f"{at}.arrayValue.values[{i}]", problems) for i, item in items]
        return tuple(item for item in decoded if item is not None)
    if "kvlistValue" in value:
        pairs: dict[str, object] = {}
        for i, item in _values(value["kvlistValue"], f"{at}.kvlistValue", problems):
            where = f"{at}.kvlistValue.values[{i}]"
            if not isinstance(item, dict) or not isinstance(item.get("key"), str):
                problems.add(where, "expected {key, value}")
                continue
            decoded_value = any_value(item.get("value"), f"{where}.value", problems)
            if decoded_value is not None:
                pairs[item["key"]] = decoded_value
        return pairs
    for kind in _SCALARS:
        if kind in value:
            return _scalar(kind, value[kind], f"{at}.{kind}", problems)
    problems.add(
        at, f"no known value field (expected one of {', '.join(_SCALARS)}, arrayValue, kvlistValue)"
    )
    return None


def _values(container: object, at: str, problems: Problems) -> list[tuple[int, object]]:
    if container == {} or container is None:
        return []
    values = container.get("values") if isinstance(container, dict) else None
    if not isinstance(values, list):
        problems.add(f"{at}.values", "expected an array")
        return []
    return list(enumerate(values))


def _scalar(kind: str, raw: object, at: str, problems: Problems) -> AttributeValue | None:
    number = raw if isinstance(raw, (int, float)) and not isinstance(raw, bool) else None
    if kind in ("stringValue", "bytesValue") and isinstance(raw, str):
        return raw
    if kind == "boolValue" and isinstance(raw, bool):
        return raw
    if kind == "intValue" and number is not None and float(number).is_integer():
        return int(number)
    if kind == "intValue" and isinstance(raw, str) and raw.lstrip("-").isdigit():
        return int(raw)
    if kind == "doubleValue" and number is not None:
        return float(number)
    if kind == "doubleValue" and raw in ("NaN", "Infinity", "-Infinity"):
        return float(str(raw).replace("Infinity", "inf"))
    problems.add(at, f"expected {_EXPECTED[kind]}, got {_shown(raw)}")
    return None


_EXPECTED = {
    "stringValue": "a string",
    "bytesValue": "a base64 string",
    "boolValue": "true or false",
    "intValue": "an integer (number or decimal string)",
    "doubleValue": "a number",
}


def _nanos(
    span: dict[str, Any], key: str, at: str, problems: Problems, *, required: bool
) -> int | None:
    raw = span.get(key)
    if raw is None:
        if required:
            problems.add(f"{at}.{key}", "missing")
        return None
    value: int | None = None
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    elif (isinstance(raw, str) and raw.isdigit()) or (
        isinstance(raw, float) and math.isfinite(raw)
    ):
        value = int(raw)
    if value is None or value < 0:
        problems.add(f"{at}.{key}", f"expected nanoseconds since the epoch, got {_shown(raw)}")
        return None
    return value


def _kind(value: object) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def _shown(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False) if value is not None else "nothing"
    return text if len(text) <= 60 else f"{text[:57]}..."
