"""From traces to a golden set: spans written by the real OpenTelemetry SDK and OpenInference
tracer (tests/trace_agent.py), read as the query log, harvested, imported into a real
store (SQLite and PostgreSQL) once whatever the number of imports; the Phoenix export of
the same spans and GenAI-convention spans give the same golden set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from recallbench.cli import main
from recallbench.core import Dataset
from recallbench.datasets._json_v1 import load_json_dataset
from recallbench.online._harvest import NothingHarvestedError
from recallbench.online._traces import read_traces
from recallbench.online._traces_harvest import harvest_traces, import_traces
from recallbench.store import open_store
from trace_agent import MEMORIES, Recorded, otlp_lines, run_agent, write_phoenix

EXPECTED_QRELS = {"h00001": {"m1": 2, "m3": 2, "m5": 1}, "h00002": {"m2": 2, "m4": 1}}


@pytest.fixture(scope="module")
def agent_traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Recorded]:
    path = tmp_path_factory.mktemp("traces") / "otel.jsonl"
    return path, run_agent(path)


def _summary(dataset: Dataset) -> tuple[object, ...]:
    return (
        [query.text for query in dataset.queries],
        {qid: dict(judged) for qid, judged in dataset.qrels.items()},
        {doc.id: doc.text for doc in dataset.documents},
    )


def test_the_file_is_what_the_collector_writes(agent_traces: tuple[Path, Recorded]) -> None:
    path, recorded = agent_traces
    lines = otlp_lines(path)
    span = lines[0]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16  # hex, not base64
    assert {a["key"] for a in span["attributes"]} >= {"openinference.span.kind", "session.id"}
    assert sum(len(rec["resourceSpans"][0]["scopeSpans"][0]["spans"]) for rec in lines) == len(
        recorded.spans
    )


def test_searches_and_reads_become_the_proxy_log(agent_traces: tuple[Path, Recorded]) -> None:
    path, recorded = agent_traces
    log = read_traces([path])
    assert [entry.text for entry in log.entries] == [
        "why no migrations on friday",
        "webhook retry policy",
        "sprint goals",
        "Why no migrations on Friday?",
    ]
    first = log.entries[0]
    assert first.results == ("m1", "m3", "m5") and first.session_id == "s1"
    assert first.texts["m1"] == MEMORIES["m1"] and first.trace_id
    assert first.query_id == f"{first.trace_id}:{recorded.searches[first.text][0]}"
    assert log.origins[first.query_id].scores == (0.6, 0.4, 0.2)
    kinds = [(e.query_id == first.query_id, e.kind, e.doc_id, e.rank) for e in log.feedback]
    assert (True, "read_after_search", "m1", 1) in kinds
    assert (True, "scroll_past", "m3", 2) in kinds  # closed when the next search started
    assert log.files[0].searches == 4 and log.files[0].reads == 3


def test_harvest_from_traces(agent_traces: tuple[Path, Recorded]) -> None:
    path, recorded = agent_traces
    dataset, stats, _ = harvest_traces([path])
    assert stats.logged == 4 and stats.unique == 3 and stats.without_evidence == 1
    assert _summary(dataset)[0] == ["why no migrations on friday", "webhook retry policy"]
    assert dataset.qrels == EXPECTED_QRELS
    query = dataset.queries[0]
    provenance = query.metadata["provenance"]
    assert provenance["m1"] == {  # type: ignore[index]
        "source": "implicit",
        "events": ["read_after_search", "scroll_past"],  # shown again in s2, not read there
        "spans": recorded.reads["m1"],
    }
    assert provenance["m3"]["spans"] == recorded.reads["m3"]  # type: ignore[index,call-overload]
    m5 = {"source": "bootstrapped", "events": ["scroll_past", "scroll_past"], "spans": []}
    assert provenance["m5"] == m5  # type: ignore[index]
    trace = query.metadata["trace"]
    assert trace["source"] == "trace"  # type: ignore[index,call-overload]
    span_ids = [span["span_id"] for span in trace["spans"]]  # type: ignore[index,call-overload,union-attr]
    assert span_ids == [
        *recorded.searches["why no migrations on friday"],
        *recorded.searches["Why no migrations on Friday?"],
    ]
    assert dataset.metadata["harvest"]["source"] == "trace"  # type: ignore[index,call-overload]


def test_the_same_file_twice_counts_once(agent_traces: tuple[Path, Recorded]) -> None:
    path, _ = agent_traces
    once, _, _ = harvest_traces([path])
    twice, _, log = harvest_traces([path, path])
    assert _summary(twice) == _summary(once) and log.duplicates == len(log.entries) + 3


def test_import_is_idempotent_and_harvests_the_same(
    agent_traces: tuple[Path, Recorded], db_url: str
) -> None:
    path, _ = agent_traces
    first = import_traces([path], db_url, "traces")
    assert (first.queries, first.already) == (4, 0) and first.events > 0
    again = import_traces([path], db_url, "traces")
    assert (again.queries, again.already, again.events) == (0, 4, 0)
    with open_store(db_url, "traces") as store:
        assert len(store.query_log()) == 4
        assert len(store.feedback()) == first.events
    out = Path(str(path) + ".from-store.json")
    result = CliRunner().invoke(
        main, ["harvest", "--store", db_url, "--workspace", "traces", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    from_store = load_json_dataset(out)
    from_traces, _, _ = harvest_traces([path])
    assert _summary(from_store) == _summary(from_traces)


def test_phoenix_export_gives_the_same_golden_set(
    agent_traces: tuple[Path, Recorded], tmp_path: Path
) -> None:
    path, recorded = agent_traces
    expected = _summary(harvest_traces([path])[0])
    for date_format in ("epoch", "iso"):
        phoenix = tmp_path / f"phoenix-{date_format}.jsonl"
        write_phoenix(recorded.spans, phoenix, date_format)
        row = json.loads(phoenix.read_text().splitlines()[0])
        assert "context.span_id" in row and "attributes.openinference.span.kind" in row
        dataset, _, log = harvest_traces([phoenix])
        assert log.files[0].format == "phoenix"
        assert _summary(dataset) == expected


def test_gen_ai_retrieval_spans(tmp_path: Path) -> None:
    """GenAI conventions: retrieval and search_memory spans, execute_tool reads; documents
    as a JSON string and as a structured value."""
    from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter

    path = tmp_path / "genai.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(path)))
    tracer = provider.get_tracer("genai")
    docs = [{"id": "m2", "content": MEMORIES["m2"], "score": 0.9}, {"id": "m4", "score": 0.1}]
    with tracer.start_as_current_span("conversation"):
        with tracer.start_as_current_span("retrieval kb") as span:
            span.set_attribute("gen_ai.operation.name", "retrieval")
            span.set_attribute("gen_ai.conversation.id", "c1")
            span.set_attribute("gen_ai.retrieval.query.text", "webhook retry policy")
            span.set_attribute("gen_ai.retrieval.documents", json.dumps(docs))
        with tracer.start_as_current_span("execute_tool read") as span:
            span.set_attribute("gen_ai.operation.name", "execute_tool")
            span.set_attribute("gen_ai.conversation.id", "c1")
            span.set_attribute("gen_ai.tool.name", "read_memory")
            span.set_attribute("gen_ai.tool.call.arguments", json.dumps({"ids": ["m2"]}))
        with tracer.start_as_current_span("search_memory") as span:
            span.set_attribute("gen_ai.operation.name", "search_memory")
            span.set_attribute("gen_ai.conversation.id", "c1")
            span.set_attribute("gen_ai.memory.query.text", "design review day")
            records = [{"id": "m5", "content": MEMORIES["m5"], "score": 0.7}]
            span.set_attribute("gen_ai.memory.records", json.dumps(records))
    provider.shutdown()
    log = read_traces([path])
    assert [(e.text, e.results, e.session_id) for e in log.entries] == [
        ("webhook retry policy", ("m2", "m4"), "c1"),
        ("design review day", ("m5",), "c1"),
    ]
    assert log.entries[0].texts == {"m2": MEMORIES["m2"]}
    dataset, _, _ = harvest_traces([path])
    assert dataset.qrels == {"h00001": {"m2": 2}}  # m4's text was never logged
    with pytest.raises(NothingHarvestedError, match="all 2 sampled queries"):
        harvest_traces([path], read_tools=frozenset({"other"}))  # no tool span is a read


def test_cli_harvest_and_import(agent_traces: tuple[Path, Recorded], tmp_path: Path) -> None:
    path, _ = agent_traces
    out = tmp_path / "golden.json"
    runner = CliRunner()
    result = runner.invoke(main, ["harvest", "--traces", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "4 searches" in result.output and load_json_dataset(out).qrels == EXPECTED_QRELS
    url = f"sqlite:///{tmp_path / 'rb.db'}"
    result = runner.invoke(main, ["traces", "import", str(path), "--store", url])
    assert result.exit_code == 0, result.output
    assert "4 searches logged, 0 already there" in result.output
    result = runner.invoke(main, ["traces", "import", str(path), "--store", url])
    assert "0 searches logged, 4 already there; 0 feedback events" in result.output
    refused = runner.invoke(
        main, ["harvest", "--traces", str(path), "--store", url, "--out", str(out)]
    )
    assert refused.exit_code == 2 and "traces import" in refused.output
    only = runner.invoke(
        main, ["harvest", "--traces", str(path), "--read-tool", "nope", "--out", str(out)]
    )
    assert only.exit_code == 2 and "no query could be harvested" in only.output


def test_the_docs_name_every_attribute_read() -> None:
    """docs/traces.md's mapping table names each attribute the readers use."""
    import re

    from recallbench.online._traces_spans import MAPPING

    page = (Path(__file__).parent.parent / "docs" / "traces.md").read_text()
    names = {
        name
        for _, openinference, gen_ai in MAPPING
        for name in re.findall(r"[a-z_]+(?:\.[a-z_{}]+)+", f"{openinference} {gen_ai}")
    }
    assert names and not {name for name in names if name not in page}
