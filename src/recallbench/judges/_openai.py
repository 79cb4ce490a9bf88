"""A judge provider for any OpenAI-compatible chat endpoint.

Ollama, vLLM, llama.cpp's server, LM Studio and hosted APIs all accept
``POST {base_url}/chat/completions``. Every call asks for temperature 0 and a seed so that
repeated judgments agree, and for the answer as JSON when a schema is given: first as
``response_format: json_schema``; a server that rejects that (400/422, or a 500 naming
``response_format``) is asked with ``json_object`` (carrying the schema too, an extension
some servers enforce) from then on, then with plain text, the answer parsed strictly.

Calls are limited (concurrency, requests per minute), time-boxed, and retried with
exponential backoff and jitter on timeouts, refused connections, 429 and 5xx, honouring
Retry-After. The API key is read from the environment variable the configuration names, at
each call, and goes nowhere but the Authorization header: every response text is redacted
before anything reads it, so an endpoint that echoes the header cannot put the key into an
error, a stored answer or the terminal.

One provider serves one event loop (its client, semaphore and locks belong to that loop).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from email.utils import parsedate_to_datetime
from typing import Any, Literal

import httpx

from recallbench.core._errors import ConfigError
from recallbench.core._secrets import redact
from recallbench.judges._config import JudgeConfig
from recallbench.judges._provider import (
    Completion,
    JsonSchema,
    Message,
    NotACompletionError,
    ProviderConnectionError,
    ProviderError,
    ProviderHTTPError,
    ProviderTimeoutError,
    UnparseableOutputError,
    with_parsed,
)

FormatMode = Literal["json_schema", "json_object", "text"]
_FALLBACK: dict[FormatMode, FormatMode] = {"json_schema": "json_object", "json_object": "text"}

Sleep = Callable[[float], Awaitable[None]]


class OpenAIProvider:
    """Chat completions from an OpenAI-compatible endpoint (see the module docstring)."""

    def __init__(
        self,
        config: JudgeConfig,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Sleep = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        if config.base_url is None:
            raise ConfigError("judge.base_url: an OpenAI-compatible provider needs base_url")
        if config.api_key_env is not None and not os.environ.get(config.api_key_env):
            # Fail before the run rather than on every call of it; an empty value is no key
            # (every call would fail as unauthorised).
            raise ConfigError(
                f"judge.api_key_env: environment variable {config.api_key_env} is not set"
            )
        self._config = config
        self._url = f"{config.base_url}/chat/completions"
        self._transport = transport
        self._sleep = sleep
        self._jitter = jitter
        self._format: FormatMode = "json_schema"
        self._client: httpx.AsyncClient | None = None
        self._slots: asyncio.Semaphore | None = None
        self._pace = asyncio.Lock()
        self._next_start = 0.0

    @property
    def model(self) -> str:
        """The model name sent with every request."""
        return self._config.model

    @property
    def format_mode(self) -> FormatMode:
        """How structured output is currently asked for (after any fallback)."""
        return self._format

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def complete(
        self, messages: Sequence[Message], *, schema: JsonSchema | None = None
    ) -> Completion:
        """One answer, retried as configured; raises only ProviderError subclasses."""
        attempt = 0
        while True:
            try:
                return await self._once(messages, schema)
            except ProviderError as error:
                if not error.retryable or attempt >= self._config.retries:
                    raise
                delay = self._delay(attempt, error)
                if delay is None:
                    raise
                attempt += 1
                await self._sleep(delay)

    def _delay(self, attempt: int, error: ProviderError) -> float | None:
        """Seconds before the next attempt; ``None`` when the server asks for too long."""
        limit = self._config.max_backoff
        if isinstance(error, ProviderHTTPError) and error.retry_after is not None:
            return error.retry_after if error.retry_after <= limit else None
        # Full jitter on half the step: spreads retries of concurrent calls apart.
        step = min(limit, self._config.backoff * 2.0**attempt)
        return step * (0.5 + 0.5 * self._jitter())

    async def _once(self, messages: Sequence[Message], schema: JsonSchema | None) -> Completion:
        """One attempt, falling back to a weaker response format when the server rejects it."""
        while True:
            mode = self._format
            try:
                return await self._post(messages, schema, mode)
            except ProviderHTTPError as error:
                fallback = _FALLBACK.get(mode)
                if schema is None or fallback is None or not _rejects_format(error):
                    raise
                if self._format == mode:
                    self._format = fallback

    async def _post(
        self, messages: Sequence[Message], schema: JsonSchema | None, mode: FormatMode
    ) -> Completion:
        body = self._body(messages, schema, mode)
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._config.concurrency)
        async with self._slots:
            await self._paced()
            started = time.perf_counter()
            text = await self._send(body)
            latency_ms = (time.perf_counter() - started) * 1000
        return self._completion(text, schema, latency_ms)

    def _body(
        self, messages: Sequence[Message], schema: JsonSchema | None, mode: FormatMode
    ) -> dict[str, Any]:
        sent = [dict(message) for message in messages]
        body: dict[str, Any] = {
            "model": self._config.model,
            "messages": sent,
            "temperature": self._config.temperature,
        }
        if self._config.seed is not None:
            body["seed"] = self._config.seed
        if self._config.max_tokens is not None:
            body["max_tokens"] = self._config.max_tokens
        if schema is None:
            return body
        if mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "judgment", "schema": dict(schema), "strict": True},
            }
            return body
        if mode == "json_object":
            # "schema" is the extension llama-cpp-python (a grammar from it) and several
            # hosted APIs understand under json_object; others ignore it.
            body["response_format"] = {"type": "json_object", "schema": dict(schema)}
        # Without schema enforcement the model must be told the shape (json_object mode
        # also requires the word JSON in the messages). In the leading system message: some
        # chat templates reject a system message anywhere else.
        instruction = _schema_instruction(schema)
        if sent and sent[0].get("role") == "system":
            sent[0]["content"] = f"{sent[0].get('content', '')}\n\n{instruction}".lstrip()
        else:
            sent.insert(0, {"role": "system", "content": instruction})
        return body

    async def _paced(self) -> None:
        """Wait for this request's turn under the requests-per-minute limit."""
        if self._config.rpm is None:
            return
        interval = 60.0 / self._config.rpm
        async with self._pace:
            now = time.monotonic()
            wait = self._next_start - now
            self._next_start = max(now, self._next_start) + interval
        if wait > 0:
            await self._sleep(wait)

    async def _send(self, body: dict[str, Any]) -> str:
        """The text of a successful response, the key redacted from it."""
        client = self._http()
        headers = self._headers()
        secrets = [headers["Authorization"].removeprefix("Bearer ")] if headers else []
        try:
            # asyncio.timeout bounds the whole call: httpx's timeouts are per read, and a
            # server trickling bytes would never trip them.
            async with asyncio.timeout(self._config.timeout):
                response = await client.post(self._url, json=body, headers=headers)
        except (TimeoutError, httpx.TimeoutException):
            raise ProviderTimeoutError(
                f"{self._url}: no answer within {self._config.timeout:g} s"
            ) from None
        except httpx.TransportError as error:
            raise ProviderConnectionError(f"{self._url}: {type(error).__name__}") from None
        except (httpx.HTTPError, httpx.InvalidURL) as error:  # decoding, redirects, bad URL
            message = redact(f"{type(error).__name__}: {error}", secrets)
            raise ProviderError(f"{self._url}: {message}") from None
        text = redact(response.text, secrets)
        if response.status_code >= 400:
            raise ProviderHTTPError(
                f"{self._url}: HTTP {response.status_code} {_short(text)}",
                response.status_code,
                _retry_after(response.headers.get("retry-after")),
                text,
            )
        return text

    def _headers(self) -> dict[str, str]:
        name = self._config.api_key_env
        if name is None:
            return {}
        key = os.environ.get(name)
        if not key:
            raise ProviderConnectionError(f"environment variable {name} is not set")
        return {"Authorization": f"Bearer {key}"}

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            limits = httpx.Limits(max_connections=self._config.concurrency)
            self._client = httpx.AsyncClient(
                transport=self._transport,
                timeout=httpx.Timeout(self._config.timeout),
                limits=limits,
            )
        return self._client

    def _completion(self, body: str, schema: JsonSchema | None, latency_ms: float) -> Completion:
        """The answer in a response ``body``. An answer that is unusable (a refusal, text
        off the schema) still carries the usage the server reported: the call was billed."""
        try:
            raw = json.loads(body)
            message = raw["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise NotACompletionError(
                f"{self._url}: not a chat completion: {_short(body)}", body
            ) from None
        content = message.get("content") if isinstance(message, Mapping) else None
        text = content if isinstance(content, str) else json.dumps(message)
        completion = Completion(
            text=text,
            parsed=None,
            model=str(raw.get("model") or self._config.model),
            tokens_in=_count(raw, "prompt_tokens"),
            tokens_out=_count(raw, "completion_tokens"),
            latency_ms=latency_ms,
            raw=raw,
        )
        if not isinstance(content, str):
            refusal = message.get("refusal") if isinstance(message, Mapping) else None
            reason = f"refused: {refusal}" if refusal else "no text content"
            raise UnparseableOutputError(f"{self._url}: {reason}", text, completion)
        return with_parsed(completion, text, schema)


def _count(raw: Mapping[str, Any], name: str) -> int:
    """A token count from the response's ``usage``; 0 when the server reports none."""
    usage = raw.get("usage")
    value = usage.get(name) if isinstance(usage, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        return 0
    return int(value) if math.isfinite(value) else 0


def _rejects_format(error: ProviderHTTPError) -> bool:
    """Whether the server refused the response_format rather than failed at the call.

    400/422 are the usual refusals; llama-cpp-python's server reports its request validation
    error as a 500 naming the field, which must not be retried as an overload.
    """
    if error.status in (400, 422):
        return True
    return error.status >= 500 and "response_format" in error.body


def _schema_instruction(schema: JsonSchema) -> str:
    return "Answer with one JSON object and nothing else, matching this JSON Schema: " + json.dumps(
        schema, separators=(",", ":")
    )


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header: a number of seconds or an HTTP date."""
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
