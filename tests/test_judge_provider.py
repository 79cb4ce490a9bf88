"""The OpenAI-compatible judge provider against a real HTTP server that misbehaves on cue.

The server runs in a thread on a free port. Each test gets its own path prefix
(``/<token>/<script>``) so counters of one test never leak into another; the script names
what the server does: answer, 429 then answer, hang, send garbage, reject json_schema...
Waits go through an injected ``sleep`` that records and returns at once: backoff and
Retry-After are checked by the delays asked for, never by the clock.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import sys
import threading
import time
import types
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from http_json import send_json
from recallbench.core._errors import ConfigError, DatasetError
from recallbench.judges._config import JudgeConfig, judge_config
from recallbench.judges._local import LocalProvider
from recallbench.judges._openai import OpenAIProvider
from recallbench.judges._provider import (
    Completion,
    Provider,
    ProviderConnectionError,
    ProviderError,
    ProviderHTTPError,
    ProviderTimeoutError,
    UnparseableOutputError,
    attempt,
)

SCHEMA = {
    "type": "object",
    "properties": {"relevant": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["relevant"],
    "additionalProperties": False,
}
GOOD = '{"relevant": true, "reason": "names the city"}'
ASK = [{"role": "user", "content": "Is the passage relevant? Answer in JSON."}]


@dataclass
class Server:
    """What the scripted server saw."""

    port: int
    hits: Counter[str] = field(default_factory=Counter)
    bodies: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    headers: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    in_flight: Counter[str] = field(default_factory=Counter)
    most_in_flight: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)
    release: threading.Event = field(default_factory=threading.Event)


def _chat(content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "scripted-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
    }


def _handler(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            self._land()  # before the reply: the client may start its next call on reading it
            send_json(self, status, payload, headers)

        def _land(self) -> None:
            with server.lock:
                if getattr(self, "_flying", False):
                    server.in_flight[self._token] -= 1
                    self._flying = False

        def do_POST(self) -> None:
            _, token, script, *_ = self.path.split("/")
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with server.lock:
                server.hits[token] += 1
                hit = server.hits[token]
                server.bodies.setdefault(token, []).append(body)
                server.headers.setdefault(token, []).append(dict(self.headers))
                server.in_flight[token] += 1
                server.most_in_flight[token] = max(
                    server.most_in_flight[token], server.in_flight[token]
                )
                self._token, self._flying = token, True
            try:
                self._script(script, hit, body)
            finally:
                self._land()

        def _script(self, script: str, hit: int, body: dict[str, Any]) -> None:
            if script == "ok":
                self._send(200, _chat(GOOD))
            elif script == "plain":
                self._send(200, _chat("Paris is the capital."))
            elif script == "429-then-ok":
                if hit == 1:
                    self._send(429, {"error": "slow down"}, {"Retry-After": "1.5"})
                else:
                    self._send(200, _chat(GOOD))
            elif script == "429-long":
                self._send(429, {"error": "quota"}, {"Retry-After": "3600"})
            elif script == "503-thrice":
                if hit <= 3:
                    self._send(503, {"error": "overloaded"})
                else:
                    self._send(200, _chat(GOOD))
            elif script == "503-always":
                self._send(503, {"error": "overloaded"})
            elif script == "401":
                self._send(401, {"error": "bad key"})
            elif script == "hang":
                server.release.wait(timeout=30)  # hang guard: the test ends it sooner
            elif script == "bad-gzip":
                self._send(200, b"not gzip at all", {"Content-Encoding": "gzip"})
            elif script == "garbage":
                self._send(200, b"<html>gateway</html>")
            elif script == "prose":
                self._send(200, _chat(f"Sure! Here is the JSON: {GOOD}"))
            elif script == "wrong-type":
                self._send(200, _chat('{"relevant": "yes"}'))
            elif script == "no-json-schema":
                kind = body.get("response_format", {}).get("type")
                if kind == "json_schema":
                    self._send(400, {"error": "response_format json_schema unsupported"})
                else:
                    self._send(200, _chat(GOOD))
            elif script == "500-on-json-schema":  # how llama-cpp-python's server refuses it
                if body.get("response_format", {}).get("type") == "json_schema":
                    message = "validation error: ('body', 'response_format', 'type')"
                    self._send(500, {"error": {"message": message}})
                else:
                    self._send(200, _chat(GOOD))
            elif script == "text-only":
                if "response_format" in body:
                    self._send(400, {"error": "unknown field response_format"})
                else:
                    self._send(200, _chat(GOOD))
            elif script == "slow":
                time.sleep(0.05)
                self._send(200, _chat(GOOD))
            else:
                self._send(404, {"error": script})

    return Handler


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    state = Server(port=0)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield state
    state.release.set()
    httpd.shutdown()
    httpd.server_close()


_tokens = itertools.count()


@dataclass
class Setup:
    provider: OpenAIProvider
    token: str
    sleeps: list[float]


def _setup(server: Server, script: str, **overrides: Any) -> Setup:
    token = f"t{next(_tokens)}"
    sleeps: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)
        await asyncio.sleep(0)

    settings: dict[str, Any] = {
        "base_url": f"http://127.0.0.1:{server.port}/{token}/{script}",
        "model": "judge-model",
        "timeout": 10.0,
        "retries": 3,
    }
    settings.update(overrides)
    provider = OpenAIProvider(JudgeConfig(**settings), sleep=fake_sleep, jitter=lambda: 1.0)
    return Setup(provider, token, sleeps)


def _run(setup: Setup, schema: Any = SCHEMA, messages: Any = ASK) -> Completion | ProviderError:
    async def go() -> Completion | ProviderError:
        try:
            return await attempt(setup.provider, messages, schema=schema)
        finally:
            await setup.provider.aclose()

    return asyncio.run(go())


def test_a_structured_answer_is_parsed_with_its_cost(server: Server) -> None:
    setup = _setup(server, "ok", seed=7, max_tokens=64)
    result = _run(setup)
    assert isinstance(result, Completion)
    assert result.parsed == {"relevant": True, "reason": "names the city"}
    assert (result.model, result.tokens_in, result.tokens_out) == ("scripted-model", 12, 7)
    assert result.latency_ms > 0 and result.raw["id"] == "chatcmpl-1"
    sent = server.bodies[setup.token][0]
    assert sent["temperature"] == 0.0 and sent["seed"] == 7 and sent["max_tokens"] == 64
    assert sent["model"] == "judge-model"
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"] == SCHEMA
    assert isinstance(setup.provider, Provider)


def test_without_a_schema_the_text_comes_back_unparsed(server: Server) -> None:
    setup = _setup(server, "plain", seed=None)
    result = _run(setup, schema=None)
    assert isinstance(result, Completion)
    assert (result.text, result.parsed) == ("Paris is the capital.", None)
    sent = server.bodies[setup.token][0]
    assert not {"response_format", "seed", "max_tokens"} & set(sent)


def test_429_is_retried_after_the_wait_the_server_asks_for(server: Server) -> None:
    setup = _setup(server, "429-then-ok")
    result = _run(setup)
    assert isinstance(result, Completion) and result.parsed is not None
    assert server.hits[setup.token] == 2
    assert setup.sleeps == [1.5]


def test_a_retry_after_beyond_the_longest_backoff_fails_at_once(server: Server) -> None:
    setup = _setup(server, "429-long", max_backoff=30)
    result = _run(setup)
    assert isinstance(result, ProviderHTTPError) and result.status == 429
    assert result.retry_after == 3600.0
    assert server.hits[setup.token] == 1 and setup.sleeps == []


def test_server_errors_back_off_exponentially(server: Server) -> None:
    setup = _setup(server, "503-thrice", backoff=0.5)
    result = _run(setup)
    assert isinstance(result, Completion)
    assert server.hits[setup.token] == 4
    assert setup.sleeps == [0.5, 1.0, 2.0]


def test_backoff_is_capped_and_jittered(server: Server) -> None:
    setup = _setup(server, "503-always", backoff=4.0, max_backoff=5.0, retries=2)
    setup.provider._jitter = lambda: 0.0  # the lowest jitter: half of each step
    result = _run(setup)
    assert isinstance(result, ProviderHTTPError) and result.status == 503
    assert server.hits[setup.token] == 3
    assert setup.sleeps == [2.0, 2.5]


def test_a_refusal_status_is_not_retried(server: Server) -> None:
    setup = _setup(server, "401")
    result = _run(setup)
    assert isinstance(result, ProviderHTTPError) and result.status == 401
    assert not result.retryable and server.hits[setup.token] == 1


def test_a_hanging_server_times_out_as_a_value(server: Server) -> None:
    setup = _setup(server, "hang", timeout=0.2, retries=1)
    result = _run(setup)
    assert isinstance(result, ProviderTimeoutError)
    assert server.hits[setup.token] == 2  # the timeout was retried once


def test_a_closed_port_is_a_connection_failure(server: Server) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    setup = _setup(server, "ok", base_url=f"http://127.0.0.1:{port}/v1", retries=2)
    result = _run(setup)
    assert isinstance(result, ProviderConnectionError)
    assert len(setup.sleeps) == 2


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("garbage", "not a chat completion"),
        ("prose", "not JSON"),
        ("wrong-type", "$.relevant: expected boolean"),
    ],
)
def test_invalid_output_is_a_failure_not_a_guess(
    server: Server, script: str, expected: str
) -> None:
    setup = _setup(server, script)
    result = _run(setup)
    assert isinstance(result, UnparseableOutputError) and expected in str(result)
    assert server.hits[setup.token] == 1  # the same request would get the same answer


def test_a_body_that_cannot_be_decoded_is_a_failure_value(server: Server) -> None:
    setup = _setup(server, "bad-gzip")
    result = _run(setup)
    assert isinstance(result, ProviderError) and "DecodingError" in str(result)
    assert not result.retryable and server.hits[setup.token] == 1


def test_a_server_without_json_schema_gets_json_object(server: Server) -> None:
    setup = _setup(server, "no-json-schema")
    first, second = _run(setup), _run(setup)
    assert isinstance(first, Completion) and isinstance(second, Completion)
    kinds = [body.get("response_format", {}).get("type") for body in server.bodies[setup.token]]
    assert kinds == ["json_schema", "json_object", "json_object"]  # remembered
    assert server.bodies[setup.token][1]["response_format"]["schema"] == SCHEMA
    told, asked = server.bodies[setup.token][1]["messages"]
    assert told["role"] == "system" and '"relevant"' in told["content"]
    assert asked == ASK[0]


def test_a_500_naming_response_format_falls_back_instead_of_retrying(server: Server) -> None:
    setup = _setup(server, "500-on-json-schema")
    result = _run(setup)
    assert isinstance(result, Completion) and setup.sleeps == []
    assert setup.provider.format_mode == "json_object" and server.hits[setup.token] == 2


def test_a_server_without_response_format_gets_plain_text_parsed_strictly(
    server: Server,
) -> None:
    setup = _setup(server, "text-only")
    result = _run(setup)
    assert isinstance(result, Completion) and result.parsed == {
        "relevant": True,
        "reason": "names the city",
    }
    assert setup.provider.format_mode == "text" and setup.sleeps == []
    system = {"role": "system", "content": "You judge relevance."}
    again = _run(setup, messages=[system, *ASK])
    assert isinstance(again, Completion)
    told, asked = server.bodies[setup.token][-1]["messages"]
    assert told["content"].startswith("You judge relevance.\n\nAnswer with one JSON object")
    assert asked == ASK[0]


def test_no_more_calls_in_flight_than_the_limit(server: Server) -> None:
    setup = _setup(server, "slow", concurrency=2)

    async def go() -> list[Completion | ProviderError]:
        try:
            return list(
                await asyncio.gather(
                    *(attempt(setup.provider, ASK, schema=SCHEMA) for _ in range(8))
                )
            )
        finally:
            await setup.provider.aclose()

    results = asyncio.run(go())
    assert all(isinstance(result, Completion) for result in results)
    assert server.hits[setup.token] == 8
    assert 1 <= server.most_in_flight[setup.token] <= 2


def test_requests_per_minute_space_the_starts(server: Server) -> None:
    setup = _setup(server, "ok", rpm=60)

    async def go() -> None:
        try:
            for _ in range(3):
                await setup.provider.complete(ASK, schema=SCHEMA)
        finally:
            await setup.provider.aclose()

    asyncio.run(go())
    # one second apart at 60 per minute: the 2nd waits ~1 s, the 3rd ~2 s (calls are instant)
    assert len(setup.sleeps) == 2
    assert 0.5 < setup.sleeps[0] <= 1.0 and 1.5 < setup.sleeps[1] <= 2.0


def test_the_key_is_read_from_the_environment_and_never_kept(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-0123456789"
    monkeypatch.setenv("RECALLBENCH_TEST_JUDGE_KEY", secret)
    setup = _setup(server, "401", api_key_env="RECALLBENCH_TEST_JUDGE_KEY")
    result = _run(setup)
    assert server.headers[setup.token][0]["Authorization"] == f"Bearer {secret}"
    assert isinstance(result, ProviderHTTPError) and secret not in str(result)
    kept = json.dumps(setup.provider._config.model_dump()) + repr(vars(setup.provider))
    assert secret not in kept


def test_a_missing_key_variable_is_a_config_error(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RECALLBENCH_TEST_NO_SUCH_KEY", raising=False)
    with pytest.raises(ConfigError, match="RECALLBENCH_TEST_NO_SUCH_KEY is not set"):
        _setup(server, "ok", api_key_env="RECALLBENCH_TEST_NO_SUCH_KEY")


def test_config_errors_are_located_at_the_judge_key() -> None:
    with pytest.raises(DatasetError) as caught:
        judge_config(
            {"model": "m", "base_url": "localhost:8080", "api_key_env": "sk-abc", "retries": -1}
        )
    shown = str(caught.value)
    assert "judge.base_url: must start with http:// or https://" in shown
    assert "judge.api_key_env: must be the name of an environment variable" in shown
    assert "judge.retries:" in shown


def test_an_openai_provider_needs_a_base_url_and_local_does_not() -> None:
    with pytest.raises(DatasetError, match="provider 'openai' needs base_url"):
        judge_config({"model": "m"})
    local = judge_config({"provider": "local", "model": "m.gguf", "price_in": 1, "price_out": 2})
    assert local.cost(1_000_000, 500_000) == pytest.approx(2.0)


# The local provider's own logic, with a stand-in for llama_cpp (the real model runs in
# tests/test_judge_live.py).


class _FakeLlama:
    calls: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, **options: Any) -> None:
        self.options = options

    def create_chat_completion(self, **request: Any) -> dict[str, Any]:
        self.calls.append({**request, "loaded_with": self.options})
        content = request["messages"][-1]["content"]
        return {
            "choices": [{"message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        }


@pytest.fixture
def fake_llama(monkeypatch: pytest.MonkeyPatch) -> type[_FakeLlama]:
    module = types.ModuleType("llama_cpp")
    module.Llama = _FakeLlama  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "llama_cpp", module)
    _FakeLlama.calls = []
    return _FakeLlama


def _local(tmp_path: Path, **overrides: Any) -> LocalProvider:
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    return LocalProvider(JudgeConfig(provider="local", model=str(model), seed=3, **overrides))


def _ask_local(provider: LocalProvider, content: str) -> Completion | ProviderError:
    async def go() -> Completion | ProviderError:
        try:
            return await attempt(provider, [{"role": "user", "content": content}], schema=SCHEMA)
        finally:
            await provider.aclose()

    return asyncio.run(go())


def test_a_local_model_answers_through_a_schema_grammar(
    tmp_path: Path, fake_llama: type[_FakeLlama]
) -> None:
    result = _ask_local(_local(tmp_path), GOOD)
    assert isinstance(result, Completion) and result.parsed == json.loads(GOOD)
    assert (result.model, result.tokens_in, result.tokens_out) == ("tiny.gguf", 3, 2)
    (call,) = fake_llama.calls
    assert call["temperature"] == 0.0 and call["seed"] == 3 and call["max_tokens"] == 512
    assert call["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert call["loaded_with"]["model_path"].endswith("tiny.gguf")


def test_a_local_answer_off_the_schema_is_a_failure(
    tmp_path: Path, fake_llama: type[_FakeLlama]
) -> None:
    result = _ask_local(_local(tmp_path), '{"relevant": 1}')
    assert isinstance(result, UnparseableOutputError) and "$.relevant" in str(result)


def test_without_llama_cpp_the_error_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes the import fail
    with pytest.raises(ConfigError, match=r"pip install 'recallbench\[llm\]'"):
        _local(tmp_path)


def test_a_missing_model_file_is_a_config_error(fake_llama: type[_FakeLlama]) -> None:
    with pytest.raises(ConfigError, match="no GGUF file"):
        LocalProvider(JudgeConfig(provider="local", model="/nonexistent/model.gguf"))
