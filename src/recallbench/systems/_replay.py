"""Record a system's answers, and replay them later without the system.

A recording is one JSON-lines file per system and dataset fingerprint
(``DIR/<system>/<dataset sha256>.jsonl``), one line per query: its id, the sha256 of its
text, the answer (hits, or the error) and the live system's latency. Replaying serves those
answers in place of the system, so a run can be re-scored, compared or gated without
starting a server; the replayed run reports the recorded latencies (the time to read an
answer back from a file says nothing about the system) and names the recording it came from.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from recallbench.core import Dataset, Document, Hit, Query, SystemUnderTestError
from recallbench.core._files import atomic_write_text
from recallbench.systems._folder import folder_for
from recallbench.systems._protocol import SystemUnderTest


def recording_path(folder: Path, system: str, dataset: Dataset) -> Path:
    """Where the recording of ``system`` on ``dataset`` lives under ``folder``: keyed by
    the name the system runs under (:func:`recorded_name`), so that ``--record`` and
    ``--replay`` find the same file whether the profile is given by name or by path."""
    return folder / folder_for(recorded_name(system)) / f"{dataset.sha256}.jsonl"


def recorded_name(system: str) -> str:
    """The name ``system`` runs under, and is recorded under: for a profile file
    (``path/to/x.toml``), the ``name`` its TOML gives, as the live system takes it; any
    other system spec is its own name. Read without starting anything; a profile that
    cannot be read is ConfigError or DatasetError (exit 2) naming the file."""
    path = Path(system)
    if not system.endswith(".toml") or not path.is_file():
        return system
    from recallbench.systems._profile import is_http_profile, load_profile, read_profile

    if is_http_profile(path):
        from recallbench.systems._http import HttpProfile

        return read_profile(path, HttpProfile).name
    return load_profile(path).name


def _text_sha(query: Query) -> str:
    return hashlib.sha256(query.text.encode()).hexdigest()


class RecordingSystem:
    """Wraps a system and keeps every answer; :meth:`close` writes the recording at once
    (atomically, so an interrupted run leaves the previous recording intact). A query asked
    again (``run --repeat``) keeps its first answer, the one the run scores. Lines follow
    the order in which the queries were first asked, even when several were out at once."""

    def __init__(self, inner: SystemUnderTest, path: Path) -> None:
        self.inner, self.path, self.name = inner, path, inner.name
        self._lines: dict[str, str] = {}
        """Query id -> its line ("" while its answer is awaited, or when forgotten)."""
        self._recorded: set[str] = set()

    def settings(self) -> dict[str, Any]:
        return self.inner.settings()

    @property
    def needs_restart(self) -> bool:
        """The wrapped system's: the runner restarts it through this wrapper."""
        return bool(getattr(self.inner, "needs_restart", False))

    @property
    def max_concurrency(self) -> int | None:
        """The wrapped system's (recording changes nothing in how it is called)."""
        cap: int | None = getattr(self.inner, "max_concurrency", 1)
        return cap

    def forget(self, query_id: str) -> None:
        """Drop an answer the run did not keep (the runner asks the query again)."""
        self._recorded.discard(query_id)
        if query_id in self._lines:
            self._lines[query_id] = ""

    async def setup(self, documents: Sequence[Document]) -> None:
        await self.inner.setup(documents)

    async def search(self, query: Query, k: int) -> Sequence[Hit]:
        if query.id in self._recorded:
            return await self.inner.search(query, k)
        self._recorded.add(query.id)
        self._lines.setdefault(query.id, "")  # its place: the order asked, not answered
        entry: dict[str, Any] = {"query_id": query.id, "text_sha256": _text_sha(query), "k": k}
        before = time.perf_counter_ns()
        try:
            hits = await self.inner.search(query, k)
        except Exception as error:
            entry["latency_ms"] = (time.perf_counter_ns() - before) / 1e6
            brief = getattr(error, "brief", None)  # a python: plugin's, naming its frames
            entry["error"] = brief if isinstance(brief, str) else f"{type(error).__name__}: {error}"
            self._lines[query.id] = json.dumps(entry)
            raise
        entry["latency_ms"] = (time.perf_counter_ns() - before) / 1e6
        entry["hits"] = [hit.model_dump(mode="json") for hit in hits]
        self._lines[query.id] = json.dumps(entry)
        return hits

    async def close(self) -> None:
        try:
            await self.inner.close()
        finally:
            lines = [line for line in self._lines.values() if line]
            if lines:
                header = json.dumps({"system": self.name, "settings": self.inner.settings()})
                atomic_write_text(self.path, "\n".join([header, *lines]) + "\n")


class ReplaySystem:
    """Serves recorded answers; a query without one fails (or, strict, the run refuses).

    Its name is the recorded system's (the recording's header), so a replayed run is named
    as the live run was, whether the profile was given by name or by path."""

    def __init__(self, name: str, path: Path) -> None:
        self.name, self.path = name, path
        self._settings: dict[str, Any] = {}
        self._answers: dict[str, dict[str, Any]] = {}
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                entry = json.loads(line)
                if "query_id" in entry:
                    self._answers[entry["query_id"]] = entry
                else:
                    self._settings = entry.get("settings", {})
                    if isinstance(entry.get("system"), str):
                        self.name = entry["system"]

    def missing(self, queries: Sequence[Query]) -> list[str]:
        """Queries with no recorded answer for this exact text."""
        return [
            q.id
            for q in queries
            if q.id not in self._answers or self._answers[q.id]["text_sha256"] != _text_sha(q)
        ]

    def settings(self) -> dict[str, Any]:
        """The recorded system's settings, and where they were replayed from."""
        return {**self._settings, "replayed_from": str(self.path)}

    @property
    def replayed_from(self) -> str:
        """The recording this system serves; the runner names it in the run's spec."""
        return str(self.path)

    def recorded_latency_ms(self, query_id: str) -> float | None:
        """The live system's latency for the query when it was recorded; None for a
        recording made before latencies were kept (the run then reports no latency)."""
        entry = self._answers.get(query_id)
        value = None if entry is None else entry.get("latency_ms")
        return float(value) if isinstance(value, int | float) else None

    max_concurrency: int | None = None
    """Reading answers back takes any number of calls at once."""

    async def setup(self, documents: Sequence[Document]) -> None:
        return None

    async def search(self, query: Query, k: int) -> Sequence[Hit]:
        entry = self._answers.get(query.id)
        if entry is None or entry["text_sha256"] != _text_sha(query):
            raise SystemUnderTestError(f"no recorded answer for query {query.id!r}")
        if "error" in entry:
            raise SystemUnderTestError(f"recorded failure: {entry['error']}")
        return [Hit.model_validate(hit) for hit in entry["hits"]][:k]

    async def close(self) -> None:
        return None
