"""A ``--shadow`` candidate that did not start (it hung, exited or lacks its tools): the
shadow is optional, so the proxy serves the agent without it, says so at start, and
counts the calls it would have mirrored, said again at exit (issue 28, item 20)."""

from __future__ import annotations

from dataclasses import dataclass

SHADOW_START = 15.0
"""Seconds the agent's proxy waits, at most, for a candidate to start (its profile's
``startup_timeout`` when shorter); the agent's ``initialize`` waits meanwhile."""


@dataclass
class AbsentShadow:
    """The candidate ``name`` left out for ``reason``; the primary's ingest and search
    tools say which of the agent's calls it would have been given."""

    name: str
    reason: str
    ingest_tool: str
    search_tool: str
    writes: int = 0
    searches: int = 0

    def count(self, tool: str) -> None:
        """One of the agent's calls: counted when the candidate would have had it."""
        if tool == self.ingest_tool:
            self.writes += 1
        elif tool == self.search_tool:
            self.searches += 1

    def line(self) -> str:
        """The exit summary's line (in place of the shadow's own)."""
        return (
            f"shadow: {self.name} absent: {_many(self.writes, 'write')} and "
            f"{_many(self.searches, 'search')} not mirrored (it did not start: {self.reason})"
        )


def _many(count: int, noun: str) -> str:
    plural = noun + ("es" if noun.endswith("h") else "s")
    return f"{count} {noun if count == 1 else plural}"
