"""A small agent instrumented with the real OpenTelemetry SDK and OpenInference tracer: a
lexical retriever over a few memories, searches (RETRIEVER spans) and reads of returned
memories (TOOL spans), exported in OTLP JSON by the SDK's JSON file exporter
(opentelemetry-exporter-otlp-json-file: one ExportTraceServiceRequest per line, hex ids,
as the Collector's file exporter writes). Also the same spans as Phoenix's span export.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openinference.instrumentation import (
    OITracer,
    TraceConfig,
    get_retriever_attributes,
    using_session,
)
from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

MEMORIES = {
    "m1": "Never run migrations on Friday: the INC-0042 rollback took the weekend.",
    "m2": "Webhooks retry six times over 33 hours, then give up.",
    "m3": "The ledger moved to PostgreSQL after INC-0112; migrations run on Mondays.",
    "m4": "Sprint goals for the week: the webhook dashboard and the ledger export.",
    "m5": "The design review is on Thursdays at ten.",
}


def retrieve(query: str, k: int = 3) -> list[tuple[str, float]]:
    """Memories by word overlap with the query, best first (ties by id)."""
    words = set(query.lower().replace("?", "").split())
    scored = [
        (doc, len(words & set(text.lower().replace(":", "").split())) / len(words))
        for doc, text in MEMORIES.items()
    ]
    return sorted((hit for hit in scored if hit[1] > 0), key=lambda h: (-h[1], h[0]))[:k]


@dataclass
class Recorded:
    """What the agent did: the ids of its spans, to check provenance against."""

    searches: dict[str, list[str]] = field(default_factory=dict)
    """Query text -> span ids of its RETRIEVER spans."""
    reads: dict[str, list[str]] = field(default_factory=dict)
    """Memory id -> span ids of the TOOL spans that read it."""
    spans: Sequence[ReadableSpan] = ()


class Agent:
    """Searches and reads, each a span of the current session's trace."""

    def __init__(self, tracer: OITracer, recorded: Recorded) -> None:
        self.tracer, self.recorded = tracer, recorded

    def search(self, query: str) -> list[str]:
        with self.tracer.start_as_current_span(
            "memory_search", openinference_span_kind="retriever"
        ) as span:
            hits = retrieve(query)
            span.set_input(query)
            documents: list[Any] = [
                {"id": doc, "content": MEMORIES[doc], "score": score, "metadata": {"k": 3}}
                for doc, score in hits
            ]
            span.set_attributes(get_retriever_attributes(documents=documents))
            span_id = f"{span.get_span_context().span_id:016x}"
        self.recorded.searches.setdefault(query, []).append(span_id)
        time.sleep(0.002)
        return [doc for doc, _ in hits]

    def read(self, doc: str) -> str:
        with self.tracer.start_as_current_span(
            "memory_read", openinference_span_kind="tool"
        ) as span:
            span.set_tool(name="memory_read", description="Read one memory", parameters={})
            span.set_input({"id": doc})
            span.set_output(MEMORIES[doc])
            span_id = f"{span.get_span_context().span_id:016x}"
        self.recorded.reads.setdefault(doc, []).append(span_id)
        time.sleep(0.002)
        return MEMORIES[doc]


def run_agent(path: Path) -> Recorded:
    """Two sessions of searches and reads, exported to ``path`` in OTLP JSON.

    Session s1, two traces: "why no migrations on friday" (shown m1 m3 m5, m1 read), then
    "webhook retry policy" (m2 m4, m2 read) and "sprint goals" (m4, nothing read: no
    evidence). Session s2: "Why no migrations on Friday?" again (pooled with the first),
    m3 read.
    """
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(path)))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    recorded = Recorded()
    agent = Agent(OITracer(provider.get_tracer("trace_agent"), config=TraceConfig()), recorded)
    with using_session("s1"):
        with agent.tracer.start_as_current_span("turn", openinference_span_kind="agent"):
            assert "m1" in agent.search("why no migrations on friday")
            agent.read("m1")
        with agent.tracer.start_as_current_span("turn", openinference_span_kind="agent"):
            assert agent.search("webhook retry policy")[0] == "m2"
            agent.read("m2")
            agent.search("sprint goals")
    with (
        using_session("s2"),
        agent.tracer.start_as_current_span("turn", openinference_span_kind="agent"),
    ):
        assert "m3" in agent.search("Why no migrations on Friday?")
        agent.read("m3")
    provider.shutdown()
    recorded.spans = memory.get_finished_spans()
    return recorded


def phoenix_rows(spans: Sequence[ReadableSpan]) -> list[dict[str, Any]]:
    """The spans as rows of Phoenix's ``get_spans_dataframe()`` (reset index): one
    ``attributes.<key>`` column per attribute, ``retrieval.documents`` a list of objects."""
    rows = []
    for span in spans:
        context = span.get_span_context()
        attributes = dict(span.attributes or {})
        documents: dict[int, dict[str, Any]] = {}
        row: dict[str, Any] = {
            "context.span_id": f"{context.span_id:016x}",
            "context.trace_id": f"{context.trace_id:032x}",
            "name": span.name,
            "span_kind": attributes.get("openinference.span.kind", "UNKNOWN"),
            "parent_id": f"{span.parent.span_id:016x}" if span.parent else None,
            "start_time": span.start_time,
            "end_time": span.end_time,
            "status_code": "UNSET",
            "status_message": "",
            "events": [],
        }
        for key, value in attributes.items():
            parts = key.split(".")
            if key.startswith("retrieval.documents."):
                documents.setdefault(int(parts[2]), {})[".".join(parts[3:])] = value
            else:
                row[f"attributes.{key}"] = list(value) if isinstance(value, tuple) else value
        if documents:
            row["attributes.retrieval.documents"] = [documents[i] for i in sorted(documents)]
        rows.append(row)
    return rows


def write_phoenix(spans: Sequence[ReadableSpan], path: Path, date_format: str = "epoch") -> None:
    """Phoenix's export as pandas writes it (``to_json(orient="records", lines=True)``)."""
    import pandas as pd

    frame = pd.DataFrame(phoenix_rows(spans))
    for column in ("start_time", "end_time"):
        frame[column] = pd.to_datetime(frame[column], unit="ns", utc=True)
    with warnings.catch_warnings():  # pandas 3 deprecates "epoch", still its default
        warnings.simplefilter("ignore")
        frame.to_json(path, orient="records", lines=True, date_format=date_format, date_unit="ms")


def otlp_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
