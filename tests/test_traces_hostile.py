"""Trace files that are wrong: truncated JSON, missing and mistyped attributes, unknown
formats, huge files. Every problem names the file, the line and the JSON path; the
command exits 2 and writes nothing (no dataset, no row in the store)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.core import ConfigError
from recallbench.online._traces import TraceFormat, detect_format, read_traces
from recallbench.online._traces_harvest import import_traces
from recallbench.online._traces_model import MAX_PROBLEMS, TraceFileError
from recallbench.store import open_store

TRACE = "0af7651916cd43dd8448eb211c80319c"


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def _span(span_id: str, start: int, attributes: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "traceId": TRACE,
        "spanId": span_id,
        "name": "retrieve",
        "kind": 1,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 1_000_000),
        "attributes": [_attr(key, value) for key, value in attributes.items()],
        **extra,
    }


def _line(*spans: dict[str, Any]) -> str:
    request = {
        "resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": list(spans)}]}]
    }
    return json.dumps(request) + "\n"


RETRIEVER = {
    "openinference.span.kind": "RETRIEVER",
    "input.value": "webhook retry policy",
    "retrieval.documents.0.document.id": "m2",
    "retrieval.documents.0.document.content": "Webhooks retry six times.",
    "retrieval.documents.0.document.score": 0.9,
}
READ = {"openinference.span.kind": "TOOL", "tool.name": "read", "input.value": '{"id": "m2"}'}
GOOD = _line(
    _span("00f067aa0ba902b7", 10**18, RETRIEVER), _span("00f067aa0ba902b8", 10**18 + 5, READ)
)


def _problems(path: Path, trace_format: TraceFormat | None = None) -> list[str]:
    with pytest.raises(TraceFileError) as caught:
        read_traces([path], trace_format)
    assert caught.value.source == str(path)
    return [str(problem) for problem in caught.value.problems]


def test_truncated_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_text(GOOD + GOOD[: len(GOOD) // 2])
    (problem,) = _problems(path)
    assert problem.startswith("line 2: not JSON (truncated?)")


def test_wrong_types_name_the_json_path(tmp_path: Path) -> None:
    path = tmp_path / "types.jsonl"
    bad = {**RETRIEVER, "retrieval.documents.0.document.score": "high"}
    spans = [
        _span("00f067aa0ba902b7", 10**18, bad),
        _span("00f067aa0ba902b9", 10**18, RETRIEVER, startTimeUnixNano="yesterday"),
        {
            **_span("00f067aa0ba902ba", 10**18, RETRIEVER),
            "attributes": [{"key": "x", "value": {"intValue": "1.5"}}],
        },
        {**_span("00f067aa0ba902bb", 10**18, RETRIEVER), "spanId": "not-hex"},
        {**_span("00f067aa0ba902bc", 10**18, {**RETRIEVER, "input.value": 7})},
    ]
    path.write_text(GOOD + _line(*spans))
    at = "line 2: $.resourceSpans[0].scopeSpans[0].spans"
    assert _problems(path) == [
        f"{at}[0].attributes[4].value: retrieval.documents.0.document.score: expected a "
        "finite number, got the string 'high'",
        f'{at}[1].startTimeUnixNano: expected nanoseconds since the epoch, got "yesterday"',
        f"{at}[2].attributes[0].value.intValue: expected an integer (number or decimal "
        'string), got "1.5"',
        f'{at}[3].spanId: expected 16 hex digits, got "not-hex"',
        f"{at}[4].attributes[1].value: expected the query as a string, got the number 7",
    ]


def test_wrong_shapes(tmp_path: Path) -> None:
    path = tmp_path / "shapes.jsonl"
    path.write_text(
        '{"resourceSpans": {}}\n[1]\n'
        '{"resourceSpans": [{"scopeSpans": [{"spans": [5]}]}]}\n'
        + _line(
            {
                **_span("00f067aa0ba902b7", 1, RETRIEVER),
                "attributes": [{"key": "k", "value": {"what": 1}}],
            }
        )
    )
    assert _problems(path) == [
        "line 1: $.resourceSpans: expected an array, got an object",
        "line 2: $: expected an ExportTraceServiceRequest object",
        "line 3: $.resourceSpans[0].scopeSpans[0].spans[0]: expected an object, got a number",
        "line 4: $.resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value: no known value "
        "field (expected one of stringValue, boolValue, intValue, doubleValue, bytesValue, "
        "arrayValue, kvlistValue)",
    ]


def test_missing_query_is_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "missing.jsonl"
    no_query = {k: v for k, v in RETRIEVER.items() if k != "input.value"}
    redacted = {**RETRIEVER, "input.value": "__REDACTED__"}
    no_docs = {"openinference.span.kind": "RETRIEVER", "input.value": "nothing found"}
    path.write_text(
        GOOD
        + _line(
            _span("00f067aa0ba902c1", 10**18, no_query),
            _span("00f067aa0ba902c2", 10**18, redacted),
            _span("00f067aa0ba902c3", 10**18, no_docs),
        )
    )
    log = read_traces([path])
    assert log.files[0].skipped == {
        "query missing (input.value)": 1,
        "query redacted (input.value)": 1,
    }
    assert [entry.results for entry in log.entries] == [("m2",), ()]


def test_problems_are_capped(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    path.write_text("nope\n" * (MAX_PROBLEMS + 7))
    problems = _problems(path, "otlp-json")
    assert len(problems) == MAX_PROBLEMS + 1 and problems[-1] == "... and 7 more problems"


def test_format_detection(tmp_path: Path) -> None:
    otlp, phoenix, other, empty = (tmp_path / name for name in ("a", "b", "c", "d"))
    otlp.write_text(GOOD)
    phoenix.write_text('{"context.span_id": "00f067aa0ba902b7", "name": "x"}\n')
    other.write_text('{"runs": []}\n')
    empty.write_text("\n\n")
    assert detect_format(otlp) == "otlp-json" and detect_format(phoenix) == "phoenix"
    with pytest.raises(ConfigError, match=r"c: line 1 is neither .* give --format otlp-json"):
        detect_format(other)
    with pytest.raises(ConfigError, match="d: empty, cannot tell its format"):
        detect_format(empty)
    result = CliRunner().invoke(
        main, ["harvest", "--traces", str(other), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2 and "--format" in result.output


def test_phoenix_problems(tmp_path: Path) -> None:
    array = tmp_path / "array.json"
    array.write_text('[{"context.span_id": "00f067aa0ba902b7"}]')
    assert "JSON Lines" in _problems(array)[0]
    rows = tmp_path / "rows.jsonl"
    row = {
        "context.span_id": "00f067aa0ba902b7",
        "context.trace_id": TRACE,
        "start_time": "not a time",
        "span_kind": "RETRIEVER",
        "attributes.input.value": "q",
        "attributes.retrieval.documents": [{"document.id": "m1", "document.score": [1]}],
    }
    rows.write_text(
        json.dumps(row) + "\n" + json.dumps({**row, "start_time": 1_700_000_000_000}) + "\n"
    )
    assert _problems(rows) == [
        'line 1: $["start_time"]: expected an ISO 8601 time or epoch milliseconds, '
        "got 'not a time'",
        'line 2: $["attributes.retrieval.documents"][0]["document.score"]: '
        "retrieval.documents.0.document.score: expected a finite number, got an array",
    ]


def test_a_bad_file_writes_nothing(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text(GOOD)
    bad.write_text(GOOD + "{")
    url = f"sqlite:///{tmp_path / 'rb.db'}"
    out = tmp_path / "golden.json"
    runner = CliRunner()
    for args in (
        ["traces", "import", str(good), str(bad), "--store", url],
        ["harvest", "--traces", str(good), "--traces", str(bad), "--out", str(out)],
    ):
        result = runner.invoke(main, args)
        assert result.exit_code == 2, result.output
        assert f"{bad}: 1 problem" in result.output and "line 2: not JSON" in result.output
    assert not out.exists()
    with open_store(url) as store:
        assert store.query_log() == [] and store.feedback() == []
    assert import_traces([good], url, "default").queries == 1


def test_a_huge_file_is_streamed(tmp_path: Path) -> None:
    """~40 MB of spans that are not searches, one search at the end: read in memory
    bounded by a line, not the file."""
    path = tmp_path / "huge.jsonl"
    padding = {"openinference.span.kind": "LLM", "llm.prompt": "x" * 2000}
    line = _line(*(_span(f"{i + 1:016x}", 10**18, padding) for i in range(20)))
    with path.open("w") as out:
        for _ in range(1000):
            out.write(line)
        out.write(GOOD)
    size = path.stat().st_size
    assert size > 40_000_000
    tracemalloc.start()
    try:
        log = read_traces([path])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [entry.text for entry in log.entries] == ["webhook retry policy"]
    assert log.files[0].spans == 20_002
    assert peak < size / 20, f"peak {peak} bytes for a file of {size}"
