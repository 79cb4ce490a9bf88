"""The shadow's pairs as rows of ``shadow_runs``: written from the proxy's logging thread,
in batches (:data:`BATCH_ROWS` pairs or :data:`BATCH_SECONDS`, one transaction each: the
commit and its sync to disk were 5 ms per pair), the last batch when the proxy stops. A
batch the store refused is written once more: the store skips the query ids it holds, so a
failure that came after the commit stores nothing twice.

A pair is the primary's side of one of the agent's searches (:class:`Mirrored`) and the
candidate's answer. Both answers are parsed into ranked ids and compared (Kendall's tau,
Jaccard, whether the top result changed); a side that gave no readable search (a JSON-RPC
error, ``isError``, a timeout, a server that exited) is stored with no results, a NULL
latency and a short message in its error column (``control_error``, ``treatment_error``:
the exception's type and message, the tool's error text, or ``timeout``,
:func:`describe`).

:class:`ShadowRuns` keeps the ledger's end of it (:mod:`recallbench.online._shadow_ledger`):
a pair handed to the logging thread is a row or a drop counted with its reason.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from recallbench.core._query_key import query_key
from recallbench.online._feedback import result_ids
from recallbench.online._hits import hits_of
from recallbench.online._shadow_ledger import (
    LOG_FULL,
    NO_STORE,
    NOT_RECORDED,
    STORE_FAILED,
    ShadowStats,
)
from recallbench.online._wire import warn
from recallbench.stats._rankdiff import rank_difference
from recallbench.systems._answers import text_of

if TYPE_CHECKING:
    from recallbench.stats._interleaving import Interleaving
    from recallbench.store import Store
    from recallbench.systems._profile import Profile

ERROR_CHARS = 500
"""A side's stored error message is cut to this many characters."""
BATCH_ROWS = 64
"""Pairs written to ``shadow_runs`` in one transaction, at most."""
BATCH_SECONDS = 0.25
"""Seconds a pair waits at most before its batch is written (fewer pairs than BATCH_ROWS)."""
RETRY_DELAY = 0.1
"""Seconds before a batch the store refused is written again (once)."""


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


