"""The proxy's session logic, whichever way it serves (the SDK's server,
:mod:`recallbench.online._proxy`; the relay of JSON-RPC lines,
:mod:`recallbench.online._relayed`): what it makes of the agent's calls, session by session.

Calls of the profile's search tool are logged (query, ranked ids, texts, latency, tool,
the session's id) with :class:`recallbench.telemetry.TelemetryLogger`, and the feedback of
:mod:`recallbench.online._feedback` is inferred from searches and reads. The query is the
argument where ``[search].arguments`` puts ``{query}``; hits are read as
:mod:`recallbench.online._hits` reads them. Without a profile (``-- COMMAND``) nothing is
logged. Logging can never fail a call: its errors go to standard error. It happens in a
thread of its own (:class:`~recallbench.online._log_thread.LogThread`), in the order the
calls were answered, after the answer has gone back.

With ``--shadow``, each answered call is also handed to the shadow, an observer of the
sessions (:class:`~recallbench.online._session_observer.SessionObserver`: a put in a
bounded queue, a few microseconds) which mirrors writes and sampled searches to a candidate
server; the search's ``query_id`` is shared with ``shadow_runs``.

The proxy's own tools are answered here, never forwarded: ``memory_validate``
(:data:`VALIDATE_TOOL`, with ``--validate-tool``) records whether a memory a search
returned helped; with ``--outcome-tool``, :data:`OUTCOME_TOOL` records the task's outcome
(``success``, a number ``outcome``, a ``note``) for the current session, or the one it
names, in the store's session outcomes with source ``proxy`` (issue 20, design note
section 5.4).

Sessions: one per connection: the whole process over stdio; over Streamable HTTP, one per
``Mcp-Session-Id`` (requests without one share a session). A session ends when the proxy
stops, or after ``SESSION_IDLE`` seconds without a request (HTTP).
"""

from __future__ import annotations

import functools
import math
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from recallbench.core import SystemUnderTestError
from recallbench.online._feedback import Feedback, Search, SessionFeedback, result_ids
from recallbench.online._hits import hits_of, is_error, query_path
from recallbench.online._log_thread import LogThread
from recallbench.online._wire import warn
from recallbench.systems._answers import select
from recallbench.systems._profile import Profile

if TYPE_CHECKING:
    from recallbench.online._session_observer import SessionObserver
    from recallbench.online._shadow_absent import AbsentShadow
    from recallbench.telemetry import TelemetryLogger, TelemetryStats

VALIDATE_TOOL = "memory_validate"
SESSION_IDLE = 1800.0
"""Seconds without a request after which an HTTP session ends (its last search closes)."""
CLOSE_TIMEOUT = 5.0
"""Seconds the proxy waits at exit for the store to take the queued records."""

OUTCOME_TOOL = "recallbench_record_outcome"
OUTCOME_SCHEMA: dict[str, Any] = {
    "name": OUTCOME_TOOL,
    "description": (
        "Record how the task of this session went: success (true or false) and/or a "
        "numeric outcome, with an optional note. It is recorded to evaluate the memory "
        "system; it changes nothing in memory."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "success": {"type": "boolean", "description": "Whether the task succeeded."},
            "outcome": {"type": "number", "description": "A score of the outcome."},
            "note": {"type": "string", "description": "Why, in a few words."},
            "session_id": {
                "type": ["string", "null"],
                "description": "The session it is about (default: this one).",
            },
        },
    },
}

VALIDATE_SCHEMA: dict[str, Any] = {
    "name": VALIDATE_TOOL,
    "description": (
        "Tell whether a memory returned by a search helped with the task. This feedback "
        "is recorded to evaluate the memory system; it changes nothing in memory."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "The memory's id, as the search gave it."},
            "useful": {"type": "boolean", "description": "Whether it was useful."},
            "query_id": {
                "type": ["string", "null"],
                "description": "The search it came from (default: the latest that returned it).",
            },
        },
        "required": ["id", "useful"],
    },
}


