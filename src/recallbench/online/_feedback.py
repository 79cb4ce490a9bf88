"""Implicit feedback inferred from one agent session's searches and reads (the MCP proxy's
rules), as functions of the calls alone: no clock, no I/O, so that they can be tested on
synthetic sequences.

A *session* is one client connection of the proxy (the whole process for stdio; one
``Mcp-Session-Id`` for Streamable HTTP). A *search* is a successful call of the profile's
search tool whose arguments hold the query; its *results* are the ids of the hits in the
order returned, duplicates and hits without an id left out (a profile without an id path
identifies a hit by its text), and a result's *rank* is its 1-based position in that list.
An answer that is an error (``isError``, a profile error pattern, no JSON where JSON was
expected) is not a search: it is not logged and changes nothing below. Times are seconds
on a monotonic clock, taken when a call starts.

- **read_after_search**: a successful call of a read tool (``[proxy].read_tools``) gives,
  for each id it names that an earlier search of the session returned, one event on the
  most recent search that returned it, with the id's rank in that search. Reading the same
  id again for the same search gives no second event; ids no search returned give none.
- **re_search**: a search that starts at most ``RE_SEARCH_WINDOW`` (120 s) after the start
  of the session's previous search and whose query is a near duplicate of that search's
  query gives one event on the previous search (no id, no rank). Near duplicate: the same
  normalised text (lower-cased words, punctuation dropped), or rapidfuzz
  ``fuzz.token_set_ratio`` of the normalised texts >= ``NEAR_DUPLICATE`` (85). (Token-set
  ratio is 100 when the words of one query are a subset of the other's: "postgres" then
  "postgres ledger" is a re-search.)
- **scroll_past**: a search is *closed* when the session's next search starts or the
  session ends; each of its results that was not read by then (no read_after_search on
  it) gives one event with its rank. A read that comes after the search was closed still
  gives its read_after_search; the scroll_past already given stands.
- Order of the events of one search: re_search on the previous search, then its
  scroll_past events by rank.

``memory_validate`` without a query id refers to the most recent search that returned the
id (:meth:`SessionFeedback.latest_search_of`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from recallbench.store._telemetry import FeedbackKind
from recallbench.systems._answers import normalise

RE_SEARCH_WINDOW = 120.0
"""Seconds between the starts of two searches within which a near duplicate is a
re-search."""
NEAR_DUPLICATE = 85.0
"""The rapidfuzz token-set ratio from which two queries are near duplicates."""


@dataclass(frozen=True, slots=True)
class Search:
    """One search of a session, as the rules see it."""

    query_id: str
    text: str
    results: tuple[str, ...]
    """Ids, best first (rank = position + 1)."""
    at: float
    """When the call started (seconds, monotonic)."""


@dataclass(frozen=True, slots=True)
class Feedback:
    """One inferred event, to be logged on ``query_id``."""

    kind: FeedbackKind
    query_id: str
    doc_id: str | None = None
    rank: int | None = None


def is_near_duplicate(first: str, second: str) -> bool:
    """The same normalised text, or a token-set ratio >= NEAR_DUPLICATE."""
    from rapidfuzz import fuzz

    a, b = normalise(first), normalise(second)
    return a == b or fuzz.token_set_ratio(a, b) >= NEAR_DUPLICATE


def re_search(previous: Search | None, current: Search) -> list[Feedback]:
    """The re_search event on ``previous`` if ``current`` repeats it in time."""
    if previous is None or not 0 <= current.at - previous.at <= RE_SEARCH_WINDOW:
        return []
    if not is_near_duplicate(previous.text, current.text):
        return []
    return [Feedback("re_search", previous.query_id)]


def scroll_past(search: Search, read: Collection[str]) -> list[Feedback]:
    """A scroll_past event for each result of ``search`` not in ``read``, by rank."""
    return [
        Feedback("scroll_past", search.query_id, doc_id, rank)
        for rank, doc_id in enumerate(search.results, start=1)
        if doc_id not in read
    ]


def result_ids(values: Iterable[object]) -> tuple[str, ...]:
    """Hit ids as logged: strings, in order, the first of duplicates, no missing ids."""
    seen: dict[str, None] = {}
    for value in values:
        if value is not None and value != "":
            seen.setdefault(str(value), None)
    return tuple(seen)


PRUNE_AT = 1024
"""Searches remembered before those that no result points to any more are forgotten (a
read can only be credited to the most recent search that returned the id)."""


class SessionFeedback:
    """The rules applied to one session's calls, in the order they complete."""

    def __init__(self) -> None:
        self._last: Search | None = None
        """The session's most recent search."""
        self._open = False
        """Whether the most recent search is still open (not scrolled past yet)."""
        self._latest: dict[str, tuple[str, int]] = {}
        """Id -> (query id, rank) of the most recent search that returned it."""
        self._read: dict[str, set[str]] = {}
        """Query id -> the ids read from its results."""

    def search(self, search: Search) -> list[Feedback]:
        """Record a search; the events it causes on the previous one."""
        events = re_search(self._last, search) + self._close()
        self._last, self._open = search, True
        self._read.setdefault(search.query_id, set())
        for rank, doc_id in enumerate(search.results, start=1):
            self._latest[doc_id] = (search.query_id, rank)
        if len(self._read) > PRUNE_AT:  # a long session: forget searches no id points to
            live = {query_id for query_id, _ in self._latest.values()}
            self._read = {q: read for q, read in self._read.items() if q in live}
        return events

    def read(self, ids: Iterable[str]) -> list[Feedback]:
        """Record a read of ``ids``; its read_after_search events."""
        events = []
        for doc_id in dict.fromkeys(ids):
            found = self._latest.get(doc_id)
            if found is None:
                continue
            query_id, rank = found
            read = self._read.setdefault(query_id, set())
            if doc_id not in read:
                read.add(doc_id)
                events.append(Feedback("read_after_search", query_id, doc_id, rank))
        return events

    def end(self) -> list[Feedback]:
        """The session is over: the events that closing its last search causes."""
        return self._close()

    def latest_search_of(self, doc_id: str) -> str | None:
        """The query id of the most recent search that returned ``doc_id``."""
        found = self._latest.get(doc_id)
        return found[0] if found else None

    def _close(self) -> list[Feedback]:
        if self._last is None or not self._open:
            return []
        self._open = False
        return scroll_past(self._last, self._read.get(self._last.query_id, set()))