class ShadowRuns:
    """Writes the pairs of ``primary`` (control) and the candidate ``treatment`` (its hits
    read with ``reader``) to ``store``, from the proxy's logging thread (``submit``, set by
    the proxy: :meth:`SessionObserver.attach
    <recallbench.online._session_observer.SessionObserver.attach>`)."""

    def __init__(
        self,
        primary: Profile,
        reader: Profile,
        treatment: str,
        stats: ShadowStats,
        store: Store | None,
        warn_once: Callable[[str, str], None],
    ) -> None:
        self.primary = primary
        self.reader = reader
        self.treatment = treatment
        self.stats = stats
        self.store = store
        """Where the runs go (None: nowhere, e.g. the store could not be opened)."""
        self.submit: Callable[[Callable[[], None]], None] = lambda job: job()
        """Runs the row writing; the proxy sets its logging thread's queue here."""
        self._warn = warn_once
        self._handed = 0
        """Pairs handed to the logging thread (event loop)."""
        self._recorded = 0
        """Of those, the ones the logging thread took (logging thread)."""
        self._rows: list[dict[str, Any]] = []
        """Pairs not written yet (the logging thread's: see :meth:`flush`)."""
        self._timer: threading.Timer | None = None
        self._final = False

    def hand(self, record: Callable[[], None]) -> None:
        """A pair is complete (on the event loop): ``record`` (a call of :meth:`record`)
        goes to the logging thread, or its drop is counted when there is no store."""
        if self.store is None:
            self.stats.drop(NO_STORE)
            return
        self._handed += 1
        self.submit(lambda: self._take(record))

    def _take(self, record: Callable[[], None]) -> None:
        """In the logging thread: a pair's row, or its drop counted when it cannot be."""
        self._recorded += 1
        try:
            record()
        except Exception as error:
            self.stats.drop(NOT_RECORDED)
            self._warn("record", f"a shadow run was not recorded: {describe_error(error)}")

    def record(
        self,
        search: Mirrored,
        answer: dict[str, Any] | None,
        latency_ms: float,
        failure: str | None = None,
        interleaved: Interleaving[str] | None = None,
        session_id: str | None = None,
    ) -> None:
        """In the proxy's logging thread: parse both answers, write the pair (``failure``:
        why the candidate gave no answer, when it raised; ``interleaved``: what the agent
        was shown, by team, and how much of it is credited, in interleaving mode)."""
        control = _ids(self.primary, search.answer)
        treatment = _ids(self.reader, answer)
        run: dict[str, Any] = {
            "query_id": search.query_id,
            "control_results": control or [],
            "treatment_results": treatment or [],
            "control_latency_ms": None if control is None else search.latency_ms,
            "treatment_latency_ms": None if treatment is None else latency_ms,
            "control_error": None if control is not None else _error(search.answer, search.error),
            "treatment_error": None if treatment is not None else _error(answer, failure),
            "session_id": session_id,
            # the query unit, stored with the pair: status need not read the logged texts
            "query_key": query_key(search.query),
            "control": self.primary.name,
            "treatment": self.treatment,
        }
        if interleaved is not None:
            run["interleaved"] = list(interleaved.shown)
            run["interleaved_credited"] = interleaved.credited
        if control is not None and treatment is not None:
            k = max(len(control), len(treatment), 1)
            difference = rank_difference(search.query_id, control, treatment, k)
            run["kendall_tau"] = difference.kendall_tau
            run["jaccard"] = difference.jaccard
            run["top1_changed"] = difference.top1_changed
        run["created_at"] = datetime.now(UTC)
        self._rows.append(run)
        if len(self._rows) >= BATCH_ROWS:
            self.flush()
        elif self._timer is None and not self._final:
            self._timer = threading.Timer(BATCH_SECONDS, self._flush_soon)
            self._timer.daemon = True
            self._timer.start()

    def _flush_soon(self) -> None:
        """The batch's time is up: its writing joins the logging thread's queue."""
        if not self._final:
            self.submit(self.flush)

    def flush(self, final: bool = False) -> None:
        """Write the pairs waiting, in one transaction (in the logging thread, or once it
        has stopped: ``final``, after which nothing waits any more). Batching makes a pair
        cost a share of one commit and one sync to disk rather than its own: the store's
        durability is unchanged (WAL, SQLite's default synchronous mode)."""
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        if final:
            self._final = True
        rows, self._rows = self._rows, []
        if final:  # the logging thread has stopped: what it never took was lost there
            self.stats.drop(LOG_FULL, self._handed - self._recorded)
            self._handed = self._recorded
        if not rows:
            return
        if self.store is None:
            self.stats.drop(NO_STORE, len(rows))
            return
        for attempt in (1, 2):
            try:
                self.store.log_shadow_runs(rows)
            except Exception as error:  # the agent's calls are not concerned
                if attempt == 1:
                    # once more: a dropped connection (a PostgreSQL restart, a failover)
                    # passes; a batch whose commit went through before the failure stores
                    # nothing twice (one row per query id, m012)
                    time.sleep(RETRY_DELAY)
                    continue
                self.stats.drop(STORE_FAILED, len(rows))
                warn(f"{len(rows)} shadow runs were not stored: {describe_error(error)}")
            else:
                self.stats.stored(len(rows))
            return

    def finish(self) -> None:
        """The logging thread has stopped: the last batch is written, the exit line said,
        the store closed."""
        self.flush(final=True)
        warn(self.stats.line())
        if self.store is not None:
            self.store.close()


def _ids(profile: Profile, answer: dict[str, Any] | None) -> list[str] | None:
    """Ranked ids of a search answer (hits without an id are skipped); None when it is not
    a readable search."""
    if answer is None:
        return None
    hits = hits_of(profile, answer, quiet=True)
    if hits is None:
        return None
    return list(result_ids(hit_id for hit_id, _ in hits))


def describe_error(error: BaseException) -> str:
    message = getattr(getattr(error, "error", None), "message", None) or str(error)
    return f"{type(error).__name__}: {message}"


def describe(error: BaseException) -> str:
    """A short message for a failed call: ``timeout`` for the upstream's call timeout,
    otherwise the exception's type and message."""
    from mcp_types import REQUEST_TIMEOUT

    inner = getattr(error, "error", None)
    if isinstance(error, TimeoutError) or getattr(inner, "code", None) == REQUEST_TIMEOUT:
        return "timeout"
    return _short(describe_error(error))


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
