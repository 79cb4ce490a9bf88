"""Shadow mode of ``recallbench proxy`` (``--shadow PROFILE``): a second memory server, the
candidate, is kept in step with the agent's and answers a sample of its searches, in the
dark, so that the two rankings can be compared on real traffic.

* Writes: every call of the primary profile's ingest tool that the primary accepted goes to
  the candidate too. With the same ingest tool and item template the arguments go as they
  came; otherwise each item is read back through the primary's template (the strings that
  are exactly ``{id}``, ``{text}``, ``{title}``) and written with the candidate's.
* Searches: sampled by the sha256 of the query text (:func:`sampled`), so the same query
  is always in or always out; the candidate gets the primary's arguments (same tool and
  template) or its own template filled with the query and ``k``.
* Off the agent's path: the agent's answer is returned first; the handler only puts a job
  in a bounded queue (full: the job is dropped and counted). One task sends the jobs to the
  candidate in order (a search sees the writes before it); the pair of ranked lists is
  written to ``shadow_runs`` from the proxy's logging thread.

A side that gave no readable search (a JSON-RPC error, ``isError``, a timeout, a server
that exited) is stored with no results, a NULL latency and a short message in its error
column (``control_error``, ``treatment_error``: the exception's type and message, the
tool's error text, or ``timeout``), and counted as an error; the candidate's failures are
also said on standard error (the first of each kind) and counted in the summary line at
exit, never passed to the agent.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import anyio

from recallbench.online._feedback import result_ids
from recallbench.online._proxy import hits_of, query_path, text_id, warn
from recallbench.stats._rankdiff import rank_difference
from recallbench.systems._answers import fill, select, text_of

if TYPE_CHECKING:
    from recallbench.online._upstream import Upstream
    from recallbench.store import Store
    from recallbench.systems._profile import Ingest, Profile
    from recallbench.systems._profile import Search as SearchSpec

SHADOW_QUEUE = 1_000
"""Jobs (writes and sampled searches) waiting for the candidate, at most; beyond, dropped."""
DEFAULT_PERCENT = 10.0
"""Searches mirrored by default (the design note's 10%)."""
DEFAULT_K = 10
"""``k`` for a candidate whose template needs it when the agent's search gave none."""
ERROR_CHARS = 500
"""A side's stored error message is cut to this many characters."""
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w.]*)\}")


def sampled(query: str, percent: float) -> bool:
    """Whether a search of ``query`` is mirrored: the first 8 bytes of its sha256, modulo a
    million, below ``percent`` * 10,000 (a pure function of the text: never re-drawn)."""
    if percent >= 100:
        return True
    digest = hashlib.sha256(query.encode()).digest()
    return int.from_bytes(digest[:8], "big") % 1_000_000 < percent * 10_000


def bindings(template: Any, value: Any) -> dict[str, Any]:
    """What the placeholders of an arguments template stood for in ``value`` (the inverse
    of ``fill`` for strings that are exactly one placeholder; a one-item list template
    such as ``["{text}"]`` binds the whole list, joined)."""
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        return {} if whole is None or value is None else {whole.group(1): value}
    found: dict[str, Any] = {}
    if isinstance(template, list) and isinstance(value, list):
        if len(template) == 1 and isinstance(template[0], str):
            return bindings(template[0], text_of(value)) if value else {}
        for part, item in zip(template, value, strict=False):
            found.update(bindings(part, item))
    elif isinstance(template, dict) and isinstance(value, dict):
        for key, part in template.items():
            found.update(bindings(part, value.get(key)))
    return found


def write_calls(primary: Ingest, candidate: Ingest, arguments: Mapping[str, Any]) -> list[Any]:
    """The candidate's ingest arguments for one of the agent's writes (none when nothing in
    it has a text)."""
    if (primary.tool, primary.item, primary.batch_field) == (
        candidate.tool,
        candidate.item,
        candidate.batch_field,
    ):
        return [dict(arguments)]  # the same kind of server: the agent's call as it was
    items = arguments.get(primary.batch_field) if primary.batch_field else [arguments]
    documents = []
    for item in items if isinstance(items, list) else []:
        found = bindings(primary.item, item)
        if found.get("text") is None:
            continue
        text = text_of(found["text"])
        values = {"title": "", **found, "text": text}
        values["id"] = str(found.get("id") or text_id(text))
        documents.append(fill(candidate.item, values))
    if not candidate.batch_field:
        return documents
    size = candidate.batch_size
    return [
        {candidate.batch_field: documents[at : at + size]} for at in range(0, len(documents), size)
    ]


