"""The judge cache: every answer a judge model gave, kept in the history store.

A judgment is keyed by the sha256 of (task, prompt version, model, parameters, input), in
canonical JSON, so that the same question to the same model with the same prompt is asked
once, and a CI run can replay every judgment without a model (``--strict``: a judgment
missing from the cache is refused, never asked). The answer is stored as it came, not only
the value read from it: a replay parses it again, so a cached answer and a fresh one go
through exactly the same parser. Answers that do not parse are cached too (the model did
answer; asking again at temperature 0 gives the same), errors without an answer are not.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from recallbench.core._errors import RecallbenchError
from recallbench.judges._provider import Completion
from recallbench.store import Store
from recallbench.store._engine import transaction
from recallbench.store._rows import chunks
from recallbench.store._tables import judge_cache
from recallbench.store._telemetry_store import _insert


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
    """One answer to store: the completion (tokens unknown for an unparseable answer the
    provider refused to hand over as a completion) and what the task read from it."""

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


class JudgeCache:
    """The judge cache of one store workspace."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get_many(self, keys: Iterable[CacheKey]) -> dict[str, Completion]:
        """The cached completions among ``keys``, by digest."""
        digests = list(dict.fromkeys(key.digest for key in keys))
        table = judge_cache
        found: dict[str, Completion] = {}
        with transaction(self.store._engine) as connection:
            for part in chunks(digests):
                query = select(table).where(
                    table.c.workspace_id == self.store.workspace, table.c.cache_key.in_(part)
                )
                for row in connection.execute(query).mappings():
                    found[row["cache_key"]] = _completion(row)
        return found

    def put(self, entry: Entry) -> None:
        """Store one answer; an answer already cached under the key is kept (the first
        answer is the one every replay has seen)."""
        completion = entry.completion
        row = {
            "workspace_id": self.store.workspace,
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
        with transaction(self.store._engine, write=True) as connection:
            statement = _insert(connection, judge_cache).on_conflict_do_nothing(
                index_elements=["workspace_id", "cache_key"]
            )
            connection.execute(statement, row)


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
