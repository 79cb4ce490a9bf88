"""Judging a batch: cache first, then the provider for what is missing, failures counted.

Every input gets a :class:`Judgment`, in input order: a value read from the answer, or
the neutral 0.5 with the reason it failed. Identical inputs are asked once, and that one
call is counted once: the later inputs share its answer with no tokens of their own (two
systems giving the same answer cost one judgment, not two). Under
``strict`` nothing is asked: a batch with any judgment missing from the cache is refused
before the first call, so that a CI run is the replay of a recorded one or nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from recallbench.judges._cache import Cache, CacheKey, Entry, JudgeCacheMissError, cache_key
from recallbench.judges._judgment import (
    MAX_FAILURE_RATE,
    NEUTRAL,
    FailureReason,
    JudgeStats,
    Judgment,
)
from recallbench.judges._provider import (
    Completion,
    NotACompletionError,
    Provider,
    ProviderConnectionError,
    ProviderError,
    ProviderHTTPError,
    ProviderTimeoutError,
    UnparseableOutputError,
    attempt,
)
from recallbench.judges._tasks import JudgeTask

I = TypeVar("I")  # noqa: E741 - the conventional name of an input type variable
V = TypeVar("V")

Pricing = Callable[[int, int], float]
"""USD for (tokens in, tokens out): the judge configuration's ``cost``."""


@dataclass(frozen=True, slots=True)
class JudgeRun(Generic[V]):
    """A batch's judgments, in input order, and its counts."""

    judgments: list[Judgment[V]]
    stats: JudgeStats

    @property
    def scores(self) -> list[float]:
        return [judgment.score for judgment in self.judgments]


async def judge_many(
    task: JudgeTask[I, V],
    inputs: Sequence[I],
    provider: Provider,
    cache: Cache | None = None,
    strict: bool = False,
    *,
    params: Mapping[str, Any] | None = None,
    concurrency: int = 4,
    price: Pricing | None = None,
    max_failure_rate: float = MAX_FAILURE_RATE,
    progress: Callable[[int, int], None] | None = None,
) -> JudgeRun[V]:
    """Judge every input with ``task``. ``params`` are the call parameters that change
    answers (temperature, seed, ...): part of the cache key. ``concurrency`` bounds the
    calls in flight. ``strict`` asks nothing and raises JudgeCacheMissError (exit 2) when
    any judgment is not cached (no cache: none is). ``progress(done, total)`` is called as
    each call to the model returns."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, not {concurrency}")
    keys = [judgment_key(task, item, provider.model, params or {}) for item in inputs]
    found = cache.get_many(keys) if cache is not None else {}
    first: dict[str, int] = {}  # digest -> the input that asks for it
    for index, key in enumerate(keys):
        first.setdefault(key.digest, index)
    missing = [index for digest, index in first.items() if digest not in found]
    if strict and missing:
        store = cache.where if cache is not None else "no judge cache"
        raise JudgeCacheMissError(store, [keys[index] for index in missing], missing)

    stats = JudgeStats(asked=len(inputs), max_failure_rate=max_failure_rate)
    fresh: dict[str, Judgment[V]] = {}
    limit = asyncio.Semaphore(concurrency)

    async def ask(index: int) -> None:
        item, key = inputs[index], keys[index]
        async with limit:
            answer = await attempt(provider, task.messages(item), schema=task.schema)
        fresh[key.digest] = _record(task, item, key, answer, cache, stats, price)
        if progress is not None:
            progress(len(fresh), len(missing))

    await asyncio.gather(*(ask(index) for index in missing))

    judgments: list[Judgment[V]] = []
    counted: set[str] = set()
    for index, key in enumerate(keys):
        shared = key.digest in counted
        counted.add(key.digest)
        completion = found.get(key.digest)
        if completion is not None:
            stats.cached += 0 if shared else 1
            judgment = _read(task, inputs[index], completion, cached=True)
        else:
            judgment = fresh[key.digest]
        if shared:
            judgment = replace(judgment, shared=True, tokens_in=0, tokens_out=0)
        if judgment.failure is not None:
            stats.failed[judgment.failure] += 1
        judgments.append(judgment)
    return JudgeRun(judgments, stats)


def judgment_key(task: JudgeTask[I, V], item: I, model: str, params: Mapping[str, Any]) -> CacheKey:
    """The cache key of judging ``item``: the input with the exact messages and schema
    sent, so that a prompt edited in place (instead of versioned) is asked again rather
    than answered from a stale cache."""
    sent = {"input": task.input_json(item), "messages": task.messages(item), "schema": task.schema}
    return cache_key(task.name, task.prompt.version, model, params, sent)


def _record(
    task: JudgeTask[I, V],
    item: I,
    key: CacheKey,
    answer: Completion | ProviderError,
    cache: Cache | None,
    stats: JudgeStats,
    price: Pricing | None,
) -> Judgment[V]:
    """The judgment of a fresh answer; counts its call and the tokens the provider
    reported (an answer off the schema was billed too), caches what the model said."""
    stats.called += 1
    tokens_known = True
    if isinstance(answer, NotACompletionError):
        # Not the model's answer (a gateway's page): a later call may get one, so nothing
        # is cached that would replay this failure.
        return Judgment(None, NEUTRAL, "provider", str(answer))
    if isinstance(answer, UnparseableOutputError):
        # The model did answer: cache it so that a replay fails the same way.
        completion = answer.completion
        if completion is None:  # a provider that gave the text only
            completion, tokens_known = Completion(answer.text, None, "", 0, 0, 0.0), False
    elif isinstance(answer, ProviderError):
        return Judgment(None, NEUTRAL, _reason(answer), str(answer))
    else:
        completion = answer
    cost = None
    if tokens_known:
        stats.tokens_in += completion.tokens_in
        stats.tokens_out += completion.tokens_out
        cost = price(completion.tokens_in, completion.tokens_out) if price is not None else None
        stats.cost = None if cost is None or stats.cost is None else stats.cost + cost
    judgment = _read(task, item, completion, cached=False)
    if cache is not None:
        value = None if judgment.value is None else task.value_json(judgment.value)
        score = None if judgment.failed else judgment.score
        entry = Entry(key, completion, value, score, judgment.failure, cost, tokens_known)
        cache.put(entry)
    return judgment


def _read(task: JudgeTask[I, V], item: I, completion: Completion, cached: bool) -> Judgment[V]:
    tokens = completion.tokens_in, completion.tokens_out, completion.latency_ms
    try:
        value = task.parse(completion, item)
    except UnparseableOutputError as error:
        failed: Judgment[V] = Judgment(
            None, NEUTRAL, "unparseable", str(error), cached, completion.model, *tokens
        )
        return failed
    return Judgment(value, task.score(value), None, "", cached, completion.model, *tokens)


def _reason(error: ProviderError) -> FailureReason:
    if isinstance(error, ProviderTimeoutError):
        return "timeout"
    if isinstance(error, ProviderConnectionError):
        return "connection"
    if isinstance(error, ProviderHTTPError):
        return "http"
    return "provider"
