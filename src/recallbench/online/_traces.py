"""Trace files as a query log: each retrieval span a logged search, the tool spans that
read what a search returned its feedback, under the proxy's rules.

Steps, for one or more files (OTLP JSON or Phoenix's span export, see
:mod:`~recallbench.online._traces_otlp` and :mod:`~recallbench.online._traces_phoenix`):

1. Every file is read to its end, streamed, before anything else happens; a file with a
   problem raises :class:`~recallbench.online._traces_model.TraceFileError` listing them
   (file, line, JSON path), so nothing is written from a bad file.
2. Spans are classified by :mod:`~recallbench.online._traces_spans` (the attribute mapping).
   A span seen twice (same trace id and span id, in one file or several) counts once.
3. Spans are grouped by session (the span's session attribute, else its trace id) and
   replayed in start-time order (a search before a read that starts at the same instant)
   through :class:`~recallbench.online._feedback.SessionFeedback`, the proxy's rules:
   ``read_after_search`` for a returned id that a later tool span names, ``re_search``,
   ``scroll_past`` when the next search starts or the session's last span ends.
4. A search becomes a :class:`~recallbench.store.QueryLogEntry` whose ``query_id`` is
   ``<trace id>:<span id>`` (the key that makes an import idempotent), ``created_at`` its
   start, ``latency_ms`` its duration, ``tool`` the span's name.

Scores are kept in :attr:`TraceLog.origins` (the query log has no column for them).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal, get_args

from recallbench.core import ConfigError
from recallbench.online._feedback import Feedback, SessionFeedback, result_ids
from recallbench.online._feedback import Search as FeedbackSearch
from recallbench.online._traces_model import Problems, Span
from recallbench.online._traces_otlp import read_otlp_json
from recallbench.online._traces_phoenix import read_phoenix_jsonl
from recallbench.online._traces_spans import Hit, Read, Search, Skipped, classify
from recallbench.store._telemetry import FeedbackEvent, QueryLogEntry

TraceFormat = Literal["otlp-json", "phoenix"]
TRACE_FORMATS: tuple[TraceFormat, ...] = get_args(TraceFormat)
_READERS = {"otlp-json": read_otlp_json, "phoenix": read_phoenix_jsonl}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class TraceFile:
    """What one file gave."""

    path: str
    format: TraceFormat
    spans: int
    searches: int
    reads: int
    skipped: dict[str, int]
    """Reason -> retrieval spans skipped for it."""


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a logged search came from."""

    file: str
    trace_id: str
    span_id: str
    convention: str
    scores: tuple[float | None, ...]
    """The results' scores, in rank order (None where a span gave none)."""


@dataclass(frozen=True)
class TraceLog:
    """Trace files as the proxy's log would hold them."""

    entries: tuple[QueryLogEntry, ...]
    feedback: tuple[FeedbackEvent, ...]
    files: tuple[TraceFile, ...]
    origins: dict[str, Origin] = field(default_factory=dict)
    """Query id -> where the search came from."""
    read_spans: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    """(query id, memory id) -> the span ids of the reads behind its read_after_search."""
    duplicates: int = 0
    """Spans seen more than once (same trace and span id), counted once."""


def detect_format(path: Path) -> TraceFormat:
    """The format of ``path`` from its first line: an object with ``resourceSpans`` is
    OTLP JSON; one with ``context.span_id``, ``context`` or ``span_kind`` is a Phoenix row.
    ConfigError, naming the file, otherwise."""
    try:
        with path.open("r", encoding="utf-8") as lines:
            first = next((line for line in lines if line.strip()), "")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read ({error.strerror or error})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text, not a trace file") from None
    hint = "; give --format otlp-json or --format phoenix"
    if not first:
        raise ConfigError(f"{path}: empty, cannot tell its format{hint}")
    try:
        head = json.loads(first)
    except json.JSONDecodeError:
        if first.lstrip().startswith("["):
            return "phoenix"  # its reader says how to write JSON Lines
        raise ConfigError(f"{path}: line 1 is not JSON, cannot tell its format{hint}") from None
    if isinstance(head, list):
        return "phoenix"  # a whole export as one array: its reader says to write JSON Lines
    if isinstance(head, dict) and "resourceSpans" in head:
        return "otlp-json"
    if isinstance(head, dict) and {"context.span_id", "context", "span_kind"} & head.keys():
        return "phoenix"
    raise ConfigError(
        f"{path}: line 1 is neither an OTLP ExportTraceServiceRequest (resourceSpans) nor a "
        f"Phoenix span row (context.span_id){hint}"
    )


