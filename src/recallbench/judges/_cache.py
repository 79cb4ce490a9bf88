"""The judge cache: every answer a judge model gave, kept in the history store.

A judgment is keyed by the sha256 of (task, prompt version, model, parameters, input), in
canonical JSON, so that the same question to the same model with the same prompt is asked
once, and a CI run can replay every judgment without a model (``--strict``: a judgment
missing from the cache is refused, never asked). The answer is stored as it came, not only
the value read from it: a replay parses it again, so a cached answer and a fresh one go
through exactly the same parser. Answers that do not parse are cached too (the model did
answer; asking again at temperature 0 gives the same), with the usage the provider reported;
errors without an answer are not, nor is a success status whose body is not a chat
completion (a gateway's page): a later call may get a real answer. Entries of that kind
that older versions cached are purged when read (:func:`not_an_answer`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import delete, select

from recallbench.core._errors import RecallbenchError
from recallbench.core._files import atomic_write_texts
from recallbench.judges._provider import Completion
from recallbench.store import Store
from recallbench.store._engine import transaction
from recallbench.store._rows import chunks
from recallbench.store._statements import dialect_insert
from recallbench.store._tables import judge_cache


def canonical(value: Any) -> str:
    """One JSON spelling of ``value``: sorted keys, no spaces, no NaN."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class CacheKey:
    """What a judgment is keyed by, and its digest."""

    task: str
    prompt_version: str
    model: str
    params: str
    """Canonical JSON of the call's parameters (temperature, seed, ...)."""
    input_sha256: str

    @property
    def digest(self) -> str:
        return sha256(
            canonical([self.task, self.prompt_version, self.model, self.params, self.input_sha256])
        )


def cache_key(
    task: str, prompt_version: str, model: str, params: Mapping[str, Any], item: Any
) -> CacheKey:
    """The key of one judgment; ``item`` is the input as JSON data."""
    return CacheKey(task, prompt_version, model, canonical(dict(params)), sha256(canonical(item)))


@dataclass(frozen=True, slots=True)
class Entry:
    """One answer to store: the completion (tokens unknown for an unparseable answer from a
    provider that gave its text only) and what the task read from it."""

    key: CacheKey
    completion: Completion
    value: Any
    """The task's value as JSON data; None when the answer did not parse."""
    score: float | None
    failure: str | None
    cost: float | None
    tokens_known: bool = True


class JudgeCacheMissError(RecallbenchError):
    """``--strict`` replay found judgments that are not in the cache (exit 2)."""

    def __init__(self, store: str, keys: list[CacheKey], inputs: list[int]) -> None:
        first = keys[0]
        shown = ", ".join(f"#{index}" for index in inputs[:5])
        more = f" and {len(inputs) - 5} more" if len(inputs) > 5 else ""
        super().__init__(
            f"{store}: {len(keys)} {first.task} v{first.prompt_version} judgment(s) by "
            f"{first.model} are not in the judge cache (inputs {shown}{more}; first key "
            f"{first.digest[:12]}); --strict replays only: run once without --strict to "
            "ask the model and fill the cache"
        )
        self.keys = keys
        self.inputs = inputs


class Cache(Protocol):
    """Where judgments are kept: a store workspace, or a JSON Lines file."""

    @property
    def where(self) -> str:
        """The cache's location, for messages."""
        ...

    def get_many(self, keys: Iterable[CacheKey]) -> dict[str, Completion]: ...

    def put(self, entry: Entry) -> None: ...


class JudgeCache:
    """The judge cache of one store workspace."""

    def __init__(self, store: Store) -> None:
        self.store = store

    @property
    def where(self) -> str:
        return self.store.url

    def get_many(self, keys: Iterable[CacheKey]) -> dict[str, Completion]:
        """The cached completions among ``keys``, by digest; entries that are not an
        answer are deleted instead (so that the next answer can take their key)."""
        digests = list(dict.fromkeys(key.digest for key in keys))
        table = judge_cache
        found: dict[str, Completion] = {}
        purged: list[str] = []
        with transaction(self.store._engine) as connection:
            for part in chunks(digests):
                query = select(table).where(
                    table.c.workspace_id == self.store.workspace, table.c.cache_key.in_(part)
                )
                for row in connection.execute(query).mappings():
                    if not_an_answer(row):
                        purged.append(row["cache_key"])
                    else:
                        found[row["cache_key"]] = _completion(row)
        if purged:
            with transaction(self.store._engine, write=True) as connection:
                for part in chunks(purged):
                    connection.execute(
                        delete(table).where(
                            table.c.workspace_id == self.store.workspace,
                            table.c.cache_key.in_(part),
                        )
                    )
        return found

    def put(self, entry: Entry) -> None:
        """Store one answer; an answer already cached under the key is kept (the first
        answer is the one every replay has seen)."""
        row = {"workspace_id": self.store.workspace, **_row(entry)}
        with transaction(self.store._engine, write=True) as connection:
            statement = dialect_insert(connection, judge_cache).on_conflict_do_nothing(
                index_elements=["workspace_id", "cache_key"]
            )
            connection.execute(statement, row)