@dataclass(frozen=True, slots=True)
class Watch:
    """What the proxy recognises in calls, from a profile (nothing without one)."""

    name: str
    search_tool: str | None = None
    query_path: tuple[str, ...] | None = None
    """Where the search arguments hold the query (where the template has ``{query}``)."""
    profile: Profile | None = None
    read_tools: Mapping[str, str] = field(default_factory=dict)
    """Read tool -> dotted path of its id argument."""

    @classmethod
    def of(cls, profile: Profile | None, name: str) -> Watch:
        if profile is None:
            return cls(name)
        return cls(
            name=profile.name,
            search_tool=profile.search.tool,
            query_path=query_path(profile.search.arguments),
            profile=profile,
            read_tools={read.tool: read.ids for read in profile.proxy.read_tools},
        )


def read_ids(value: Any) -> list[str]:
    """One id or a list of ids from a read tool's argument, as strings."""
    values = value if isinstance(value, list) else [value]
    return [str(item) for item in values if item is not None and not isinstance(item, dict)]


@dataclass
class ProxySession:
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    rules: SessionFeedback = field(default_factory=SessionFeedback)
    seen: float = field(default_factory=time.monotonic)


def telemetry_summary(stats: TelemetryStats) -> str:
    """The line the proxy prints at exit: every record accounted for."""
    full = stats.overflowed
    refused = stats.dropped - full
    line = (
        f"telemetry: {stats.written} written, {full} dropped (queue full), "
        f"{stats.lost} lost at exit (store unreachable)"
    )
    if refused:
        line += f", {refused} dropped (refused by the store or malformed; see above)"
    return line


