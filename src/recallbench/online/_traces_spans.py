"""Which spans are searches and which are reads, and what they say: the attribute mapping.

Conventions read (attribute names as the packages define them):

- **OpenInference** (openinference-semantic-conventions 0.1.42, ``SpanAttributes``,
  ``DocumentAttributes``): a search is a span with ``openinference.span.kind`` =
  ``RETRIEVER``; its query is ``input.value`` (when ``input.mime_type`` is
  ``application/json``, the string under ``query``, ``q``, ``question``, ``text`` or
  ``input``, or the only string of the object); its results are
  ``retrieval.documents.{i}.document.id`` / ``.document.content`` / ``.document.score``
  in the order of ``i``. A read is a span with kind ``TOOL``: ``tool.name`` (else the
  span's name) and the ids named in ``input.value``. The session is ``session.id``.
- **OpenTelemetry GenAI** (semantic conventions 1.41, ``gen_ai.*``; declared up to
  opentelemetry-semantic-conventions 0.66b2, since moved to the GenAI conventions
  repository): a search is a span with ``gen_ai.operation.name`` = ``retrieval`` (query
  ``gen_ai.retrieval.query.text``, results ``gen_ai.retrieval.documents``) or
  ``search_memory`` (``gen_ai.memory.query.text``, ``gen_ai.memory.records``); the results
  are a JSON array (a string, or an OTLP ``arrayValue`` of ``kvlistValue``) of objects
  with ``id``, ``content`` and ``score``. A read is an ``execute_tool`` span:
  ``gen_ai.tool.name`` and the ids named in ``gen_ai.tool.call.arguments``. The session
  is ``gen_ai.conversation.id``.

A span without a session attribute belongs to the session of its trace (the trace id). A
result without an id is identified by its text, as the proxy does when a profile has no
id path (here ``text:`` and the first 16 hex digits of the text's SHA-256, to keep ids
short); a result with neither is left out. Ids named by a read are the string (and
integer) leaves of its JSON arguments, or the whole argument when it is not JSON; the
feedback rules then keep only those a search of the session returned.

A search whose query is missing, empty or redacted (OpenInference's ``__REDACTED__``) is
skipped and counted; an attribute of the wrong type is a problem (file, line, JSON path).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from recallbench.online._traces_model import AttributeValue, Problems, Span

REDACTED = "__REDACTED__"
"""What OpenInference's ``TraceConfig`` writes in place of a hidden value."""
QUERY_KEYS = ("query", "q", "question", "text", "input")
_DOCUMENT = re.compile(r"retrieval\.documents\.(\d+)\.document\.(id|content|score)")

MAPPING: tuple[tuple[str, str, str], ...] = (
    (
        "search",
        "openinference.span.kind = RETRIEVER",
        "gen_ai.operation.name = retrieval | search_memory",
    ),
    ("query text", "input.value", "gen_ai.retrieval.query.text | gen_ai.memory.query.text"),
    (
        "result ids, in rank order",
        "retrieval.documents.{i}.document.id",
        "gen_ai.retrieval.documents[].id | gen_ai.memory.records[].id",
    ),
    ("result texts", "retrieval.documents.{i}.document.content", "[].content"),
    ("result scores", "retrieval.documents.{i}.document.score", "[].score"),
    ("session", "session.id (else the trace id)", "gen_ai.conversation.id (else the trace id)"),
    (
        "read",
        "openinference.span.kind = TOOL: tool.name, ids in input.value",
        "gen_ai.operation.name = execute_tool: gen_ai.tool.name, ids in gen_ai.tool.call.arguments",
    ),
)
"""(what the query log holds, OpenInference attribute, GenAI attribute): the table of
docs/traces.md."""


@dataclass(frozen=True, slots=True)
class Hit:
    """One result of a search, at its rank."""

    id: str
    text: str | None
    score: float | None


@dataclass(frozen=True, slots=True)
class Search:
    """A retrieval span: what the query log holds for a search."""

    span: Span
    convention: str
    """``openinference`` or ``gen_ai``."""
    query: str
    hits: tuple[Hit, ...]
    session: str | None


@dataclass(frozen=True, slots=True)
class Read:
    """A tool span naming ids (a read, if a search of the session returned one of them)."""

    span: Span
    tool: str
    ids: tuple[str, ...]
    session: str | None


@dataclass(frozen=True, slots=True)
class Skipped:
    """A retrieval span that cannot be a logged search, and why."""

    span: Span
    reason: str


def classify(
    span: Span, problems: Problems, read_tools: frozenset[str] | None = None
) -> Search | Read | Skipped | None:
    """What ``span`` is to the query log: a search, a read, a skipped search, or nothing.
    ``read_tools``: only tool spans of these names are reads (None: every tool span)."""
    attributes = span.attributes
    kind = attributes.get("openinference.span.kind")
    operation = attributes.get("gen_ai.operation.name")
    if isinstance(kind, str) and kind.upper() == "RETRIEVER":
        return _openinference_search(span, problems)
    if operation in ("retrieval", "search_memory"):
        return _gen_ai_search(span, str(operation), problems)
    if isinstance(kind, str) and kind.upper() == "TOOL":
        tool, arguments = attributes.get("tool.name", span.name), attributes.get("input.value")
    elif operation == "execute_tool":
        tool = attributes.get("gen_ai.tool.name", span.name)
        arguments = attributes.get("gen_ai.tool.call.arguments")
    else:
        return None
    if read_tools is not None and tool not in read_tools:
        return None
    ids = tuple(dict.fromkeys(_named_ids(arguments)))
    if not ids:
        return None
    return Read(span, str(tool), ids, _session(span, problems))


