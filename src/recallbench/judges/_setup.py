"""From configuration to a working judge: the provider, the call parameters the cache keys
on, and the cache itself (a store workspace or a committed JSON Lines file)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from recallbench.core import ConfigError
from recallbench.judges._cache import Cache, FileJudgeCache, JudgeCache
from recallbench.judges._config import JudgeConfig
from recallbench.judges._provider import Provider
from recallbench.judges._run import JudgeRun, judge_many
from recallbench.judges._tasks import JudgeTask

I = TypeVar("I")  # noqa: E741 - the conventional name of an input type variable
V = TypeVar("V")

FILE_SUFFIX = ".jsonl"
"""A ``--judge-cache`` ending in this is a file; anything else is a store URL."""


def provider_for(config: JudgeConfig) -> Provider:
    """The configured provider (a local model is loaded on its first call, not here)."""
    if config.provider == "local":
        from recallbench.judges._local import LocalProvider

        return LocalProvider(config)
    from recallbench.judges._openai import OpenAIProvider

    return OpenAIProvider(config)


def call_params(config: JudgeConfig) -> dict[str, Any]:
    """What changes a model's answer besides the prompt: part of every cache key."""
    params: dict[str, Any] = {"temperature": config.temperature}
    if config.seed is not None:
        params["seed"] = config.seed
    if config.max_tokens is not None:
        params["max_tokens"] = config.max_tokens
    return params


@dataclass(frozen=True, slots=True)
class JudgeSetup:
    """Everything a command needs to judge: the configuration and where answers are kept."""

    config: JudgeConfig
    cache: Cache | None

    @property
    def params(self) -> dict[str, Any]:
        return call_params(self.config)

    @property
    def label(self) -> str:
        """How the judge is named in reports: provider, model and endpoint."""
        where = f" at {self.config.base_url}" if self.config.base_url else ""
        return f"{self.config.model} ({self.config.provider}{where})"


async def judge_all(
    task: JudgeTask[I, V],
    inputs: Sequence[I],
    setup: JudgeSetup,
    *,
    strict: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> JudgeRun[V]:
    """Judge ``inputs`` with the configured provider (opened and closed here), its
    concurrency, prices and failure limit, through the setup's cache."""
    config = setup.config
    provider = provider_for(config)
    try:
        return await judge_many(
            task,
            inputs,
            provider,
            setup.cache,
            strict,
            params=setup.params,
            concurrency=config.concurrency,
            price=config.cost,
            max_failure_rate=config.max_failure_rate,
            progress=progress,
        )
    finally:
        await provider.aclose()


def require_judge(config: JudgeConfig | None, source: Path | None) -> JudgeConfig:
    """The ``[judge]`` table, or a ConfigError saying how to add one."""
    if config is None:
        where = str(source) if source is not None else "recallbench.toml"
        raise ConfigError(
            f"{where}: no [judge] table: name the judge model, e.g.\n"
            '  [judge]\n  base_url = "http://localhost:11434/v1"   # Ollama\n'
            '  model = "qwen2.5:7b-instruct"'
        )
    return config


@contextlib.contextmanager
def open_cache(spec: str | None, store_url: str | None = None) -> Iterator[Cache | None]:
    """The judge cache ``spec`` names: a ``.jsonl`` file (saved on a clean exit and after an
    interruption, so answers paid for are kept), a store URL, or with ``spec`` None the
    history store at ``store_url``. ``spec`` ``"none"`` keeps no cache."""
    if spec == "none":
        yield None
        return
    if spec is not None and spec.endswith(FILE_SUFFIX):
        cache = FileJudgeCache(Path(spec))
        try:
            yield cache
        finally:
            cache.save()
        return
    if spec is not None and "://" not in spec and ":" not in spec.split("/", 1)[0]:
        raise ConfigError(
            f"--judge-cache {spec!r}: a judge cache is a {FILE_SUFFIX} file, a store URL "
            "(sqlite:///judge.db, postgresql://...) or none"
        )
    from recallbench.store import open_store

    with contextlib.ExitStack() as stack:
        try:
            store = stack.enter_context(open_store(spec or store_url))
        except ConfigError as error:
            if spec is None:
                raise
            # the store holds the judge cache here, not the history the message speaks of
            named = ConfigError(f"--judge-cache: {error}")
            named.exit_code = error.exit_code
            raise named from None
        yield JudgeCache(store)
