"""An MCP memory server as an extractor: ingest every document, then list what the server
extracted from it, through the ``[extract]`` table of its profile.

Only a server that parses what it is given can be scored this way (basic-memory turns a
Markdown note into observations, relations and the note as an entity). A server that stores
what it is given as given (server-memory, mcp-memory-libsql, agentrecall) would score as a
perfect or an empty extractor depending on how it is fed, which measures nothing: its
profile has no ``[extract]`` table, and asking for it is a ConfigError that says so.

The server is started by the search adapter's launch code (:class:`MCPSystem`: a fresh
store in a temporary folder, the profile's command and environment, the SDK's handshake)
and stopped afterwards. All documents are ingested before any is read back, so that links
between documents can resolve. A crash, a timeout or an error answer is a
:class:`~recallbench.runner.SystemFailedError` (exit 3), as for a failed search run.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recallbench.core import ConfigError, SystemUnderTestError
from recallbench.extraction._formats import (
    Expansion,
    ExtractedConnection,
    ExtractedDocument,
    ExtractedEntity,
    ExtractedEvent,
    ExtractedObservation,
    ExtractionOutput,
    GoldDocument,
)
from recallbench.systems._answers import answer_texts, fill, select
from recallbench.systems._launch import require_installed
from recallbench.systems._profile import Extract, ExtractedItems, Profile, load_profile

if TYPE_CHECKING:
    from recallbench.systems._mcp import MCPSystem

NAME_PREFIX = "mcp:"


def mcp_extractor(profile: str) -> MCPExtractor:
    """The extractor (``recallbench extract --extractor mcp:PROFILE``) of a shipped
    profile's name or a profile TOML's path; ConfigError when
    the profile has no ``[extract]`` table (its server stores what it is given)."""
    loaded = _load(profile)
    if loaded.extract is None:
        finding = (  # checked for every shipped server (see the profiles' comments)
            ", and its server stores what it is given instead of extracting from it"
            if profile in _shipped()
            else ""
        )
        raise ConfigError(
            f"{loaded.name} cannot be scored as an extractor: its profile has no [extract] "
            f"table (ingest, then list what the server extracted){finding}"
        )
    return MCPExtractor(loaded, loaded.extract)


def _shipped() -> dict[str, Path]:
    from recallbench.systems._profile import shipped_profiles

    return shipped_profiles()


def _load(profile: str) -> Profile:
    shipped = _shipped()
    if profile in shipped:
        return load_profile(shipped[profile])
    path = Path(profile)
    if path.suffix == ".toml" or path.exists():
        return load_profile(path)
    raise ConfigError(
        f"unknown MCP profile {profile!r}: give a shipped profile ({', '.join(sorted(shipped))}) "
        "or the path of a profile TOML"
    )


class MCPExtractor:
    """Ingest, then list what was extracted, with one server per :meth:`extract` call."""

    def __init__(self, profile: Profile, spec: Extract) -> None:
        self.profile = profile
        self.spec = spec
        self.name = f"{NAME_PREFIX}{profile.name}"

    def extract(self, documents: Iterable[GoldDocument]) -> ExtractionOutput:
        """Every document's extraction by the server (run to completion in its own event
        loop: this is called from synchronous code, as the baseline is)."""
        from recallbench.runner import SystemFailedError

        corpus = list(documents)
        require_installed(self.profile)  # a usage problem (exit 2), said as for search
        try:
            answers = asyncio.run(self._ingest_and_read(corpus))
        except SystemUnderTestError as error:
            raise SystemFailedError(f"{self.name}: {error}") from None
        return self._output(corpus, answers)

    async def _ingest_and_read(self, corpus: Sequence[GoldDocument]) -> list[Any]:
        from recallbench.systems._mcp import MCPSystem

        system = MCPSystem(self.profile)
        try:
            await system.setup([])
            await self._require_tools(system)
            refs = [await self._ingest(system, document) for document in corpus]
            return [
                await self._read(system, document, ref)
                for document, ref in zip(corpus, refs, strict=True)
            ]
        finally:
            await system.close()

    async def _require_tools(self, system: MCPSystem) -> None:
        try:
            tools = await system.tool_names()
        except Exception as error:  # a server that ended or stalled right after starting
            raise SystemUnderTestError(f"listing its tools: {type(error).__name__}") from None
        for tool in (self.spec.tool, self.spec.read.tool):
            if tool not in tools:
                raise SystemUnderTestError(f"the server has no tool {tool!r}")

    async def _ingest(self, system: MCPSystem, document: GoldDocument) -> Any:
        """Ingest one document; what the read call needs from the answer (``{ref}``)."""
        arguments = fill(self.spec.arguments, _places(document))
        answer = await _call(system, self.spec.tool, arguments)
        if self.spec.ref is None:
            return None
        ref = select(_json(answer, self.spec.source), self.spec.ref)
        if ref is None:
            raise SystemUnderTestError(
                f"{self.spec.tool} on {document.id!r}: no {self.spec.ref!r} in its answer "
                f"({' '.join(answer_texts(answer))[:200]})"
            )
        return ref

    async def _read(self, system: MCPSystem, document: GoldDocument, ref: Any) -> Any:
        read = self.spec.read
        arguments = fill(read.arguments, {**_places(document), "ref": ref})
        return _json(await _call(system, read.tool, arguments), self.spec.source)

    def _output(self, corpus: Sequence[GoldDocument], answers: Sequence[Any]) -> ExtractionOutput:
        names = _document_names(corpus)
        documents, expansions = [], []
        for document, answer in zip(corpus, answers, strict=True):
            extracted, connections = map_answer(self.spec, document, answer, names)
            documents.append(extracted)
            if connections:
                expansions.append(
                    Expansion(seed_document=document.id, connections=tuple(connections))
                )
        return ExtractionOutput(
            system=self.name,
            documents=tuple(documents),
            expansions=tuple(expansions),
            metadata={
                "extractor": "mcp",
                "profile": self.profile.name,
                "extract": self.spec.model_dump(mode="json"),
            },
        )


async def _call(system: MCPSystem, tool: str, arguments: dict[str, Any]) -> Any:
    """A tool call through the search adapter (timeouts, error answers, a server that
    wrote garbage); any other failure of the connection is the system's failure too."""
    try:
        return await system.call_tool(tool, arguments)
    except SystemUnderTestError:
        raise
    except Exception as error:  # the SDK's error for a connection that ended, ...
        raise SystemUnderTestError(f"{tool}: {type(error).__name__}: {error}") from None


