"""The tiny live judge: llama.cpp's OpenAI-compatible server with SmolLM2-135M, as
``make test-llm`` builds it into ``.cache/llm``; and the recording of the committed judge
cache that ``make test`` replays.

    python tests/llama_server.py record          # make record-judge-cache: ask the live model
    python tests/llama_server.py record-qa       # the QA examples
    python tests/llama_server.py record-extract  # the LLM extractor and decider examples

The model is far too weak to judge well: it is here to prove the plumbing (structured
output, failures, cache, replay, cost), never to produce a benchmark number.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).parents[1]
HOME = Path(os.environ.get("RECALLBENCH_LLM_HOME", ROOT / ".cache" / "llm"))
PYTHON = HOME / "bin" / "python"
STARTUP_GUARD_S = 180.0  # hang guard only: the 135M model loads in seconds

EXAMPLE = ROOT / "tests" / "data" / "judge"
CACHE = EXAMPLE / "smollm2-135m.relevance.jsonl"
"""The committed cache: every judgment of the example, as the live model answered."""
MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
EXAMPLE_ARGS = (
    "--system", "builtin-lexical", "--system", "builtin-hybrid",
    "--depth", "2", "-m", "ndcg@10", "-m", "mrr@10",
)  # fmt: skip
"""The example: the bundled dataset's unjudged top-2 results of two built-in systems."""


def judge_toml(base_url: str) -> str:
    """The example's ``[judge]`` table (the cache key holds the model and parameters, not
    the URL: a replay may name any endpoint, even a closed one)."""
    return (
        "[judge]\n"
        f'base_url = "{base_url}"\n'
        f'model = "{MODEL_NAME}"\n'
        "timeout = 300\nretries = 1\nconcurrency = 1\nmax_tokens = 256\n"
    )


def model_path() -> Path:
    found = sorted((HOME / "models").glob("*.gguf"))
    if not PYTHON.exists() or not found:
        raise FileNotFoundError(f"no llama-cpp-python or GGUF under {HOME}: run make test-llm")
    return found[0]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@contextlib.contextmanager
def llama_server(log: Path, context: int = 2048) -> Iterator[str]:
    """A running server's ``/v1`` URL; RuntimeError with its log if it does not start.
    ``context`` is the window in tokens (prompt and answer)."""
    port = free_port()
    command = [
        str(PYTHON), "-m", "llama_cpp.server", "--model", str(model_path()),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(context),
    ]  # fmt: skip
    with log.open("w") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + STARTUP_GUARD_S
        while True:
            if server.poll() is not None:
                raise RuntimeError(
                    f"llama_cpp.server exited {server.returncode}:\n{log.read_text()}"
                )
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server did not start:\n{log.read_text()}")
            time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


QA_CACHE = EXAMPLE / "smollm2-135m.qa.jsonl"
"""The committed answers and verdicts of the QA examples."""
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
QA_EXAMPLES = {
    "bundled": ("--system", "builtin-hybrid", "--k", "5"),
    "locomo": (
        "--dataset", f"locomo:{LOCOMO}", "--unit", "conv-30",
        "--system", "builtin-hybrid", "--k", "5",
    ),
}  # fmt: skip
"""The QA examples: the bundled dataset's questions, and LoCoMo's smallest conversation
(conv-30, 105 questions), each answered from builtin-hybrid's top 5 memories."""

CALIBRATION_SYSTEMS = ("builtin-lexical", "builtin-hybrid", "builtin-dense")
CALIBRATION_ARGS = ("--human-sample", "10", "-m", "ndcg@10")
"""The calibration example: every human-labelled pair of the bundled dataset, the three
built-in systems for Kendall's tau, PPI from 10 queries treated as the human sample."""


def record(cache: Path = CACHE) -> int:
    """Ask the live model for every judgment of both examples (fill, calibrate), into
    ``cache``; returns the worst exit code (69, the tiny model failing often, is expected)."""
    codes = []
    with tempfile.TemporaryDirectory() as folder, llama_server(Path(folder) / "server.log") as url:
        work = Path(folder)
        config = work / "recallbench.toml"
        config.write_text(judge_toml(url), encoding="utf-8")
        common = ["--config", str(config), "--judge-cache", str(cache)]
        rb = [sys.executable, "-m", "recallbench"]
        commands = [
            [*rb, "judge", *EXAMPLE_ARGS, *common, "--no-store", "--out", str(work / "fill")],
            [*rb, "run", *(f"--system={s}" for s in CALIBRATION_SYSTEMS), "--no-store",
             "--out", str(work / "runs"), "-q"],
            [*rb, "judge", "calibrate", *(str(work / "runs" / s) for s in CALIBRATION_SYSTEMS),
             *CALIBRATION_ARGS, *common, "--out", str(work / "calibration")],
        ]  # fmt: skip
        for command in commands:
            codes.append(subprocess.run(command, check=False).returncode)
    return max(codes)


