"""What became of the shadow's work (issue 29, item 6): every sampled search ends as one
row of ``shadow_runs`` or as one dropped pair with its reason, so that the exit line's
counts add up to the rows (``searches sampled = pairs written + pairs dropped``).

:class:`OpenWork` holds the jobs not done yet, each at its stage (queued, in flight,
waiting for the agent's side); when the proxy stops, what is still open is counted as
dropped at that stage. :class:`ShadowStats` holds the counts and writes the summary line.
The event loop opens and settles work; the proxy's logging thread writes the rows and
counts them (``written``, :meth:`ShadowStats.drop`), under a lock."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

QUEUE_FULL = "queue full"
"""The candidate was behind by a whole queue: the search was not taken."""
AFTER_EXIT = "sampled after the exit began"
QUEUED = "queued at exit"
"""Still in the queue when the exit grace ran out: the candidate was never asked."""
IN_FLIGHT = "in flight at exit"
"""The candidate had not answered when the exit grace ran out."""
AGENT_WAITED = "agent's call unanswered at exit"
"""Interleaving: the candidate answered, the primary never did (the call was cut)."""
FAILED = "mirroring failed"
NO_STORE = "store not open"
STORE_FAILED = "store write failed"
NOT_RECORDED = "could not be recorded"
LOG_FULL = "log queue full"
"""Handed to the proxy's logging thread, which had no room left (or had stopped)."""


@dataclass
class ShadowStats:
    """The shadow's counts, said in one line at exit (:meth:`line`)."""

    writes: int = 0
    """Writes the candidate was given."""
    writes_dropped: int = 0
    """Writes it was not given: queue full, or not done at exit."""
    searches: int = 0
    """Searches sampled (each ends written or dropped)."""
    sampled_out: int = 0
    errors: int = 0
    """Candidate calls that failed (their pairs are written, with the error)."""
    written: int = 0
    """Pairs stored in ``shadow_runs``."""
    dropped: Counter[str] = field(default_factory=Counter)
    """Pairs not stored, by reason."""
    unfinished: int | None = None
    """Pairs not yet handed to the store when the proxy began to stop (None: it has not)."""
    finished_in_grace: int = 0
    """Of those, the ones completed within the exit grace."""
    grace: float = 0.0
    interleaved: int = 0
    """Searches the agent saw interleaved."""
    not_interleaved: Counter[str] = field(default_factory=Counter)
    """Sampled searches in interleaving mode answered with the primary's answer, by reason."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def drop(self, reason: str, count: int = 1) -> None:
        """``count`` pairs not stored, for ``reason`` (from either thread)."""
        if count > 0:
            with self._lock:
                self.dropped[reason] += count

    def stored(self, count: int) -> None:
        """``count`` pairs written to ``shadow_runs``."""
        with self._lock:
            self.written += count

    @property
    def dropped_pairs(self) -> int:
        return sum(self.dropped.values())

    def line(self) -> str:
        """``shadow: 60 searches sampled (12 not sampled): 59 pairs written, 1 dropped (1 in
        flight at exit); ...``: every sampled search is in the written or the dropped."""
        reasons = ", ".join(f"{n} {why}" for why, n in sorted(self.dropped.items()))
        line = (
            f"shadow: {_many(self.searches, 'search')} sampled ({self.sampled_out} not "
            f"sampled): {_many(self.written, 'pair')} written, {self.dropped_pairs} dropped"
            + (f" ({reasons})" if reasons else "")
        )
        if self.unfinished is not None:
            line += (
                f"; {self.unfinished} unfinished at exit, {self.finished_in_grace} of them "
                f"finished within the {self.grace:g} s grace"
            )
        line += (
            f"; {_many(self.writes, 'write')} mirrored, {self.writes_dropped} dropped; "
            f"{self.errors} candidate errors"
        )
        if self.interleaved or self.not_interleaved:
            reasons = ", ".join(f"{n} {why}" for why, n in sorted(self.not_interleaved.items()))
            line += f"; {self.interleaved} interleaved" + (
                f", primary's answer shown for {reasons}" if reasons else ""
            )
        return line


class OpenWork:
    """The shadow's jobs not done yet, by identity, each a write or a search at its stage
    (:data:`QUEUED`, :data:`IN_FLIGHT`, :data:`AGENT_WAITED`). Event loop only."""

    def __init__(self, stats: ShadowStats) -> None:
        self.stats = stats
        self._open: dict[object, tuple[bool, str]] = {}
        self._at_exit: set[object] = set()
        self._exiting = False

    def __len__(self) -> int:
        return len(self._open)

    def open(self, key: object, search: bool) -> None:
        """``key`` was queued (a search: one pair to account for)."""
        self._open[key] = (search, QUEUED)
        if search and self._exiting:  # the agent's last calls, answered as it stopped
            self._at_exit.add(key)
            self.stats.unfinished = (self.stats.unfinished or 0) + 1

    def stage(self, key: object, stage: str) -> None:
        """``key`` moved on (nothing when it is settled already)."""
        if key in self._open:
            self._open[key] = (self._open[key][0], stage)

    def settle(self, key: object) -> bool:
        """``key`` is done (its pair handed to the store, or its write sent): True the first
        time only, so that a pair is never counted twice."""
        if self._open.pop(key, None) is None:
            return False
        if key in self._at_exit:
            self._at_exit.discard(key)
            self.stats.finished_in_grace += 1
        return True

    def exiting(self, grace: float) -> None:
        """The proxy begins to stop: the pairs open now, and those opened later, are the
        ones the grace is for."""
        self._exiting = True
        self._at_exit = {key for key, (search, _) in self._open.items() if search}
        self.stats.unfinished = len(self._at_exit)
        self.stats.grace = grace

    def close(self) -> None:
        """Whatever is still open is dropped, counted by its stage."""
        for search, stage in self._open.values():
            if search:
                self.stats.drop(stage)
            else:
                self.stats.writes_dropped += 1
        self._open.clear()
        self._at_exit.clear()


def _many(count: int, noun: str) -> str:
    plural = noun + ("es" if noun.endswith("h") else "s")
    return f"{count} {noun if count == 1 else plural}"