def _row(entry: Entry) -> dict[str, Any]:
    """One entry as the columns of the ``judge_cache`` table (the workspace aside)."""
    completion = entry.completion
    return {
        "cache_key": entry.key.digest,
        "task": entry.key.task,
        "prompt_version": entry.key.prompt_version,
        "model": entry.key.model,
        "params": entry.key.params,
        "input_sha256": entry.key.input_sha256,
        "response": completion.text,
        "parsed": None if completion.parsed is None else canonical(completion.parsed),
        "raw": canonical(dict(completion.raw)) if completion.raw else None,
        "value": None if entry.value is None else canonical(entry.value),
        "score": entry.score,
        "failure": entry.failure,
        "answered_by": completion.model or None,
        "tokens_in": completion.tokens_in if entry.tokens_known else None,
        "tokens_out": completion.tokens_out if entry.tokens_known else None,
        "latency_ms": completion.latency_ms if entry.tokens_known else None,
        "cost": entry.cost,
        "created_at": datetime.now(UTC),
    }


_ENVELOPE_KEYS = frozenset({"choices", "object", "error", "errors", "detail", "message", "status"})
"""Top-level keys of an API's own JSON (a completion the old reader missed, an error, a
gateway's status), none of which a judge prompt's schema asks for."""

_MARKUP = ("<!doctype", "<html", "<?xml", "<head", "<body")


def not_an_answer(row: Any) -> bool:
    """Whether a cache entry (a table row or a file's line, by column name) holds a
    response body instead of what a model said.

    Versions before usage was kept cached a 200 whose body was not a chat completion as an
    unparseable answer, without the provider's response (``raw``). Such an entry is told
    from a model's off-schema text by its shape: empty, an HTML or XML page, or a JSON
    object with an API's envelope keys. An entry written now always has ``raw``.
    """
    if row["failure"] != "unparseable" or row["raw"]:
        return False
    text = str(row["response"]).strip()
    if not text or text[:9].lower().startswith(_MARKUP):
        return True
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return isinstance(data, dict) and not _ENVELOPE_KEYS.isdisjoint(data)


def _completion(row: Any) -> Completion:
    return Completion(
        text=row["response"],
        parsed=None if row["parsed"] is None else json.loads(row["parsed"]),
        model=row["answered_by"] or row["model"],
        tokens_in=row["tokens_in"] or 0,
        tokens_out=row["tokens_out"] or 0,
        latency_ms=row["latency_ms"] or 0.0,
        raw=json.loads(row["raw"]) if row["raw"] else {},
    )


class FileJudgeCache:
    """A judge cache in a JSON Lines file, one answer per line, sorted by key: a cache
    that can be committed beside a project (CI replays it with ``--strict``) and read in
    review. New answers are kept in memory and written by :meth:`save`, atomically (a
    temporary file renamed over the old one), so an interrupted run leaves the file whole.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._rows: dict[str, dict[str, Any]] = {}
        self._added = 0
        self._purged = 0
        if path.exists():
            self._load()

    @property
    def where(self) -> str:
        return str(self.path)

    @property
    def added(self) -> int:
        """Answers put since the file was read."""
        return self._added

    @property
    def purged(self) -> int:
        """Entries dropped when the file was read: not an answer (:func:`not_an_answer`)."""
        return self._purged

    def __len__(self) -> int:
        return len(self._rows)

    def _load(self) -> None:
        from recallbench.core import DatasetError, Problem
        from recallbench.datasets._provenance import read_jsonl

        problems: list[Problem] = []
        for number, row in read_jsonl(self.path, problems):
            missing = [name for name in _REQUIRED if not isinstance(row.get(name), str)]
            if missing:
                problems.append(
                    Problem(f"{self.path}:{number}", f"not a judge cache entry: no {missing}")
                )
            elif not_an_answer({"raw": None, "failure": None, **row}):
                self._purged += 1
            else:
                self._rows.setdefault(row["cache_key"], row)
        if problems:
            raise DatasetError(str(self.path), problems)

    def get_many(self, keys: Iterable[CacheKey]) -> dict[str, Completion]:
        return {
            key.digest: _completion(self._rows[key.digest])
            for key in keys
            if key.digest in self._rows
        }

    def put(self, entry: Entry) -> None:
        row = _row(entry)
        if row["cache_key"] in self._rows:
            return
        row["created_at"] = row["created_at"].isoformat()
        self._rows[row["cache_key"]] = row
        self._added += 1

    def save(self) -> None:
        """Write every answer to the file (nothing when none was added or purged)."""
        if not self._added and not self._purged:
            return
        lines = [canonical(self._rows[key]) + "\n" for key in sorted(self._rows)]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_texts({self.path: "".join(lines)})
        self._added = self._purged = 0


_REQUIRED = ("cache_key", "task", "prompt_version", "model", "response")
