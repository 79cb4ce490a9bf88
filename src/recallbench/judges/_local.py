"""A judge provider that runs a GGUF model in-process through llama-cpp-python.

For machines without a model server, and for tests with a tiny model. llama-cpp-python is
an optional dependency (it compiles from source on most machines), imported only when a
local provider is built; without it the error names the extra to install.

The model is loaded on first use, in a worker thread; calls run one at a time in worker
threads (a ``Llama`` object is not thread-safe) so the event loop stays responsive. A call
that times out is reported as failed at once, but its thread finishes the generation before
the next call starts: native code cannot be interrupted.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from recallbench.core._errors import ConfigError
from recallbench.judges._config import JudgeConfig
from recallbench.judges._provider import (
    Completion,
    JsonSchema,
    Message,
    NotACompletionError,
    ProviderError,
    ProviderTimeoutError,
    UnparseableOutputError,
    with_parsed,
)

INSTALL_HINT = (
    "provider 'local' needs llama-cpp-python: pip install 'recallbench[llm]' "
    "(it compiles from source; on CPUs where the native build crashes with 'illegal "
    "instruction' set CMAKE_ARGS='-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON "
    "-DGGML_F16C=ON')"
)
DEFAULT_MAX_TOKENS = 512


def _llama_class() -> Any:
    try:
        module = importlib.import_module("llama_cpp")
    except ImportError:
        raise ConfigError(INSTALL_HINT) from None
    return module.Llama


class LocalProvider:
    """Chat completions from a GGUF file loaded with ``llama_cpp.Llama``."""

    def __init__(self, config: JudgeConfig) -> None:
        self._llama_class = _llama_class()
        self._path = Path(config.model)
        if not self._path.is_file():
            raise ConfigError(f"judge.model: no GGUF file at {self._path}")
        self._config = config
        self._llama: Any = None
        # Guards the model across worker threads, including ones a timeout left running.
        self._busy = threading.Lock()

    @property
    def model(self) -> str:
        """The model file's name."""
        return self._path.name

    async def aclose(self) -> None:
        """Drop the loaded model."""
        with self._busy:
            self._llama = None

    async def complete(
        self, messages: Sequence[Message], *, schema: JsonSchema | None = None
    ) -> Completion:
        """One answer at the configured temperature; raises only ProviderError subclasses."""
        call = asyncio.to_thread(self._generate, [dict(m) for m in messages], schema)
        try:
            async with asyncio.timeout(self._config.timeout):
                raw, latency_ms = await call
        except TimeoutError:
            raise ProviderTimeoutError(
                f"{self.model}: no answer within {self._config.timeout:g} s"
            ) from None
        return _completion(raw, schema, latency_ms, self.model)

    def _generate(
        self, messages: list[dict[str, str]], schema: JsonSchema | None
    ) -> tuple[Mapping[str, Any], float]:
        with self._busy:
            llama = self._load()
            options: dict[str, Any] = {
                "temperature": self._config.temperature,
                "max_tokens": self._config.max_tokens or DEFAULT_MAX_TOKENS,
            }
            if self._config.seed is not None:
                options["seed"] = self._config.seed
            if schema is not None:
                # llama.cpp compiles the schema to a grammar: the answer cannot leave it.
                options["response_format"] = {"type": "json_object", "schema": dict(schema)}
            started = time.perf_counter()
            try:
                raw = llama.create_chat_completion(messages=messages, **options)
            except Exception as error:  # native or template errors: a failed call, not a crash
                raise ProviderError(f"{self.model}: {type(error).__name__}: {error}") from None
            return raw, (time.perf_counter() - started) * 1000

    def _load(self) -> Any:
        if self._llama is None:
            try:
                self._llama = self._llama_class(
                    model_path=str(self._path),
                    n_ctx=self._config.context,
                    seed=self._config.seed if self._config.seed is not None else -1,
                    verbose=False,
                )
            except Exception as error:  # a corrupt or unsupported file
                raise ProviderError(f"{self._path}: cannot load: {error}") from None
        return self._llama


def _completion(
    raw: Mapping[str, Any], schema: JsonSchema | None, latency_ms: float, model: str
) -> Completion:
    """The answer in llama.cpp's result; an unusable one keeps its token counts."""
    try:
        text = raw["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise NotACompletionError(f"{model}: not a chat completion", repr(raw)) from None
    usage = raw.get("usage") or {}
    completion = Completion(
        text=text if isinstance(text, str) else repr(raw),
        parsed=None,
        model=model,
        tokens_in=int(usage.get("prompt_tokens") or 0),
        tokens_out=int(usage.get("completion_tokens") or 0),
        latency_ms=latency_ms,
        raw=raw,
    )
    if not isinstance(text, str):
        raise UnparseableOutputError(f"{model}: no text content", completion.text, completion)
    return with_parsed(completion, text, schema)
