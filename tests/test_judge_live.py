"""The judge provider against a real model: llama.cpp's OpenAI-compatible server.

Runs only under ``make test-llm`` (``RECALLBENCH_LLM=1``), which builds llama-cpp-python into
``.cache/llm`` and extracts SmolLM2-135M-Instruct there. The model is tiny and a poor judge:
these tests check plumbing (the request format the server accepts, strict parsing of its
answer, determinism at temperature 0), never judgment quality.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from recallbench.judges._config import JudgeConfig
from recallbench.judges._openai import OpenAIProvider
from recallbench.judges._provider import Completion

pytestmark = [
    pytest.mark.llm,
    pytest.mark.skipif(
        os.environ.get("RECALLBENCH_LLM") != "1", reason="live model tests: run with make test-llm"
    ),
]

HOME = Path(os.environ.get("RECALLBENCH_LLM_HOME", Path(__file__).parents[1] / ".cache" / "llm"))
PYTHON = HOME / "bin" / "python"
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["answer"],
    "additionalProperties": False,
}
QUESTION = [
    {"role": "system", "content": "You answer with a JSON object only."},
    {
        "role": "user",
        "content": 'Passage: "Alice moved to Paris in 2019." Question: Where does Alice live? '
        'Does the passage answer the question? Reply as {"answer": "yes"} or {"answer": "no"}.',
    },
]
STARTUP_GUARD_S = 180.0  # hang guard only: the 135M model loads in seconds


def _model() -> Path:
    found = sorted((HOME / "models").glob("*.gguf"))
    if not PYTHON.exists() or not found:
        pytest.fail(f"no llama-cpp-python or GGUF under {HOME}: run make test-llm")
    return found[0]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [
        str(PYTHON), "-m", "llama_cpp.server", "--model", str(_model()),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
    ]  # fmt: skip
    with log.open("w") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + STARTUP_GUARD_S
        while True:
            if server.poll() is not None:
                pytest.fail(f"llama_cpp.server exited {server.returncode}:\n{log.read_text()}")
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start:\n{log.read_text()}")
            time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _ask(base_url: str, schema: dict[str, object] | None, times: int) -> list[Completion]:
    config = JudgeConfig(base_url=base_url, model=_model().name, seed=0, timeout=120, retries=1)

    async def go() -> list[Completion]:
        provider = OpenAIProvider(config)
        try:
            return [await provider.complete(QUESTION, schema=schema) for _ in range(times)]
        finally:
            await provider.aclose()

    return asyncio.run(go())


def test_the_server_answers_a_json_object_that_fits_the_schema(base_url: str) -> None:
    (first,) = _ask(base_url, SCHEMA, 1)
    assert first.parsed is not None and first.parsed["answer"] in ("yes", "no")
    assert first.tokens_in > 0 and first.tokens_out > 0
    print(f"answer {first.text!r} in {first.latency_ms:.0f} ms", file=sys.stderr)


def test_temperature_zero_gives_the_same_answer_twice(base_url: str) -> None:
    first, second = _ask(base_url, SCHEMA, 2)
    assert first.text == second.text and first.parsed == second.parsed
    plain_first, plain_second = _ask(base_url, None, 2)
    assert plain_first.text == plain_second.text and plain_first.parsed is None


# The in-process provider needs llama_cpp importable, which only the .cache/llm venv has:
# the same check runs there, with this checkout's sources on the path.
_IN_PROCESS = """
import asyncio, json, sys
from recallbench.judges._config import JudgeConfig
from recallbench.judges._local import LocalProvider

async def main():
    provider = LocalProvider(JudgeConfig(provider="local", model=sys.argv[1], seed=0))
    schema, question = json.loads(sys.argv[2]), json.loads(sys.argv[3])
    try:
        answers = [await provider.complete(question, schema=schema) for _ in range(2)]
    finally:
        await provider.aclose()
    print(json.dumps([[a.text, a.parsed, a.tokens_in, a.tokens_out] for a in answers]))

asyncio.run(main())
"""


def test_the_in_process_provider_answers_alike_twice() -> None:
    source = Path(__file__).parents[1] / "src"
    done = subprocess.run(
        [str(PYTHON), "-c", _IN_PROCESS, str(_model()), json.dumps(SCHEMA), json.dumps(QUESTION)],
        capture_output=True,
        text=True,
        timeout=STARTUP_GUARD_S,
        env={**os.environ, "PYTHONPATH": str(source)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    first, second = json.loads(done.stdout.strip().splitlines()[-1])
    assert first == second
    text, parsed, tokens_in, tokens_out = first
    assert parsed == json.loads(text) and parsed["answer"] in ("yes", "no")
    assert tokens_in > 0 and tokens_out > 0