def _places(document: GoldDocument) -> dict[str, Any]:
    return {
        "id": document.id,
        "text": document.text,
        "title": document.title or "",
        **{f"metadata.{key}": value for key, value in document.metadata.items()},
    }


def _json(answer: Any, source: str) -> Any:
    """The JSON of a tool answer: structured content (unless ``json_text``), else the JSON
    inside the first text block."""
    structured = getattr(answer, "structured_content", getattr(answer, "structuredContent", None))
    if source == "structured" and structured is not None:
        return structured
    texts = answer_texts(answer)
    try:
        return json.loads(texts[0]) if texts else None
    except json.JSONDecodeError:
        raise SystemUnderTestError(f"expected JSON in the answer, got {texts[0][:120]!r}") from None


def _document_names(corpus: Sequence[GoldDocument]) -> dict[str, str]:
    """Document id by every name a server may link it by (id, title), case-folded."""
    names: dict[str, str] = {}
    for document in corpus:
        for name in (document.title, document.id):
            if name:
                names[name.casefold()] = document.id
    return names


def items_at(value: Any, path: str) -> Iterator[Any]:
    """The items a path names: dotted keys, ``[]`` after a key iterates its list
    (``result.results[].observations[]``); a missing key or a non-list yields nothing."""
    values = [value]
    for part in filter(None, path.split(".")):
        each = part.endswith("[]")
        key = part.removesuffix("[]")
        found = [v.get(key) for v in values if isinstance(v, dict)]
        if each:
            values = [item for v in found if isinstance(v, list) for item in v]
        else:
            values = [v for v in found if v is not None]
    yield from values


def _one_of(item: Any, path: str, values: list[str], document: GoldDocument) -> bool:
    """Whether the value at ``path`` is one of ``values`` (case-insensitive; ``{id}`` and
    ``{title}`` in a value are the document's)."""
    value = select(item, path)
    wanted = {str(fill(v, _places(document))).casefold() for v in values}
    return value is not None and str(value).casefold() in wanted


def _kept(item: Any, spec: ExtractedItems, document: GoldDocument) -> bool:
    return all(_one_of(item, p, v, document) for p, v in spec.where.items()) and not any(
        _one_of(item, p, v, document) for p, v in spec.unless.items()
    )


def mapped(spec: ExtractedItems, answer: Any, document: GoldDocument) -> Iterator[dict[str, Any]]:
    """Every item of one mapping as output fields (strings; ``mentions`` a tuple); items
    without the required field are skipped."""
    required = spec.FIELDS[0]
    for item in items_at(answer, spec.items):
        if not _kept(item, spec, document):
            continue
        fields = {name: select(item, path) for name, path in spec.fields.items()}
        if fields.get(required) in (None, ""):
            continue
        out: dict[str, Any] = {}
        for name, value in fields.items():
            if name == "mentions":
                out[name] = tuple(map(str, value)) if isinstance(value, list) else ()
            else:
                out[name] = None if value is None else str(value)
        yield out


def map_answer(
    spec: Extract, document: GoldDocument, answer: Any, names: dict[str, str]
) -> tuple[ExtractedDocument, list[ExtractedConnection]]:
    """One document's extraction from the read tool's answer, and its connections: links
    whose target names another document of the corpus (by id or title); links to anything
    else, and links to the document itself, are not connections; one connection per
    target document (the first link to it). An entity naming another document of the
    corpus is that document, reached by a connection, not an entity extracted from the
    text; the document's own entity (basic-memory's note) stays."""
    events = [ExtractedEvent(**f) for s in spec.events for f in mapped(s, answer, document)]
    entities = _unique_entities(
        ExtractedEntity(**f)
        for s in spec.entities
        for f in mapped(s, answer, document)
        if names.get(f["name"].casefold(), document.id) == document.id
    )
    observations = [
        ExtractedObservation(**f) for s in spec.observations for f in mapped(s, answer, document)
    ]
    connections: dict[str, ExtractedConnection] = {}
    for s in spec.connections:
        for fields in mapped(s, answer, document):
            target = names.get(fields.pop("document").casefold())
            if target is not None and target != document.id and target not in connections:
                connections[target] = ExtractedConnection(document_id=target, hops=1, **fields)
    extracted = ExtractedDocument(
        id=document.id,
        events=tuple(events),
        entities=tuple(entities),
        observations=tuple(observations),
    )
    return extracted, list(connections.values())


def _unique_entities(entities: Iterable[ExtractedEntity]) -> list[ExtractedEntity]:
    """One entity per name (case-folded), the first seen: two links to ``[[Alice Chen]]``
    name one entity, not two."""
    seen: dict[str, ExtractedEntity] = {}
    for entity in entities:
        seen.setdefault(entity.name.casefold(), entity)
    return list(seen.values())