def search_arguments(
    primary: SearchSpec, candidate: SearchSpec, arguments: Mapping[str, Any], query: str
) -> dict[str, Any]:
    """The candidate's arguments for the agent's search of ``query``."""
    if (primary.tool, primary.arguments) == (candidate.tool, candidate.arguments):
        return dict(arguments)
    k = bindings(primary.arguments, dict(arguments)).get("k")
    k = k if isinstance(k, int) and not isinstance(k, bool) and k > 0 else DEFAULT_K
    if candidate.max_k is not None:
        k = min(k, candidate.max_k)
    filled: dict[str, Any] = fill(candidate.arguments, {"query": query, "k": k})
    return filled


@dataclass(frozen=True, slots=True)
class Mirrored:
    """One of the agent's searches, as the primary answered it."""

    query_id: str
    query: str
    arguments: Mapping[str, Any]
    answer: dict[str, Any] | None
    """The primary's answer (None: it failed)."""
    latency_ms: float
    error: str | None = None
    """Why the primary gave no answer (see :func:`describe`), when it raised."""


@dataclass(frozen=True, slots=True)
class Job:
    kind: Literal["write", "search"]
    calls: tuple[Any, ...] = ()
    """For a write: the candidate's ingest arguments, one call each."""
    search: Mirrored | None = None


@dataclass
class ShadowStats:
    writes: int = 0
    searches: int = 0
    sampled_out: int = 0
    errors: int = 0
    dropped: int = 0

    def line(self) -> str:
        return (
            f"shadow: {self.writes} writes and {self.searches} searches mirrored "
            f"({self.sampled_out} searches not sampled), {self.errors} candidate errors, "
            f"{self.dropped} dropped (queue full or at exit)"
        )


class Shadow:
    """Mirrors the agent's writes and sampled searches to ``candidate`` (see the module)."""

    def __init__(
        self,
        candidate: Upstream,
        primary: Profile,
        profile: Profile,
        percent: float = DEFAULT_PERCENT,
        store: Store | None = None,
        size: int = SHADOW_QUEUE,
    ) -> None:
        self.candidate = candidate
        self.primary = primary
        self.profile = profile
        self.percent = percent
        self.store = store
        """Where the runs go (None: nowhere, e.g. the store could not be opened)."""
        self.submit: Callable[[Callable[[], None]], None] = lambda job: job()
        """Runs the row writing; the proxy sets its logging thread's queue here."""
        self.stats = ShadowStats()
        self._query_path = query_path(primary.search.arguments)
        self._send, self._receive = anyio.create_memory_object_stream[Job](size)
        self._closed = False
        self._warned: set[str] = set()

    async def check_tools(self) -> None:
        """SystemUnderTestError when the candidate lacks its ingest or search tool."""
        from recallbench.core import SystemUnderTestError

        names = set(await self.candidate.tool_names())
        for tool in (self.profile.ingest.tool, self.profile.search.tool):
            if tool not in names:
                raise SystemUnderTestError(
                    f"--shadow {self.profile.name}: the server has no tool {tool!r}"
                )

    def observe(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        answer: dict[str, Any] | None,
        latency_ms: float,
        query_id: str | None,
        error: BaseException | None = None,
    ) -> None:
        """After the agent's call was answered (or failed with ``error``, ``answer`` None):
        queue what the candidate must see. Never raises (the agent's call is done)."""
        try:
            if tool == self.primary.ingest.tool and answer is not None:
                if not answer.get("isError"):  # the primary refused it: so does the shadow
                    calls = write_calls(self.primary.ingest, self.profile.ingest, arguments)
                    if calls:
                        self._offer(Job("write", calls=tuple(calls)))
            elif tool == self.primary.search.tool and self._query_path is not None:
                query = select(dict(arguments), ".".join(self._query_path))
                if query is None:
                    return
                if not sampled(str(query), self.percent):
                    self.stats.sampled_out += 1
                    return
                failure = None if error is None else describe(error)
                search = Mirrored(
                    query_id or "", str(query), arguments, answer, latency_ms, failure
                )
                self._offer(Job("search", search=search))
        except Exception as error:
            self._warn("observe", f"could not mirror {tool}: {type(error).__name__}: {error}")

    def _offer(self, job: Job) -> None:
        if self._closed:
            self.stats.dropped += 1
            return
        try:
            self._send.send_nowait(job)
        except anyio.WouldBlock:  # the candidate is slower than the agent: never wait
            self.stats.dropped += 1
            self._warn("full", "the shadow's queue is full: calls are not mirrored")

    async def run(self) -> None:
        """Send the queued jobs to the candidate, in order, until :meth:`close`."""
        async with self._receive:
            async for job in self._receive:
                if self._closed:
                    return
                if job.kind == "write":
                    await self._write(job.calls)
                elif job.search is not None:
                    await self._search(job.search)

    def close(self) -> None:
        """No more jobs; those still queued are counted as dropped. Calling it again does
        nothing."""
        if self._closed:
            return
        self._closed = True
        self.stats.dropped += self._send.statistics().current_buffer_used
        self._send.close()

    async def _call(self, tool: str, arguments: Any) -> dict[str, Any]:
        import mcp_types as types

        if self.candidate.lost.is_set():
            raise RuntimeError(f"{self.profile.name} exited")
        params = types.CallToolRequestParams(name=tool, arguments=arguments)
        return await self.candidate.request(types.CallToolRequest(params=params))

    async def _write(self, calls: tuple[Any, ...]) -> None:
        self.stats.writes += 1
        for arguments in calls:
            try:
                answer = await self._call(self.profile.ingest.tool, arguments)
                if answer.get("isError"):
                    raise RuntimeError(text_of([c.get("text") for c in answer.get("content", [])]))
            except Exception as error:
                self.stats.errors += 1
                self._warn("write", f"the candidate failed a write: {_describe(error)}")

    async def _search(self, search: Mirrored) -> None:
        self.stats.searches += 1
        profile = self.profile
        arguments = search_arguments(
            self.primary.search, profile.search, search.arguments, search.query
        )
        started = time.perf_counter()
        answer: dict[str, Any] | None
        failure: str | None = None
        try:
            answer = await self._call(profile.search.tool, arguments)
        except Exception as error:
            answer = None
            failure = describe(error)
            self._warn("search", f"the candidate failed a search: {_describe(error)}")
        latency_ms = (time.perf_counter() - started) * 1000
        if answer is None or answer.get("isError"):
            self.stats.errors += 1
        if self.store is not None and not self._closed:
            self.submit(lambda: self._record(search, answer, latency_ms, failure))

    def _record(
        self,
        search: Mirrored,
        answer: dict[str, Any] | None,
        latency_ms: float,
        failure: str | None = None,
    ) -> None:
        """In the proxy's logging thread: parse both answers, write the pair (``failure``:
        why the candidate gave no answer, when it raised)."""
        control = _ids(self.primary, search.answer)
        treatment = _ids(self.profile, answer)
        run: dict[str, Any] = {
            "query_id": search.query_id,
            "control_results": control or [],
            "treatment_results": treatment or [],
            "control_latency_ms": None if control is None else search.latency_ms,
            "treatment_latency_ms": None if treatment is None else latency_ms,
            "control_error": None if control is not None else _error(search.answer, search.error),
            "treatment_error": None if treatment is not None else _error(answer, failure),
        }
        if control is not None and treatment is not None:
            k = max(len(control), len(treatment), 1)
            difference = rank_difference(search.query_id, control, treatment, k)
            run["kendall_tau"] = difference.kendall_tau
            run["jaccard"] = difference.jaccard
            run["top1_changed"] = difference.top1_changed
        assert self.store is not None
        self.store.log_shadow_run(run)

    def _warn(self, kind: str, message: str) -> None:
        """The first message of each kind (the rest are counted in the summary)."""
        if kind not in self._warned:
            self._warned.add(kind)
            warn(message)