def read_traces(
    paths: Sequence[Path],
    trace_format: TraceFormat | None = None,
    read_tools: frozenset[str] | None = None,
) -> TraceLog:
    """The query log and feedback that ``paths`` hold (module docstring). Every file is
    read and checked before this returns; TraceFileError on the first bad file."""
    if not paths:
        raise ConfigError("no trace file given")
    files: list[TraceFile] = []
    events: dict[tuple[str, str], Search | Read] = {}
    where: dict[str, str] = {}
    duplicates = 0
    for path in paths:
        if not path.is_file():
            raise ConfigError(f"{path}: no such file")
        chosen = trace_format or detect_format(path)
        problems = Problems(str(path))
        counts = {"spans": 0, "searches": 0, "reads": 0}
        skipped: dict[str, int] = defaultdict(int)
        for span in _READERS[chosen](path, problems):
            counts["spans"] += 1
            found = classify(span, problems, read_tools)
            if isinstance(found, Skipped):
                skipped[found.reason] += 1
            elif found is not None:
                key = (span.trace_id, span.span_id)
                if key in events:
                    duplicates += 1
                    continue
                events[key] = found
                where[span.span_id] = str(path)
                counts["searches" if isinstance(found, Search) else "reads"] += 1
        problems.raise_if_any()
        files.append(TraceFile(str(path), chosen, **counts, skipped=dict(skipped)))
    return _replay(list(events.values()), tuple(files), where, duplicates)


def _replay(
    found: list[Search | Read], files: tuple[TraceFile, ...], where: dict[str, str], duplicates: int
) -> TraceLog:
    sessions: dict[str, list[Search | Read]] = defaultdict(list)
    for item in found:
        sessions[item.session or item.span.trace_id].append(item)
    entries: list[QueryLogEntry] = []
    feedback: list[FeedbackEvent] = []
    origins: dict[str, Origin] = {}
    read_spans: dict[tuple[str, str], list[str]] = defaultdict(list)
    for session in sorted(sessions):
        timeline = sorted(sessions[session], key=_order)
        rules = SessionFeedback()
        for item in timeline:
            at = _time(item.span.start_ns)
            if isinstance(item, Search):
                entry = _entry(item, session)
                entries.append(entry)
                origins[entry.query_id] = Origin(
                    where[item.span.span_id],
                    item.span.trace_id,
                    item.span.span_id,
                    item.convention,
                    tuple(hit.score for hit in _unique_hits(item)),
                )
                search = FeedbackSearch(entry.query_id, entry.text, entry.results, at.timestamp())
                inferred = rules.search(search)
            else:
                inferred = rules.read(item.ids)
                for event in inferred:
                    read_spans[(event.query_id, event.doc_id or "")].append(item.span.span_id)
            feedback += _events(inferred, at, session)
        last = max((item.span.end_ns or item.span.start_ns) for item in timeline)
        feedback += _events(rules.end(), _time(last), session)
    return TraceLog(tuple(entries), tuple(feedback), files, origins, dict(read_spans), duplicates)


def _order(item: Search | Read) -> tuple[int, int, str]:
    return (item.span.start_ns, 0 if isinstance(item, Search) else 1, item.span.span_id)


def _unique_hits(search: Search) -> Iterator[Hit]:
    seen: set[str] = set()
    for hit in search.hits:
        if hit.id not in seen:
            seen.add(hit.id)
            yield hit


def _entry(search: Search, session: str) -> QueryLogEntry:
    span = search.span
    texts: dict[str, str] = {}
    for hit in search.hits:
        if hit.text is not None:
            texts.setdefault(hit.id, hit.text)
    latency = None if span.end_ns is None else max(0, span.end_ns - span.start_ns) / 1e6
    return QueryLogEntry(
        query_id=f"{span.trace_id}:{span.span_id}",
        text=search.query,
        created_at=_time(span.start_ns),
        results=result_ids(hit.id for hit in search.hits),
        session_id=session,
        tool=span.name or None,
        texts=texts,
        latency_ms=latency,
        trace_id=span.trace_id,
    )


def _events(inferred: Sequence[Feedback], at: datetime, session: str) -> list[FeedbackEvent]:
    return [
        FeedbackEvent(
            query_id=event.query_id,
            kind=event.kind,
            created_at=at,
            doc_id=event.doc_id,
            rank=event.rank,
            session_id=session,
        )
        for event in inferred
    ]


def _time(nanoseconds: int) -> datetime:
    """A UTC datetime from nanoseconds since the epoch (to the microsecond)."""
    return _EPOCH + timedelta(microseconds=nanoseconds // 1000)


__all__ = ["TRACE_FORMATS", "Span", "TraceFormat", "TraceLog", "detect_format", "read_traces"]
