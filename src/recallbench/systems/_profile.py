"""Profiles: how to start, fill and query an MCP memory server, declared in TOML.

Shipped profiles live in ``recallbench/systems/profiles``; a user profile is any TOML file
given by path. Unknown keys and bad values are errors naming the key and the file.
"""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import (
    AfterValidator,
    Field,
    JsonValue,
    PrivateAttr,
    ValidationError,
    model_validator,
)

from recallbench.core import ConfigError, DatasetError
from recallbench.core._model import Record, Settings
from recallbench.core._validation import problems_of
from recallbench.systems._folder import name_problem

ProfileT = TypeVar("ProfileT", bound=Record)


def _folder_safe(name: str) -> str:
    problem = name_problem(name)
    if problem is not None:
        raise ValueError(f"{problem} (the name names the folders of reports and recordings)")
    return name


ProfileName = Annotated[str, AfterValidator(_folder_safe)]
"""A profile's name: it names folders, so no separator and not ``.`` or ``..``."""


def _compiles(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as error:
        raise ValueError(f"{pattern!r} is not a regular expression: {error}") from None
    return pattern


Pattern = Annotated[str, AfterValidator(_compiles)]
"""A regular expression (Python ``re`` syntax), refused when it does not compile."""


class Install(Settings):
    npm: str | None = None
    """An npm package spec, installed with ``npm install`` into the profile's folder."""
    pip: list[str] = Field(default_factory=list)
    """pip requirements, installed into a virtual environment of their own."""
    python: str | None = None
    """The interpreter for that environment (``python3.12``); default: the current one."""
    mcp: str | None = None
    """The ``mcp`` SDK versions the server imports, as a version specifier (``"<2"``),
    installed into its environment with it. Default: read from the installed packages' own
    requirement on ``mcp`` (``mcp>=1.2`` was written against 1.x: ``mcp>=1.2,<2`` is
    installed); give it when that requirement does not say (a bare ``mcp``)."""

    @model_validator(mode="after")
    def _mcp_with_pip(self) -> Install:
        if self.mcp is not None:
            if not self.pip:
                raise ValueError("mcp applies to a Python server: give pip requirements")
            if not _SPECIFIERS.match(self.mcp):
                raise ValueError(f"mcp {self.mcp!r} is not a version specifier like '<2'")
        return self


_SPECIFIER = r"\s*(?:~=|===?|!=|<=|>=|<|>)\s*[0-9][0-9A-Za-z.*+!-]*\s*"
_SPECIFIERS = re.compile(rf"^{_SPECIFIER}(?:,{_SPECIFIER})*$")


class Server(Settings):
    transport: Literal["stdio", "streamable-http"] = "stdio"
    command: list[str] = Field(default_factory=list)
    """The command line; ``{install}`` is the installed folder, ``{workdir}`` a fresh
    temporary directory for the run's store, ``{port}`` a free local port. Required for
    stdio; for streamable-http, optional (a server already running elsewhere)."""
    url: str | None = None
    """The Streamable HTTP endpoint (``http://127.0.0.1:{port}/mcp``)."""
    env: dict[str, str] = Field(default_factory=dict)
    startup_timeout: float = Field(default=30.0, gt=0)
    call_timeout: float = Field(default=30.0, gt=0)
    concurrency: int = Field(default=1, ge=1)
    """How many tool calls the server answers at once: ``run --concurrency N`` sends up to
    min(N, this) searches at a time. 1 (the default): one call at a time."""

    @model_validator(mode="after")
    def _transport_needs(self) -> Server:
        if self.transport == "stdio" and not self.command:
            raise ValueError("a stdio server needs a command")
        if self.transport == "streamable-http" and not self.url:
            raise ValueError("a streamable-http server needs a url")
        return self


class IngestFiles(Settings):
    """Each document written as a file into a folder the server indexes, for a server that
    reads a folder and has no tool to write (a read-only indexer). The files are written
    before the server starts (an indexer that scans once at start sees them) and deleted
    when the run ends; ``[ingest.index]`` and ``[ingest.ready]`` say how it then indexes
    them. In every template ``{id}``, ``{text}``, ``{title}`` (the id when the document
    has none) and ``{metadata.KEY}`` are replaced."""

    folder: str = "{workdir}/files"
    """The folder the server indexes (give the server the same path in ``[server]``);
    ``{workdir}`` and ``{install}`` are replaced."""
    path: str = "{id}.md"
    """Each file's path under ``folder``. Characters that cannot be in a file name
    (``/``, ``\\``, NUL) in the values become ``_``."""
    body: str = "{text}\n"
    """The file's text after the front matter."""
    front_matter: dict[str, JsonValue] = Field(default_factory=dict)
    """YAML front matter (``title = "{title}"``) written between ``---`` lines before the
    body; none when empty."""


class IngestIndex(Settings):
    """How to make the server index the files once written: a tool call, a command, or
    both (the command first)."""

    tool: str | None = None
    """A tool that (re)indexes the folder, called with ``arguments``."""
    arguments: dict[str, JsonValue] = Field(default_factory=dict)
    command: list[str] = Field(default_factory=list)
    """A command line run in ``{workdir}`` with the server's ``env`` (``{workdir}``,
    ``{install}`` replaced); it must exit 0 within ``[ingest.ready] timeout``."""

    @model_validator(mode="after")
    def _something(self) -> IngestIndex:
        if self.tool is None and not self.command:
            raise ValueError("[ingest.index] needs a tool or a command")
        return self


class IngestReady(Settings):
    """Wait until the server has indexed the files: search for the last document written
    until it is among the hits."""

    query: str = "{text}"
    """The probe's query (``{id}``, ``{title}``, ``{text}`` of the last document)."""
    timeout: float = Field(default=60.0, gt=0)
    """Seconds to wait before the run fails (the server never found the document)."""
    interval: float = Field(default=0.5, gt=0)
    """Seconds between two probes."""


class Ingest(Settings):
    tool: str = ""
    """The tool that stores one document (or a batch); "" with ``files``."""
    batch_size: int = Field(default=1, ge=1)
    batch_field: str | None = None
    """When set, up to ``batch_size`` items go in one call as this argument's list."""
    item: dict[str, JsonValue] = Field(default_factory=dict)
    """The arguments (or list item) for one document: ``{id}``, ``{text}``, ``{title}`` (the
    id when the document has none, as in ``[ingest.files]``) and ``{metadata.KEY}`` are
    replaced."""
    files: IngestFiles | None = None
    """Write the documents as files instead of calling a tool (``[ingest.files]``)."""
    index: IngestIndex | None = None
    """After writing the files: a tool or command that indexes them."""
    ready: IngestReady | None = None
    """After writing (and indexing) the files: wait until a search finds them."""
    on_error: Literal["fail", "skip"] = "fail"
    """What a call the server refuses does (an error answer, such as a validation error
    for a memory it finds too generic): ``"fail"`` stops the run, naming the document (or
    the batch and its documents); ``"skip"`` goes on without those documents, and the
    report counts and lists them as not ingested (queries that need them can still miss).
    A call that times out or loses the server stops the run either way."""

    @model_validator(mode="after")
    def _tool_or_files(self) -> Ingest:
        if self.files is None:
            if not self.tool:
                raise ValueError(
                    "[ingest] needs a tool (or files, for a server that reads a folder)"
                )
            if self.index is not None or self.ready is not None:
                raise ValueError("[ingest] index and ready apply to files")
        elif self.tool:
            raise ValueError("[ingest] has a tool and files: give one")
        return self


class Search(Settings):
    tool: str
    arguments: dict[str, JsonValue]
    """``{query}`` and ``{k}`` are replaced (``{k}`` keeps its integer type)."""
    max_k: int | None = Field(default=None, ge=1)
    """The most results the tool accepts; ``{k}`` is capped at it."""


class Results(Settings):
    source: Literal["structured", "json_text", "text_blocks"] = "structured"
    """Where hits are: structured content (falling back to JSON in the first text block),
    JSON inside the first text block, or one text block per hit."""
    hits: str = ""
    """Path to the list of hits inside the JSON ("" = the JSON is the list). A path is
    dotted keys (``result.hits``); a number picks a list's item by position, as ``tags.0``
    or ``tags[0]`` (``tags[-1]`` the last); ``[]`` after a key is the list itself."""
    id: str | None = None
    """Path to a hit's id inside one hit (``match = "id"``), in the syntax of ``hits``:
    ``id``, ``metadata.doc_id``, ``tags[0]``. For an MCP server, when it leads to a list
    (``tags`` or ``tags[]``), the first item that is a dataset document's id is the hit's
    id, and hits whose id is no document's are counted as unmatched (not scored): the report
    says how many, and warns when most are."""
    text: str | None = None
    """Path to a hit's text (``match = "content"`` or ``"fuzzy"``); a list of strings is
    joined. Unset: the hit's ``text`` field."""
    score: str | None = None
    """Path to a hit's score; a hit whose value there is not a number has none."""
    match: Literal["id", "content", "fuzzy"] = "id"
    """Map a hit to a dataset document by its id field, by its text (equal once lower-cased
    and reduced to words), or by the most similar text (rapidfuzz ratio >= fuzzy_cutoff)."""
    fuzzy_cutoff: float = Field(default=90.0, ge=0, le=100)
    ranked: bool = True
    """False when the server returns hits unranked (evaluated in the order returned)."""
    error_patterns: list[Pattern] = Field(default_factory=list)
    """Regular expressions that mark a text answer as an error even if is_error is false."""
    empty: list[Pattern] = Field(default_factory=list)
    """Regular expressions for a text answer that says the server found nothing (MCP): a
    match means zero hits, not an error. memory-keeper answers ``No results found for:
    "..."`` where JSON was asked for, hence ``["^No results found"]``. ``systems init``
    proposes one from a search for a word nothing matches."""


class Reset(Settings):
    """How to empty the server's store between units (LongMemEval: one haystack per
    question) without restarting it; without ``[reset]``, each unit gets a new server."""

    tool: str | None = None
    """A tool that deletes what was ingested (basic-memory's ``delete_note`` of the notes'
    folder), called with ``arguments``."""
    arguments: dict[str, JsonValue] = Field(default_factory=dict)
    """``{ids}`` is replaced by the list of the ids ingested since the server started or
    was last emptied."""
    files: list[str] = Field(default_factory=list)
    """Glob patterns under ``{workdir}``: files (or folders) deleted between units, when no
    call is out, for a server that reads its store from them on every call and keeps
    nothing of it in memory (server-memory's JSON-lines file)."""

    @model_validator(mode="after")
    def _something(self) -> Reset:
        if self.tool is None and not self.files:
            raise ValueError("[reset] needs a tool or files")
        return self


class ReadTool(Settings):
    tool: str
    """A tool that reads memories by id (server-memory's ``open_nodes``)."""
    ids: str
    """Dotted path of the argument holding one id or a list of ids (``names``)."""


class ProxyRules(Settings):
    """How ``recallbench proxy`` reads an agent's use of the server (optional)."""

    read_tools: list[ReadTool] = Field(default_factory=list)
    """Tools whose calls count as reading memories, for read-after-search feedback."""
    id: str | None = None
    """Dotted path of a hit's id in the search answer when it differs from
    ``[results].id`` (which may name a field only recallbench's own ingestion sets)."""
    text: str | None = None
    """Dotted path of a hit's text, when it differs from ``[results].text``."""


_ITEM_PATH = re.compile(r"^(?:[^.\[\]]+(?:\[\])?)(?:\.[^.\[\]]+(?:\[\])?)*$|^$")
_PLACEHOLDERS = re.compile(r"\{([a-z_.]+)\}")


class ExtractedItems(Settings):
    """Where one kind of extracted item is in the list tool's answer, and how its fields map
    to recallbench's extraction output. Declarative, so that a new server that extracts
    needs a profile, not code."""

    KIND: ClassVar[str] = "item"
    FIELDS: ClassVar[tuple[str, ...]] = ()
    """The output fields an item can fill; the first is required."""

    items: str
    """Path to the items: dotted keys, ``[]`` after a key iterates that list
    (``result.results[].observations[]``); "" is the answer itself."""
    fields: dict[str, str]
    """Output field -> dotted path inside one item (``{description = "content"}``)."""
    where: dict[str, list[str]] = Field(default_factory=dict)
    """Keep an item only when the value at each path is one of the listed values (compared
    case-insensitively): ``{category = ["decision"]}`` makes decision observations events.
    ``{id}`` and ``{title}`` in a value are the document's."""
    unless: dict[str, list[str]] = Field(default_factory=dict)
    """Drop an item when the value at a path is one of the listed values: what another
    mapping already takes (an event is not counted again as an observation)."""

    @model_validator(mode="after")
    def _known_fields(self) -> ExtractedItems:
        if not _ITEM_PATH.match(self.items):
            raise ValueError(f"items {self.items!r} is not a path like 'a.b[].c[]'")
        unknown = sorted(set(self.fields) - set(self.FIELDS))
        if unknown:
            raise ValueError(
                f"unknown {self.KIND} field(s) {unknown} in fields (known: {list(self.FIELDS)})"
            )
        if self.FIELDS[0] not in self.fields:
            raise ValueError(f"fields needs {self.FIELDS[0]!r}: every {self.KIND} has one")
        return self


class ExtractedEvents(ExtractedItems):
    KIND = "event"
    FIELDS = ("description", "category", "actor", "due_date", "date")


class ExtractedEntities(ExtractedItems):
    KIND = "entity"
    FIELDS = ("name", "type", "mentions")


class ExtractedObservations(ExtractedItems):
    KIND = "observation"
    FIELDS = ("text", "actor")


class ExtractedConnections(ExtractedItems):
    """Links the server recorded from a document to another one; ``document`` is the
    target as the server names it, resolved to a document by its id or title (links to
    anything else are not connections)."""

    KIND = "connection"
    FIELDS = ("document", "reason", "entity")


class ExtractRead(Settings):
    tool: str
    """A tool that lists what the server extracted from one ingested document."""
    arguments: dict[str, JsonValue]
    """``{id}``, ``{title}`` and ``{ref}`` (see ``[extract] ref``) are replaced."""


class Extract(Settings):
    """Ingest, then list what the server extracted: for a server that parses what it is
    given into observations, entities or relations (basic-memory's Markdown notes), as
    opposed to one that stores it as given. Only ``recallbench extract`` uses it."""

    tool: str
    """The ingest tool, called once per document."""
    arguments: dict[str, JsonValue]
    """Its arguments: ``{id}``, ``{text}``, ``{title}``, ``{metadata.KEY}`` are replaced."""
    ref: str | None = None
    """Dotted path in the ingest answer's JSON of what the read call needs (a permalink),
    available there as ``{ref}``."""
    read: ExtractRead
    source: Literal["structured", "json_text"] = "structured"
    """Where the answers' JSON is: structured content (falling back to JSON in the first
    text block), or JSON inside the first text block."""
    events: list[ExtractedEvents] = Field(default_factory=list)
    entities: list[ExtractedEntities] = Field(default_factory=list)
    observations: list[ExtractedObservations] = Field(default_factory=list)
    connections: list[ExtractedConnections] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> Extract:
        if not (self.events or self.entities or self.observations or self.connections):
            raise ValueError(
                "[extract] maps nothing: give events, entities, observations or connections"
            )
        used = set(_PLACEHOLDERS.findall(str(self.read.arguments)))
        if "ref" in used and self.ref is None:
            raise ValueError("read.arguments use {ref} but [extract] has no ref path")
        return self


class FromFile(Record):
    """A profile that knows the file it was read from (``read_profile`` sets it), so that
    relative paths in its commands can be run from that folder."""

    _source: Path | None = PrivateAttr(default=None)

    @property
    def folder(self) -> Path:
        """The folder of the profile's file (the working folder when it was not read from
        one)."""
        return self._source.parent if self._source is not None else Path.cwd()

    @property
    def source_file(self) -> Path | None:
        """The file the profile was read from (None when it was built in code)."""
        return self._source


class Profile(Settings, FromFile):
    """An MCP server's profile (the default kind)."""

    name: ProfileName
    description: str = ""
    install: Install = Field(default_factory=Install)
    server: Server
    ingest: Ingest
    search: Search
    results: Results = Field(default_factory=Results)
    reset: Reset | None = None
    proxy: ProxyRules = Field(default_factory=ProxyRules)
    extract: Extract | None = Field(default=None, exclude=True)
    """How to use the server as an extractor (``[extract]``); None: it stores what it is
    given. Left out of a search run's recorded settings (searching never uses it)."""


def shipped_profiles() -> dict[str, Path]:
    folder = resources.files("recallbench.systems") / "profiles"
    return {
        entry.name.removesuffix(".toml"): Path(str(entry))
        for entry in folder.iterdir()
        if entry.name.endswith(".toml")
    }


def _read(path: Path) -> Any:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: profile not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def is_http_profile(path: Path) -> bool:
    data = _read(path)
    return isinstance(data, dict) and data.get("kind") == "http"


def read_profile(path: Path, model: type[ProfileT]) -> ProfileT:
    """Read and validate a profile file as ``model``; every problem is reported with its key."""
    try:
        profile = model.model_validate(_read(path))
    except ValidationError as exc:
        raise DatasetError(str(path), problems_of(exc)) from None
    if isinstance(profile, FromFile):
        profile._source = path.resolve()
    return profile


def load_profile(path: Path) -> Profile:
    """An MCP server's profile."""
    return read_profile(path, Profile)