def _ids(profile: Profile, answer: dict[str, Any] | None) -> list[str] | None:
    """Ranked ids of a search answer (hits without an id are skipped); None when it is not
    a readable search."""
    if answer is None:
        return None
    hits = hits_of(profile, answer, quiet=True)
    if hits is None:
        return None
    return list(result_ids(hit_id for hit_id, _ in hits))


def _describe(error: BaseException) -> str:
    message = getattr(getattr(error, "error", None), "message", None) or str(error)
    return f"{type(error).__name__}: {message}"


def describe(error: BaseException) -> str:
    """A short message for a failed call: ``timeout`` for the upstream's call timeout,
    otherwise the exception's type and message."""
    from mcp_types import REQUEST_TIMEOUT

    inner = getattr(error, "error", None)
    if isinstance(error, TimeoutError) or getattr(inner, "code", None) == REQUEST_TIMEOUT:
        return "timeout"
    return _short(_describe(error))


def _error(answer: dict[str, Any] | None, failure: str | None) -> str:
    """What a side that gave no readable search stores as its error: the call's failure,
    or the text of an ``isError`` answer, or that the answer could not be read as a search
    (with its text: a profile's error pattern matched it, or its hits were unreadable)."""
    if failure is not None:
        return failure
    if answer is None:
        return "no answer"
    content = answer.get("content")
    texts = (
        [c.get("text") for c in content if isinstance(c, dict)] if isinstance(content, list) else []
    )
    text = text_of([t for t in texts if isinstance(t, str)]).strip()
    if answer.get("isError"):
        return _short(text or "isError")
    return _short(f"not a readable search: {text}" if text else "not a readable search")


def _short(message: str) -> str:
    return message if len(message) <= ERROR_CHARS else message[: ERROR_CHARS - 1] + "…"