def _openinference_search(span: Span, problems: Problems) -> Search | Skipped | None:
    query = _text(span, "input.value", problems)
    if query is None:
        return None
    if isinstance(query, Skipped):
        return query
    if span.attributes.get("input.mime_type") == "application/json":
        query = _query_of_json(query)
    found: dict[int, dict[str, AttributeValue]] = {}
    for key, value in span.attributes.items():
        match = _DOCUMENT.fullmatch(key)
        if match:
            found.setdefault(int(match.group(1)), {})[match.group(2)] = value
    hits = [
        hit
        for index in sorted(found)
        if (hit := _hit(found[index], span, f"retrieval.documents.{index}.document.", problems))
    ]
    return Search(span, "openinference", query, tuple(hits), _session(span, problems))


def _gen_ai_search(span: Span, operation: str, problems: Problems) -> Search | Skipped | None:
    memory = operation == "search_memory"
    query_key = "gen_ai.memory.query.text" if memory else "gen_ai.retrieval.query.text"
    documents_key = "gen_ai.memory.records" if memory else "gen_ai.retrieval.documents"
    query = _text(span, query_key, problems)
    if query is None:
        return None
    if isinstance(query, Skipped):
        return query
    raw = span.attributes.get(documents_key, ())
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as error:
            problems.add(span.locate(documents_key), f"not a JSON array: {error.msg}")
            return None
    if not isinstance(raw, (list, tuple)):
        problems.add(span.locate(documents_key), "expected an array of documents")
        return None
    hits = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            problems.add(span.locate(documents_key), f"[{index}]: expected an object")
            continue
        fields: dict[str, object] = {
            name: item[name] for name in ("id", "content", "score") if name in item
        }
        if not isinstance(fields.get("content", ""), str):
            fields["content"] = json.dumps(fields["content"], ensure_ascii=False, sort_keys=True)
        hit = _hit(fields, span, f"{documents_key}[{index}].", problems, key=documents_key)
        if hit is not None:
            hits.append(hit)
    return Search(span, "gen_ai", query, tuple(hits), _session(span, problems))


def _text(span: Span, key: str, problems: Problems) -> str | Skipped | None:
    """The query at ``key``: a string, a Skipped (missing or redacted), or None after a
    problem (not a string)."""
    value = span.attributes.get(key)
    if value is None or (isinstance(value, str) and value.strip() in ("", REDACTED)):
        reason = "redacted" if value == REDACTED else "missing" if value is None else "empty"
        return Skipped(span, f"query {reason} ({key})")
    if not isinstance(value, str):
        problems.add(span.locate(key), f"expected the query as a string, got {_kind(value)}")
        return None
    return value


def _hit(
    fields: Mapping[str, object], span: Span, prefix: str, problems: Problems, key: str = ""
) -> Hit | None:
    where = span.locate(key) if key else None
    identifier, text, score = fields.get("id"), fields.get("content"), fields.get("score")
    ok = True
    if identifier is not None and (
        not isinstance(identifier, (str, int)) or isinstance(identifier, bool)
    ):
        problems.add(
            where or span.locate(f"{prefix}id"),
            f"{prefix}id: expected a string, got {_kind(identifier)}",
        )
        ok = False
    if text is not None and not isinstance(text, str):
        problems.add(
            where or span.locate(f"{prefix}content"),
            f"{prefix}content: expected a string, got {_kind(text)}",
        )
        ok = False
    if score is not None and (
        isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score)
    ):
        problems.add(
            where or span.locate(f"{prefix}score"),
            f"{prefix}score: expected a finite number, got {_kind(score)}",
        )
        ok = False
    if not ok or (identifier in (None, "") and not text):
        return None
    if identifier in (None, ""):
        identifier = "text:" + hashlib.sha256(str(text).encode()).hexdigest()[:16]
    return Hit(
        str(identifier),
        text if isinstance(text, str) else None,
        float(score) if isinstance(score, (int, float)) else None,
    )


def _session(span: Span, problems: Problems) -> str | None:
    for key in ("session.id", "gen_ai.conversation.id"):
        value = span.attributes.get(key)
        if isinstance(value, str) and value:
            return value
        if value is not None and not isinstance(value, str):
            problems.add(
                span.locate(key), f"expected the session id as a string, got {_kind(value)}"
            )
    return None


def _query_of_json(text: str) -> str:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in QUERY_KEYS:
            if isinstance(value.get(key), str):
                return str(value[key])
        strings = [item for item in value.values() if isinstance(item, str)]
        if len(strings) == 1:
            return strings[0]
    return text


def _named_ids(arguments: object) -> Iterator[str]:
    """The ids a tool call names: the string and integer leaves of its arguments (parsed
    as JSON when a string), or the whole string when it is not JSON."""
    if isinstance(arguments, str):
        try:
            parsed: object = json.loads(arguments)
        except json.JSONDecodeError:
            if arguments.strip():
                yield arguments.strip()
            return
        yield from _leaves(parsed)
    else:
        yield from _leaves(arguments)


def _leaves(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, int) and not isinstance(value, bool):
        yield str(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    return "an array" if isinstance(value, (list, tuple)) else "an object"
