"""Try the guessed tools on the running server (``systems init``): ingest a few distinct
documents, search for one of them, and find it in the answer.

Candidates are tried best first: up to two ingest tools, up to four search tools, each
with its argument variants; a search that finds the document is confirmed with a second
one. Every attempt that fails leaves a reason. Then the reset candidates: a reset works
when a search no longer finds what was ingested.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from recallbench.core import Document
from recallbench.systems._answers import fill
from recallbench.systems._mcp import MCPSystem
from recallbench.systems._profile import Ingest, Profile, Search, Server
from recallbench.systems._profile_guess import IngestGuess, ResetGuess, SearchGuess, ToolGuesses
from recallbench.systems._profile_locate import Located, locate, shown

WORDS = (
    "quokka", "saffron", "obsidian", "marzipan", "tundra", "pelican",
    "zeppelin", "basalt", "juniper", "narwhal", "cobalt", "lantern",
)  # fmt: skip
"""Rare words, one per probe document, so that a search for one finds that one."""
TEXTS = (
    "The {word} ledger was moved to a new database in March.",
    "Deploys of the {word} service are frozen on Fridays.",
    "Priya wants {word} release notes to carry a test plan.",
)
MAX_INGEST = 2
MAX_SEARCH = 4
SEARCH_K = 10
RETRIES = 3
"""Searches for the first document before giving up on a search tool (a server that
indexes in the background may need a moment)."""


def probe_documents(attempt: int) -> list[Document]:
    """Three documents with ids ``probe-ATTEMPT-N``, each with a rare word of its own."""
    return [
        Document(
            id=f"probe-{attempt}-{n + 1}",
            text=text.format(word=WORDS[(3 * attempt + n) % len(WORDS)]),
        )
        for n, text in enumerate(TEXTS)
    ]


def word_of(document: Document) -> str:
    """The rare word a probe document was given (what a search for it asks)."""
    return next(word for word in WORDS if word in document.text)


@dataclass
class Probed:
    """What worked, and why the rest did not."""

    ingest: IngestGuess | None = None
    search: SearchGuess | None = None
    arguments: dict[str, JsonValue] = field(default_factory=dict)
    """The search arguments that found the documents (the template or a variant)."""
    located: Located | None = None
    reset: ResetGuess | None = None
    reasons: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        """An ingest tool and a search tool that work together were found."""
        return self.located is not None


def provisional(name: str, server: Server, ingest: IngestGuess, search: SearchGuess) -> Profile:
    """A profile that starts the server with these tools (for the probing calls)."""
    return Profile(
        name=name,
        server=server,
        ingest=Ingest(tool=ingest.tool.name, item=ingest.item),
        search=Search(tool=search.tool.name, arguments=search.template.arguments),
    )


class _Prober:
    def __init__(self, system: MCPSystem, probed: Probed, resets: list[ResetGuess]) -> None:
        self.system = system
        self.probed = probed
        self.resets = resets

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The tool's answer, or None with the reason kept (restarting a broken server)."""
        try:
            return await self.system.call_tool(tool, arguments)
        except Exception as error:
            self.probed.reasons.append(f"{tool}: {error or type(error).__name__}")
            if self.system.needs_restart:
                await self.system.setup([])
            return None

    async def ingest(self, guess: IngestGuess, documents: list[Document]) -> bool:
        items = [fill(guess.item, {"id": d.id, "text": d.text, "title": d.id}) for d in documents]
        calls = [{guess.batch_field: items}] if guess.batch_field else items
        for arguments in calls:
            if await self.call(guess.tool.name, arguments) is None:
                return False
        return True

    async def search(
        self, guess: SearchGuess, arguments: dict[str, JsonValue], document: Document
    ) -> tuple[Located | None, bool]:
        """Where ``document`` is in the answer to a search for its word; and whether the
        call itself failed."""
        filled = fill(arguments, {"query": word_of(document), "k": SEARCH_K})
        for attempt in range(RETRIES):
            answer = await self.call(guess.tool.name, filled)
            if answer is None:
                return None, True
            found = locate(answer, document)
            if found is not None:
                return found, False
            if attempt + 1 < RETRIES:
                await asyncio.sleep(0.5 * (attempt + 1))
        self.probed.reasons.append(
            f"{guess.tool.name} {filled}: {document.id} not in the answer ({shown(answer)!r})"
        )
        return None, False

    async def pair(self, ingest: IngestGuess, searches: list[SearchGuess], attempt: int) -> bool:
        documents = probe_documents(attempt)
        if not await self.ingest(ingest, documents):
            return False
        for search in searches:
            for arguments in (search.template.arguments, *search.template.variants):
                found, failed = await self.search(search, arguments, documents[0])
                if found is None:
                    if failed:
                        continue
                    break  # the call worked and missed: other values will not help
                again, _ = await self.search(search, arguments, documents[1])
                if again is None or not again.same_shape(found):
                    self.probed.reasons.append(
                        f"{search.tool.name}: found {documents[0].id} but not {documents[1].id}"
                    )
                    continue
                self.probed.ingest, self.probed.search = ingest, search
                self.probed.arguments, self.probed.located = dict(arguments), found
                await self.reset(documents, search, arguments, found)
                return True
        return False

    async def reset(
        self,
        documents: list[Document],
        search: SearchGuess,
        arguments: dict[str, JsonValue],
        located: Located,
    ) -> None:
        for guess in self.resets:
            ids = [document.id for document in documents]
            if await self.call(guess.tool.name, fill(guess.arguments, {"ids": ids})) is None:
                continue
            filled = fill(arguments, {"query": word_of(documents[0]), "k": SEARCH_K})
            answer = await self.call(search.tool.name, filled)
            if answer is not None and locate(answer, documents[0]) is None:
                self.probed.reset = guess
                return
            self.probed.reasons.append(f"reset {guess.tool.name}: the documents are still found")


async def probe(name: str, server: Server, guesses: ToolGuesses) -> Probed:
    """Try the candidates on a running server (started once, restarted if it breaks)."""
    probed = Probed()
    if not guesses.ingest:
        probed.reasons.append("no tool takes a text to store (a string field named like content)")
    if not guesses.search:
        probed.reasons.append("no tool takes a query string (a string field named like query)")
    if not (guesses.ingest and guesses.search):
        return probed
    searches = guesses.search[:MAX_SEARCH]
    system = MCPSystem(provisional(name, server, guesses.ingest[0], searches[0]))
    prober = _Prober(system, probed, guesses.reset[:2])
    try:
        await system.setup([])
        for attempt, ingest in enumerate(guesses.ingest[:MAX_INGEST]):
            if await prober.pair(ingest, searches, attempt):
                break
    finally:
        await system.close()
    return probed
