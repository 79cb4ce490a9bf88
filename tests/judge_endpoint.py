"""A tiny OpenAI-compatible chat-completions endpoint in a thread, for testing our own logic.

It is a stand-in, not a judge: it answers the relevance prompt from a lookup of people's
grades (``lookup_grader``), shifted by one on a deterministic share of pairs so that
agreement is high but not perfect, and with prose (an unparseable answer) for pairs it does
not know. A closed port (``closed_port``) gives an endpoint where every call fails.

Run it by hand to point `recallbench judge calibrate` at it:

    python tests/judge_endpoint.py [PORT]    # serves the bundled dataset's grades
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from http_json import send_json
from recallbench.core import Dataset

Grader = Callable[[str], str]
"""The user message of a chat request -> the content of the answer."""
PromptGrader = Callable[[str, str], str]
"""(system message, user message) -> the content of the answer: for graders that must
tell prompts with the same user message apart (a strict and a lenient judge)."""

MODEL = "lookup-judge"
"""The model name the endpoint reports in its answers."""


@dataclass
class Endpoint:
    port: int
    calls: int = 0
    tokens_in: int = 0
    """Tokens billed over every call (the usage each answer reports)."""
    tokens_out: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def _handler(endpoint: Endpoint, grader: PromptGrader) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            user = next(m["content"] for m in body["messages"] if m["role"] == "user")
            system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
            content = grader(system, user)
            with endpoint.lock:
                endpoint.calls += 1
                endpoint.tokens_in += len(user) // 4
                endpoint.tokens_out += len(content) // 4
            answer = {
                "id": "chatcmpl-lookup",
                "object": "chat.completion",
                "model": MODEL,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
                # deterministic token counts, so that cost is replay-stable too
                "usage": {
                    "prompt_tokens": len(user) // 4,
                    "completion_tokens": len(content) // 4,
                    "total_tokens": (len(user) + len(content)) // 4,
                },
            }
            send_json(self, 200, answer)

    return Handler


@contextlib.contextmanager
def serve(grader: Grader, port: int = 0) -> Iterator[Endpoint]:
    """The endpoint on 127.0.0.1 (a free port unless given), until the block ends."""
    with serve_prompts(lambda _system, user: grader(user), port) as endpoint:
        yield endpoint


@contextlib.contextmanager
def serve_prompts(grader: PromptGrader, port: int = 0) -> Iterator[Endpoint]:
    """As :func:`serve`, the grader seeing the system message too."""
    endpoint = Endpoint(port)
    httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler(endpoint, grader))
    httpd.daemon_threads = True
    endpoint.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield endpoint
    finally:
        httpd.shutdown()
        httpd.server_close()


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _split(user: str) -> tuple[str, str]:
    """(query, memory) from the relevance prompt's user message."""
    head, _, memory = user.partition("\n\nMemory:\n")
    return head.removeprefix("Query:\n"), memory


def shifted(query: str, memory: str, grade: int, every: int) -> int:
    """``grade``, moved one step (down, or up from 0) on about one pair in ``every``."""
    if every <= 0:
        return grade
    digest = int(hashlib.sha256(f"{query}\x00{memory}".encode()).hexdigest(), 16)
    if digest % every:
        return grade
    return grade - 1 if grade > 0 else 1


def lookup_grader(grades: Mapping[tuple[str, str], int], every: int = 5) -> Grader:
    """Answers people's grade for a known (query, memory), shifted on one pair in ``every``
    (0: never); prose for an unknown pair."""

    def grade(user: str) -> str:
        query, memory = _split(user)
        known = grades.get((query, memory))
        if known is None:
            return "I am not sure about this one."
        value = shifted(query, memory, max(known, 0), every)
        return json.dumps(
            {"reasoning": "looked up", "grade": value, "confidence": 0.9 if value == known else 0.6}
        )

    return grade


def dataset_grades(dataset: Dataset) -> dict[tuple[str, str], int]:
    """(query text, memory text as the judge sees it) -> people's grade."""
    from recallbench.judges._calibrate_pairs import human_pairs, judge_inputs

    pairs = human_pairs(dataset).pairs
    inputs = judge_inputs(dataset, pairs)
    return {(i.query, i.memory): p.grade for i, p in zip(inputs, pairs, strict=True)}


if __name__ == "__main__":  # pragma: no cover - a manual aid
    from recallbench.datasets import DEFAULT_DATASET, load_dataset

    wanted = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    with serve(lookup_grader(dataset_grades(load_dataset(DEFAULT_DATASET))), wanted) as running:
        print(f"serving {running.base_url} (Ctrl-C to stop)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