class ProxySessions:
    """The agent's sessions and what is made of their calls: searches and feedback logged
    to ``telemetry``, the proxy's own tools, the shadow told (see the module)."""

    def __init__(
        self,
        watch: Watch,
        telemetry: TelemetryLogger | None,
        validate_tool: bool = False,
        shadow: SessionObserver | None = None,
        outcome_tool: bool = False,
        store_url: str | None = None,
        workspace: str = "default",
        telemetry_off: str | None = None,
        absent: AbsentShadow | None = None,
    ) -> None:
        self.watch = watch
        self.telemetry = telemetry
        self.validate_tool = validate_tool
        self.outcome_tool = outcome_tool
        """Serve :data:`OUTCOME_TOOL` (answered by the proxy, never forwarded)."""
        self.store_url = store_url
        self.workspace = workspace
        """Where session outcomes go (the telemetry's store)."""
        self.sessions: dict[str | None, ProxySession] = {}
        self.observer = LogThread()
        self.shadow = shadow
        """The candidate of ``--shadow``: its rows are written by the logging thread."""
        if shadow is not None:
            shadow.attach(self.observer.submit)
        self.absent = absent
        """The ``--shadow`` candidate that did not start (served without it, counted)."""
        self.telemetry_off = telemetry_off
        """Why the store could not be opened (telemetry is None): records are counted."""
        self.not_stored = 0
        """Records not stored because telemetry is off (:attr:`telemetry_off`)."""
        self._count_lock = threading.Lock()

    def check_names(self, tools: list[str]) -> None:
        """Refuse to serve (SystemUnderTestError) when the server's tools (``tools``, their
        names) lack the profile's search tool, or hold one of the proxy's own."""
        names = set(tools)
        if self.watch.search_tool is not None and self.watch.search_tool not in names:
            raise SystemUnderTestError(
                f"{self.watch.name}: the server has no tool {self.watch.search_tool!r} "
                f"(it has {sorted(names)})"
            )
        if self.validate_tool and VALIDATE_TOOL in names:
            raise SystemUnderTestError(
                f"{self.watch.name}: the server has a tool {VALIDATE_TOOL!r} already; "
                "drop --validate-tool"
            )
        if self.outcome_tool and OUTCOME_TOOL in names:
            raise SystemUnderTestError(
                f"{self.watch.name}: the server has a tool {OUTCOME_TOOL!r} already; "
                "drop --outcome-tool"
            )

    def own_tools(self) -> list[dict[str, Any]]:
        """The proxy's own tools served, as ``tools/list`` entries: they end the list."""
        own = [VALIDATE_SCHEMA] if self.validate_tool else []
        own += [OUTCOME_SCHEMA] if self.outcome_tool else []
        return own

    def answer_own(
        self, session: ProxySession, name: str, arguments: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """The result of a call of one of the proxy's own tools; None when ``name`` is not
        one of those served (the call is forwarded)."""
        if self.validate_tool and name == VALIDATE_TOOL:
            self.observer.wait()  # the searches it may refer to are logged first
            return self._validate(session, arguments)
        if self.outcome_tool and name == OUTCOME_TOOL:
            return self._outcome(session, arguments)
        return None

    def observe_safely(
        self,
        session: ProxySession,
        tool: str,
        arguments: Mapping[str, Any],
        answer: dict[str, Any],
        clock: float,
        latency_ms: float,
        query_id: str,
    ) -> None:
        """In the logging thread: log an answered call (its errors are warnings)."""
        try:
            self._observe(session, tool, arguments, answer, clock, latency_ms, query_id)
        except Exception as error:  # logging must never fail the agent's call
            warn(f"could not log the call of {tool}: {type(error).__name__}: {error}")

    # --- sessions ----------------------------------------------------------------------

    def session_of(self, key: str | None) -> ProxySession:
        """The session of ``key`` (``Mcp-Session-Id``; None over stdio), started if new;
        sessions idle for :data:`SESSION_IDLE` end."""
        now = time.monotonic()
        for other, other_session in list(self.sessions.items()):
            if other != key and now - other_session.seen > SESSION_IDLE:
                # after the calls already queued: the session's rules are the observer's
                self.observer.submit(functools.partial(self._end, self.sessions.pop(other)))
        session = self.sessions.get(key)
        if session is None:
            session = self.sessions[key] = ProxySession()
        session.seen = now
        return session

    def finish(self) -> None:
        """The proxy stops: end every session (closing their last searches), then write
        what is queued. Calling it again does nothing."""
        if self.shadow is not None:
            self.shadow.close()  # no row after the logging thread has stopped
        self.observer.stop()  # every answered call logged first
        shadow, self.shadow = self.shadow, None
        if shadow is not None:
            shadow.finish()  # the pairs of the last batch, and its exit line
        elif self.absent is not None:
            warn(self.absent.line())
            self.absent = None
        while self.sessions:
            _, session = self.sessions.popitem()
            self._end(session)
        telemetry, self.telemetry = self.telemetry, None
        if self.telemetry_off is not None:
            warn(
                f"telemetry: off (the store could not be opened): {self.not_stored} records "
                "not stored"
            )
            self.telemetry_off = None
        if telemetry is None:
            return
        try:
            telemetry.close(CLOSE_TIMEOUT)
            stats = telemetry.stats
        except Exception as error:
            warn(f"could not write the telemetry: {error}")
            return
        warn(telemetry_summary(stats))

    def _end(self, session: ProxySession) -> None:
        try:
            self._log_feedback(session, session.rules.end())
        except Exception as error:
            warn(f"could not log the end of session {session.id}: {error}")

    # --- what is logged ----------------------------------------------------------------

    def _observe(
        self,
        session: ProxySession,
        tool: str,
        arguments: Mapping[str, Any],
        answer: dict[str, Any],
        clock: float,
        latency_ms: float,
        query_id: str | None = None,
    ) -> None:
        watch = self.watch
        if tool == watch.search_tool and watch.query_path is not None:
            query = select(dict(arguments), ".".join(watch.query_path))
            hits = self._hits(answer)
            if query is None or hits is None:
                return
            ids = result_ids(hit_id for hit_id, _ in hits)
            texts = {hit_id: text for hit_id, text in reversed(hits) if hit_id and text}
            search = Search(query_id or uuid.uuid4().hex, str(query), ids, clock)
            events = session.rules.search(search)
            if self.telemetry is None:
                self._not_stored(1)
            else:
                self.telemetry.log_search(
                    search.text,
                    list(ids),
                    session_id=session.id,
                    tool=tool,
                    latency_ms=latency_ms,
                    texts={hit_id: texts[hit_id] for hit_id in ids if hit_id in texts},
                    query_id=search.query_id,
                )
            self._log_feedback(session, events)
        elif tool in watch.read_tools and not is_error(answer):
            read = read_ids(select(dict(arguments), watch.read_tools[tool]))
            self._log_feedback(session, session.rules.read(read))

    def _hits(self, answer: dict[str, Any]) -> list[tuple[str | None, str]] | None:
        """(id, text) of each hit of a search answer; None when the answer is an error."""
        profile = self.watch.profile
        return None if profile is None else hits_of(profile, answer)

    def _not_stored(self, records: int) -> None:
        """Count records that telemetry, off because the store could not be opened, loses."""
        if self.telemetry_off is not None and records:
            with self._count_lock:
                self.not_stored += records

    def _log_feedback(self, session: ProxySession, events: list[Feedback]) -> None:
        if self.telemetry is None:
            self._not_stored(len(events))
            return
        for event in events:
            self.telemetry.log_feedback(
                event.query_id,
                event.kind,
                doc_id=event.doc_id,
                rank=event.rank,
                session_id=session.id,
            )

    # --- the proxy's own tools ---------------------------------------------------------

    def _validate(self, session: ProxySession, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """``memory_validate``: a validation of the id for the given (or latest) search."""
        doc_id, useful, query_id = (arguments.get(k) for k in ("id", "useful", "query_id"))
        if isinstance(doc_id, int) and not isinstance(doc_id, bool):
            doc_id = str(doc_id)
        if not isinstance(doc_id, str) or not isinstance(useful, bool):
            return _text("memory_validate needs id (a string) and useful (true or false)", True)
        if query_id is not None and not isinstance(query_id, str):
            return _text("memory_validate: query_id must be a string", True)
        query_id = query_id or session.rules.latest_search_of(doc_id)
        if query_id is None:
            return _text(f"no search of this session returned {doc_id!r}; pass its query_id", True)
        verdict = "useful" if useful else "not useful"
        if self.telemetry is None:
            self._not_stored(2)  # its feedback event and its judgment
            return _text(f"not recorded: telemetry is off ({doc_id} was {verdict})", False)
        try:
            self.telemetry.log_validation(query_id, doc_id, useful)
        except Exception as error:
            warn(f"could not log the validation of {doc_id}: {error}")
            return _text(f"not recorded: {doc_id} was {verdict}, but logging failed", False)
        return _text(f"recorded: {doc_id} was {verdict} (query {query_id})", False)

    def _outcome(self, session: ProxySession, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """:data:`OUTCOME_TOOL`: the task outcome of the session (default: this one) goes
        to the store's session outcomes with source ``proxy``."""
        session_id, success, outcome, note = (
            arguments.get(k) for k in ("session_id", "success", "outcome", "note")
        )
        name = OUTCOME_TOOL
        if session_id is not None and (not isinstance(session_id, str) or not session_id):
            return _text(f"{name}: session_id must be a non-empty string", True)
        if success is not None and not isinstance(success, bool):
            return _text(f"{name}: success must be true or false", True)
        if outcome is not None and (
            isinstance(outcome, bool)
            or not isinstance(outcome, int | float)
            or not math.isfinite(outcome)
        ):
            return _text(f"{name}: outcome must be a finite number", True)
        if note is not None and not isinstance(note, str):
            return _text(f"{name}: note must be a string", True)
        if success is None and outcome is None:
            return _text(f"{name} needs success (true or false) or outcome (a number)", True)
        session_id = session_id or session.id
        try:
            from recallbench.store import open_store

            with open_store(self.store_url, workspace=self.workspace) as store:
                store.log_session_outcome(
                    session_id,
                    outcome=None if outcome is None else float(outcome),
                    success=success,
                    note=note,
                    source="proxy",
                )
        except Exception as error:
            warn(f"could not record the outcome of session {session_id}: {error}")
            return _text(f"not recorded: the store refused it ({type(error).__name__})", True)
        said = ", ".join(
            part
            for part in (
                None if success is None else ("success" if success else "failure"),
                None if outcome is None else f"outcome {outcome:g}",
            )
            if part
        )
        return _text(f"recorded for session {session_id}: {said}", False)


def _text(message: str, error: bool) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": error}
