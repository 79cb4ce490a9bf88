"""Which tool of an MCP server ingests and which searches, and with what arguments: a
guess from the tools' names, descriptions and input schemas (``systems init``).

Each guess carries the reason it was made and how sure it is, so the profile written can
say it in a comment. Nothing here talks to the server: :mod:`._profile_probe` tries the
guesses on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import JsonValue

from recallbench.systems._tool_listing import ListedTool

Sureness = Literal["sure", "likely", "a guess"]

SEARCH_WORDS = ("search", "find", "recall", "query", "retrieve", "lookup", "similar", "grep")
INGEST_WORDS = (
    "create", "add", "store", "save", "remember", "write", "insert", "upsert", "memorize",
    "memorise", "ingest", "put", "log", "record", "append", "capture", "new",
)  # fmt: skip
DELETE_WORDS = ("delete", "remove", "clear", "reset", "wipe", "forget", "purge", "erase")
GOOD_NOUNS = ("entity", "entities", "memory", "memories", "note", "notes", "document", "fact")
SIDE_NOUNS = ("observation", "observations", "relation", "relations", "tag", "tags", "project")

QUERY_NAMES = (
    "query", "q", "search", "searchquery", "querytext", "text", "keywords", "keyword",
    "term", "terms", "question", "prompt", "pattern", "input",
)  # fmt: skip
LIMIT_NAMES = (
    "k", "limit", "topk", "maxresults", "numresults", "n", "count", "pagesize", "size",
    "topn", "max", "maxhits", "numhits", "maxitems",
)  # fmt: skip
ID_NAMES = ("id", "docid", "memoryid", "key", "name", "title", "identifier", "slug", "entity")
TEXT_NAMES = (
    "content", "text", "body", "observations", "observation", "contents", "memory", "note",
    "message", "fact", "value", "information", "data", "entry",
)  # fmt: skip
KIND_NAMES = ("type", "entitytype", "kind", "category", "memorytype", "notetype")
FOLDER_NAMES = ("directory", "folder", "dir", "path", "collection", "namespace")
META_NAMES = ("metadata", "meta", "attributes", "properties", "extra")
PREFERRED_VALUES = ("memory", "note", "fact", "text", "document", "json")
STRUCTURE_WORDS = (
    "json", "structured", "structure", "metadata", "meta", "verbose", "detailed", "details",
    "detail", "raw",
)  # fmt: skip
"""Words in a boolean option's name or description that suggest it asks for structured
output (memory-keeper's ``includeMetadata`` turns its prose answer into JSON)."""
MAX_SWITCHES = 4


@dataclass(frozen=True, slots=True)
class Guess:
    """One decision and why."""

    what: str
    """What was decided (``search tool: search_nodes``)."""
    why: str
    sure: Sureness

    def __str__(self) -> str:
        return f"{self.what} ({self.why}; {self.sure})"


@dataclass(frozen=True, slots=True)
class Template:
    """Arguments for one call, with the notes on how each was chosen."""

    arguments: dict[str, JsonValue]
    notes: tuple[str, ...] = ()
    variants: tuple[dict[str, JsonValue], ...] = ()
    """Other arguments worth trying when these fail (each enum value of an option)."""
    switches: tuple[dict[str, JsonValue], ...] = ()
    """These arguments with one boolean option for structured output set to true, tried
    when an answer holds the probe ids only in prose."""


@dataclass(frozen=True, slots=True)
class IngestGuess:
    """An ingest tool and how one document becomes its arguments."""

    tool: ListedTool
    guess: Guess
    item: dict[str, JsonValue]
    batch_field: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SearchGuess:
    """A search tool and its argument template (``{query}``, ``{k}``)."""

    tool: ListedTool
    guess: Guess
    template: Template
    max_k: int | None = None


@dataclass(frozen=True, slots=True)
class ResetGuess:
    """A tool that may empty the store, and its arguments (``{ids}``)."""

    tool: ListedTool
    arguments: dict[str, JsonValue]
    why: str


@dataclass(frozen=True, slots=True)
class ToolGuesses:
    """Every candidate, best first, and what was not usable."""

    ingest: list[IngestGuess] = field(default_factory=list)
    search: list[SearchGuess] = field(default_factory=list)
    reset: list[ResetGuess] = field(default_factory=list)


def words(name: str) -> list[str]:
    """A tool or field name split into lower-case words (``searchNodes``, ``search-nodes``)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]


def key(name: str) -> str:
    """A field name compared loosely: lower case, no separators (``top_k`` -> ``topk``)."""
    return "".join(words(name))


def types_of(schema: dict[str, Any]) -> set[str]:
    """The JSON types a property accepts (through ``anyOf`` / ``oneOf``), null left out."""
    found: set[str] = set()
    given = schema.get("type")
    if isinstance(given, str):
        found.add(given)
    elif isinstance(given, list):
        found.update(str(t) for t in given)
    for option in (*schema.get("anyOf", ()), *schema.get("oneOf", ())):
        if isinstance(option, dict):
            found |= types_of(option)
    if not found and "enum" in schema:
        found.add("string")
    return found - {"null"}


def _option(schema: dict[str, Any], kind: str) -> dict[str, Any]:
    """The branch of ``anyOf`` / ``oneOf`` of type ``kind`` (or the schema itself)."""
    for option in (*schema.get("anyOf", ()), *schema.get("oneOf", ())):
        if isinstance(option, dict) and kind in types_of(option):
            return option
    return schema


def _first(
    names: tuple[str, ...], properties: dict[str, dict[str, Any]], kinds: set[str]
) -> str | None:
    by_key = {key(name): name for name, schema in properties.items() if types_of(schema) & kinds}
    for wanted in names:
        if wanted in by_key:
            return by_key[wanted]
    return None


def _enum_value(schema: dict[str, Any]) -> JsonValue | None:
    values = schema.get("enum")
    if not isinstance(values, list) or not values:
        return None
    for preferred in PREFERRED_VALUES:
        if preferred in values:
            return preferred
    first: JsonValue = values[0]
    return first


def _listed_value(name: str, schema: dict[str, Any], tool: ListedTool) -> str | None:
    """A value the descriptions list for ``name`` ("`type` is one of: fact, decision")."""
    texts = [str(schema.get("description") or ""), tool.description]
    for text in texts:
        near = re.search(
            rf"{re.escape(name)}\W{{0,3}}\s+(?:is|must be|should be)?\s*one\s+of:?\s*([^.]+)",
            text,
            re.IGNORECASE,
        ) or (re.search(r"one\s+of:?\s*([^.]+)", text, re.IGNORECASE) if text is texts[0] else None)
        if near:
            values = [v.strip(" `'\"") for v in re.split(r",|\bor\b", near.group(1))]
            values = [v for v in values if re.fullmatch(r"[\w-]+", v)]
            for preferred in PREFERRED_VALUES:
                if preferred in values:
                    return preferred
            if values:
                return values[0]
    return None


def filler(name: str, schema: dict[str, Any], tool: ListedTool) -> tuple[JsonValue, str]:
    """A harmless value for a required argument that holds neither id, text nor query."""
    if "default" in schema and schema["default"] is not None:
        return schema["default"], f"{name}: its default"
    enum = _enum_value(schema)
    if enum is not None:
        return enum, f"{name}: {enum!r}, one of its allowed values"
    kinds = types_of(schema)
    if "string" in kinds:
        listed = _listed_value(name, schema, tool)
        if listed is not None:
            return listed, f"{name}: {listed!r}, named in the description"
        if key(name) in FOLDER_NAMES:
            return "memories", f"{name}: 'memories' (a folder of our own)"
        return "memory", f"{name}: 'memory' (a placeholder)"
    if kinds & {"integer", "number"}:
        return 1, f"{name}: 1 (a placeholder)"
    if "boolean" in kinds:
        return False, f"{name}: false (a placeholder)"
    if "array" in kinds:
        return [], f"{name}: [] (a placeholder)"
    return {}, f"{name}: {{}} (a placeholder)"


def _formats(properties: dict[str, dict[str, Any]]) -> dict[str, JsonValue]:
    """Optional output-format options that offer JSON: asked for, as JSON is read best."""
    chosen: dict[str, JsonValue] = {}
    for name, schema in properties.items():
        values = _option(schema, "string").get("enum")
        if "format" in key(name) and isinstance(values, list) and "json" in values:
            chosen[name] = "json"
    return chosen


def _switches(properties: dict[str, dict[str, Any]], taken: dict[str, JsonValue]) -> list[str]:
    """Optional boolean options whose name or description suggests structured output
    (``includeMetadata``, ``json``, ``verbose``), not already on by default."""
    found = []
    for name, schema in properties.items():
        if name in taken or "boolean" not in types_of(schema) or schema.get("default") is True:
            continue
        said = set(words(name)) | set(words(str(schema.get("description") or "")))
        if said & set(STRUCTURE_WORDS):
            found.append(name)
    return found[:MAX_SWITCHES]


def _string_list(schema: dict[str, Any]) -> bool:
    items = _option(schema, "array").get("items")
    return isinstance(items, dict) and "string" in types_of(items)


def item_template(
    properties: dict[str, dict[str, Any]], required: list[str], tool: ListedTool
) -> tuple[dict[str, JsonValue], tuple[str, ...], bool] | None:
    """The arguments for one document: ``{text}`` in the text field, ``{id}`` in an id
    field (or ``metadata.doc_id``), fillers in the other required fields; with whether the
    id is carried. None when no field can hold the text."""
    texts = {
        name: schema
        for name, schema in properties.items()
        if "string" in types_of(schema) or ("array" in types_of(schema) and _string_list(schema))
    }
    text_field = _first(TEXT_NAMES, texts, {"string", "array"})
    if text_field is None:
        return None
    item: dict[str, JsonValue] = {}
    notes = [f"{text_field} = the text"]
    item[text_field] = "{text}" if "string" in types_of(properties[text_field]) else ["{text}"]
    others = {k: v for k, v in properties.items() if k != text_field and key(k) not in KIND_NAMES}
    id_field = _first(ID_NAMES, others, {"string"})
    meta = _first(META_NAMES, properties, {"object"})
    if id_field is not None:
        item[id_field] = "{id}"
        notes.append(f"{id_field} = the id")
    elif meta is not None:
        item[meta] = {"doc_id": "{id}"}
        notes.append(f"the id in {meta}.doc_id")
    else:
        notes.append("no field holds the id: hits are matched by their text")
    for name in required:
        if name not in item and name in properties:
            item[name], note = filler(name, properties[name], tool)
            notes.append(note)
    item.update({k: v for k, v in _formats(properties).items() if k not in item})
    return item, tuple(notes), id_field is not None or meta is not None


def _ingest_guess(tool: ListedTool) -> tuple[int, IngestGuess] | None:
    said = words(tool.name)
    if any(w in DELETE_WORDS or w in SEARCH_WORDS for w in said):
        return None
    verb = next((w for w in said if w in INGEST_WORDS), None)
    score, reasons = (3, [f"its name says {verb!r}"]) if verb else (0, [])
    batch_field: str | None = None
    found = None
    for name, schema in tool.properties.items():
        items = _option(schema, "array").get("items") if "array" in types_of(schema) else None
        if isinstance(items, dict) and "object" in types_of(items) and items.get("properties"):
            required = [str(r) for r in items.get("required", [])]
            found = item_template(items["properties"], required, tool)
            if found is not None:
                batch_field = name
                reasons.append(f"takes a list {name!r} of objects with a text field")
                break
    if found is None:
        found = item_template(tool.properties, tool.required, tool)
        if found is None:
            return None
        reasons.append("takes a text field")
    item, notes, carries_id = found
    score += 3 + (1 if carries_id else 0)
    score += sum(1 for w in said if w in GOOD_NOUNS) - 2 * sum(1 for w in said if w in SIDE_NOUNS)
    if score < 4:
        return None
    guess = Guess(f"ingest tool: {tool.name}", ", ".join(reasons), "a guess")
    return score, IngestGuess(tool, guess, item, batch_field, notes)


def _search_guess(tool: ListedTool) -> tuple[int, SearchGuess] | None:
    said = words(tool.name)
    if any(w in DELETE_WORDS or w in INGEST_WORDS for w in said):
        return None
    properties = tool.properties
    query = _first(QUERY_NAMES, properties, {"string"})
    strings = [n for n in tool.required if "string" in types_of(properties.get(n, {}))]
    if query is None and len(strings) == 1:
        query = strings[0]
    if query is None:
        return None
    verb = next((w for w in said if w in SEARCH_WORDS), None)
    score, reasons = (3, [f"its name says {verb!r}"]) if verb else (0, [])
    reasons.append(f"takes a query string {query!r}")
    score += 2 + (1 if query in tool.required else 0) + (1 if key(query) in ("query", "q") else 0)
    if re.search(r"\b(search|find|retriev|relevan|query)", tool.description, re.IGNORECASE):
        score += 1
    if score < 4:
        return None
    arguments: dict[str, JsonValue] = {query: "{query}"}
    notes = [f"{query} = the query"]
    rest = {k: v for k, v in properties.items() if k != query}
    limit = _first(LIMIT_NAMES, rest, {"integer", "number"})
    max_k = None
    if limit is not None:
        arguments[limit] = "{k}"
        notes.append(f"{limit} = k")
        maximum = _option(properties[limit], "integer").get("maximum")
        max_k = int(maximum) if isinstance(maximum, int | float) and maximum >= 1 else None
    for name in tool.required:
        if name not in arguments and name in properties:
            arguments[name], note = filler(name, properties[name], tool)
            notes.append(note)
    arguments.update({k: v for k, v in _formats(properties).items() if k not in arguments})
    variants: list[dict[str, JsonValue]] = []
    for name, schema in rest.items():
        values = _option(schema, "string").get("enum")
        if name in arguments or not isinstance(values, list):
            continue
        variants.extend({**arguments, name: value} for value in values[:4])
    switches = tuple({**arguments, name: True} for name in _switches(rest, arguments))
    template = Template(arguments, tuple(notes), tuple(variants[:6]), switches)
    guess = Guess(f"search tool: {tool.name}", ", ".join(reasons), "a guess")
    return score, SearchGuess(tool, guess, template, max_k)


def _reset_guess(tool: ListedTool) -> ResetGuess | None:
    said = words(tool.name)
    if not any(w in DELETE_WORDS for w in said):
        return None
    properties, required = tool.properties, tool.required
    if not required:
        return ResetGuess(tool, {}, "deletes and takes no argument")
    lists = [n for n in required if "array" in types_of(properties.get(n, {}))]
    if len(lists) == 1 and _string_list(properties[lists[0]]):
        arguments: dict[str, JsonValue] = {lists[0]: "{ids}"}
        for name in required:
            if name not in arguments:
                if "boolean" not in types_of(properties.get(name, {})):
                    return None
                arguments[name] = True  # confirm = true
        return ResetGuess(tool, arguments, f"deletes a list {lists[0]!r} of the ingested ids")
    return None


def _ranked(scored: list[tuple[int, Any]], kind: str) -> list[Any]:
    """Candidates best first, each guess's sureness set from its lead over the next."""
    scored.sort(key=lambda pair: -pair[0])
    out = []
    for index, (score, candidate) in enumerate(scored):
        if len(scored) == 1:
            sure: Sureness = "sure"
            why = f"only tool {kind}"
        elif index == 0 and score - scored[1][0] >= 2:
            sure, why = "likely", f"best of {len(scored)} tools {kind}"
        else:
            sure, why = "a guess", f"{index + 1} of {len(scored)} tools {kind}"
        guess = Guess(candidate.guess.what, f"{why}: {candidate.guess.why}", sure)
        out.append(_with_guess(candidate, guess))
    return out


def _with_guess(candidate: Any, guess: Guess) -> Any:
    from dataclasses import replace

    return replace(candidate, guess=guess)


def guess_tools(tools: list[ListedTool]) -> ToolGuesses:
    """Ingest, search and reset candidates among ``tools``, best first."""
    ingest = [g for g in map(_ingest_guess, tools) if g is not None]
    search = [g for g in map(_search_guess, tools) if g is not None]
    reset = [g for g in map(_reset_guess, tools) if g is not None]
    reset.sort(key=lambda r: not r.arguments)  # a list of ids before argument-less tools
    return ToolGuesses(
        ingest=_ranked(ingest, "taking a text"),
        search=_ranked(search, "taking a query string"),
        reset=reset,
    )