def record_qa(cache: Path = QA_CACHE) -> int:
    """Ask the live model for every answer and verdict of the QA examples, into ``cache``."""
    codes = []
    with tempfile.TemporaryDirectory() as folder, llama_server(Path(folder) / "server.log") as url:
        work = Path(folder)
        config = work / "recallbench.toml"
        config.write_text(judge_toml(url), encoding="utf-8")
        for name, args in QA_EXAMPLES.items():
            command = [
                sys.executable, "-m", "recallbench", "qa", *args, "--config", str(config),
                "--judge-cache", str(cache), "--out", str(work / name),
            ]  # fmt: skip
            codes.append(subprocess.run(command, check=False).returncode)
    return max(codes)


EXTRACT_CACHE = EXAMPLE / "smollm2-135m.extract.jsonl"
"""The committed extractions and write decisions of the extraction examples."""
EXTRACT_CONTEXT = 4096
"""Tokens of context for extraction: a LoCoMo session (up to ~1,400 tokens) with the prompt
and an answer of up to EXTRACT_MAX_TOKENS."""
EXTRACT_MAX_TOKENS = 1024
LOCOMO_SESSIONS = 5
"""LoCoMo sessions extracted (conv-30's first ones, ~20 s each on two cores)."""
EXTRACT_EXAMPLES: dict[str, tuple[str, ...]] = {
    "meeting": ("--ground-truth", "meeting-sample"),
    "locomo": (
        "--ground-truth", f"locomo-events:{LOCOMO}", "--conversation", "conv-30",
        "--documents", str(LOCOMO_SESSIONS),
    ),
}  # fmt: skip
"""The extraction examples: the bundled meeting corpus (10 documents, full gold), and the
first sessions of LoCoMo's conv-30 (annotated events and observations)."""
DECISIONS_ARGS = ("--fixture", "decisions-sample", "--decider", "llm")
"""The decision example: the bundled 22 write-decision cases through the decide prompt."""


def extract_toml(base_url: str) -> str:
    """The extraction examples' ``[judge]`` table: a longer answer than a judgment's."""
    return (
        "[judge]\n"
        f'base_url = "{base_url}"\n'
        f'model = "{MODEL_NAME}"\n'
        f"timeout = 300\nretries = 1\nconcurrency = 1\nmax_tokens = {EXTRACT_MAX_TOKENS}\n"
    )


def cli(module: str, command: str) -> list[str]:
    """A command line running one of recallbench's click commands from its module (a
    command works this way before it is registered on ``recallbench``)."""
    return [sys.executable, "-c", f"from recallbench.cli.{module} import {command}; {command}()"]


def record_extract(cache: Path = EXTRACT_CACHE) -> int:
    """Ask the live model for every extraction and decision of the examples, into
    ``cache``; returns the worst exit code (69: the tiny model fails often)."""
    codes = []
    with (
        tempfile.TemporaryDirectory() as folder,
        llama_server(Path(folder) / "server.log", EXTRACT_CONTEXT) as url,
    ):
        work = Path(folder)
        config = work / "recallbench.toml"
        config.write_text(extract_toml(url), encoding="utf-8")
        common = ["--config", str(config), "--judge-cache", str(cache)]
        for name, args in EXTRACT_EXAMPLES.items():
            command = [
                *cli("_extract", "extract"), *args, "--extractor", "llm", *common,
                "--resamples", "10", "--out", str(work / name),
            ]  # fmt: skip
            codes.append(subprocess.run(command, check=False).returncode)
        command = [*cli("_decisions", "decisions"), *DECISIONS_ARGS, *common]
        out = ["--out", str(work / "decisions")]
        codes.append(subprocess.run([*command, *out], check=False).returncode)
    return max(codes)


RECORDERS = {"record": record, "record-qa": record_qa, "record-extract": record_extract}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in RECORDERS:
        sys.exit(f"usage: python tests/llama_server.py {'|'.join(RECORDERS)}")
    code = RECORDERS[sys.argv[1]]()
    # 69: the tiny model's failure rate is above the default limit; the cache is complete
    sys.exit(0 if code in (0, 69) else code)
