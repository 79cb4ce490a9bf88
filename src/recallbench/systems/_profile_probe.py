"""Try the guessed tools on the running server (``systems init``): ingest a few distinct
documents, search for one of them, and find it in the answer.

Candidates are tried best first: up to two ingest tools, up to four search tools, each
with its argument variants (an answer that names the document only in prose tries the
tool's boolean options for structured output first); a search that finds the document is
confirmed with a second one. Every attempt that fails leaves a reason. Then two searches
for words nothing matches: a text answer where JSON was found gives the ``[results] empty``
pattern. Last the reset candidates: a reset works when a search no longer finds what was
ingested.
"""

from __future__ import annotations

import asyncio
import random
import string
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import JsonValue

from recallbench.core import Document, SystemUnderTestError
from recallbench.systems._answers import answer_texts, fill, raw_hits
from recallbench.systems._mcp import MCPSystem
from recallbench.systems._profile import Ingest, Profile, Search, Server
from recallbench.systems._profile_guess import IngestGuess, ResetGuess, SearchGuess, ToolGuesses
from recallbench.systems._profile_locate import (
    Located,
    empty_pattern,
    locate,
    shown,
    unreadable,
)

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

Outcome = Literal["found", "failed", "missed", "unreadable"]
"""What one probing search came to: the document read from the answer, the call failed,
the answer does not hold the document, or holds it in a shape that cannot be read."""


def nonsense_word() -> str:
    """A word no document holds (the probe of how the server says it found nothing)."""
    return "zq" + "".join(random.choices(string.ascii_lowercase, k=8))


def probe_documents(attempt: int) -> list[Document]:
    """Three documents with ids ``probe-doc-ATTEMPT-N``, each with a rare word of its own.
    The ids are 13 characters: a server that takes the id as a title and wants titles of
    10 characters or more (@ai-devkit/memory) accepts them."""
    return [
        Document(
            id=f"probe-doc-{attempt}-{n + 1}",
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
    empty: list[str] = field(default_factory=list)
    """``[results] empty``: how the server says it found nothing, when it says so in text."""
    nothing: str | None = None
    """What a search for a word nothing matches showed (for the profile's comments)."""
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
        values = [{"id": d.id, "text": d.text, "title": d.title} for d in documents]
        items = [fill(guess.item, document) for document in values]
        calls = [{guess.batch_field: items}] if guess.batch_field else items
        for arguments in calls:
            if await self.call(guess.tool.name, arguments) is None:
                return False
        return True

    async def search(
        self, guess: SearchGuess, arguments: dict[str, JsonValue], document: Document
    ) -> tuple[Located | None, Outcome]:
        """Where ``document`` is in the answer to a search for its word, and the outcome."""
        filled = fill(arguments, {"query": word_of(document), "k": SEARCH_K})
        why = None
        for attempt in range(RETRIES):
            answer = await self.call(guess.tool.name, filled)
            if answer is None:
                return None, "failed"
            found = locate(answer, document)
            if found is not None:
                return found, "found"
            why = unreadable(answer, document)
            if why is not None:
                break  # it is there: waiting will not make it readable
            if attempt + 1 < RETRIES:
                await asyncio.sleep(0.5 * (attempt + 1))
        said = (
            f"{why} (answer: {shown(answer)!r})"
            if why
            else f"not in the answer ({shown(answer)!r})"
        )
        self.probed.reasons.append(f"{guess.tool.name} {filled}: {document.id} {said}")
        return None, "unreadable" if why else "missed"

    async def pair(self, ingest: IngestGuess, searches: list[SearchGuess], attempt: int) -> bool:
        documents = probe_documents(attempt)
        if not await self.ingest(ingest, documents):
            return False
        for search in searches:
            template = search.template
            for arguments in (template.arguments, *template.switches, *template.variants):
                found, outcome = await self.search(search, arguments, documents[0])
                if found is None:
                    if outcome == "missed":
                        break  # the call worked and missed: other values will not help
                    continue  # failed, or in prose: another option may do
                again, _ = await self.search(search, arguments, documents[1])
                if again is None or not again.same_shape(found):
                    self.probed.reasons.append(
                        f"{search.tool.name}: found {documents[0].id} but not {documents[1].id}"
                    )
                    continue
                self.probed.ingest, self.probed.search = ingest, search
                self.probed.arguments, self.probed.located = dict(arguments), found
                await self.nothing(search, arguments, found)
                await self.reset(documents, search, arguments, found)
                return True
        return False

    async def nothing(
        self, search: SearchGuess, arguments: dict[str, JsonValue], located: Located
    ) -> None:
        """Search twice for a word nothing matches: when the answer is text where hits
        come as JSON, keep the start the two answers share as the ``empty`` pattern."""
        if located.source == "text_blocks":
            return  # a block saying "nothing" reads as one hit that maps to no document
        answers = []
        for word in (nonsense_word(), nonsense_word()):
            filled = fill(arguments, {"query": word, "k": SEARCH_K})
            answer = await self.call(search.tool.name, filled)
            if answer is None:
                self.probed.nothing = (
                    f"a search for a word nothing matches failed ({self.probed.reasons[-1]}): "
                    "queries that find nothing will be recorded as failed"
                )
                return
            try:
                raw_hits(answer, located.results(), search.tool.name)
            except SystemUnderTestError:
                answers.append((word, "\n".join(answer_texts(answer))))
                continue
            self.probed.nothing = "not needed (a search for a word nothing matches answered JSON)"
            return
        pattern = empty_pattern(answers)
        seen = " ".join(answers[0][1].split())[:80]
        if pattern is None:
            self.probed.nothing = (
                f"a search for {answers[0][0]!r} answered {seen!r}, with no stable start to "
                "match: queries that find nothing will fail; set [results] empty"
            )
            return
        self.probed.empty = [pattern]
        self.probed.nothing = (
            f"answers matching {pattern!r} are no hits (a search for {answers[0][0]!r} "
            f"answered {seen!r}; sure)"
        )

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
