"""`run --concurrency N`: several queries out at once, a run identical to a sequential one
(order, values, errors, restarts, repeats, recordings), against a real HTTP endpoint, a
real MCP server that hangs, async Python retrievers and the built-in systems."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from http_json import send_json
from recallbench.cli import main
from recallbench.core import Dataset, Document, Hit, Query, Run
from recallbench.datasets import load_dataset
from recallbench.runner import run_dataset
from recallbench.runner._runner import width
from recallbench.systems import create_system
from recallbench.systems._replay import RecordingSystem, ReplaySystem

HERE = Path(__file__).parent
WORDS = ["ledger", "postgresql", "deploys", "fridays", "cat", "pixel", "retry", "backoff"]

DATA = Dataset(
    name="concurrent",
    documents=tuple(
        Document(id=f"d{i}", text=f"{WORDS[i % 8]} {WORDS[(i * 3) % 8]} note {i}")
        for i in range(24)
    ),
    queries=tuple(
        Query(id=f"q{i:02d}", text="boom" if i == 5 else "hang" if i == 11 else WORDS[i % 8])
        for i in range(30)
    ),
    qrels={f"q{i:02d}": {f"d{i % 24}": 1} for i in range(30)},
)


def comparable(run: Run) -> list[dict[str, Any]]:
    """Each result as JSON without its timing (the only field that may differ)."""
    return [
        {key: value for key, value in result.model_dump(mode="json").items() if key != "latency_ms"}
        for result in run.results
    ]


# --- an HTTP endpoint: uneven latency, a 500, a request that outlives the timeout -----


class Handler(BaseHTTPRequestHandler):
    store: ClassVar[dict[str, str]] = {}
    in_flight = 0
    most = 0
    lock = threading.Lock()

    def log_message(self, *args: Any) -> None:
        return None

    def _reply(self, status: int, body: Any) -> None:
        send_json(self, status, body)  # a client that gave up on a hung request is no error

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/ingest":
            Handler.store[payload["key"]] = payload["body"]
            self._reply(200, {"ok": True})
            return
        query = payload["q"]
        counted = query != "hang"  # it outlives its timeout: the run goes on meanwhile
        with Handler.lock:
            Handler.in_flight += counted
            Handler.most = max(Handler.most, Handler.in_flight)
        try:
            # later queries answer sooner: answers come back out of order
            time.sleep(0.002 * (len(query) % 5) + (6.0 if query == "hang" else 0.0))
        finally:
            # out of flight before the reply: a sequential client sends its next request
            # as soon as it reads this one, maybe before this thread would run again
            with Handler.lock:
                Handler.in_flight -= counted
        if query == "boom":
            self._reply(500, {"error": "index unavailable"})
            return
        found = [key for key, body in Handler.store.items() if query in body]
        self._reply(200, {"hits": [{"key": key} for key in found][: payload["k"]]})


@pytest.fixture
def endpoint(tmp_path: Path) -> Iterator[Path]:
    Handler.store, Handler.most = {}, 0
    ThreadingHTTPServer.request_queue_size = 64  # 5 by default: connections at once would wait
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    profile = tmp_path / "search.toml"
    profile.write_text(f"""
name = "search"
kind = "http"
[http]
base_url = "http://127.0.0.1:{server.server_address[1]}"
timeout = 3.0  # generous: a loaded CI machine must not time out the ordinary calls
[ingest]
path = "/ingest"
item = {{ key = "{{id}}", body = "{{text}}" }}
[search]
path = "/search"
body = {{ q = "{{query}}", k = "{{k}}" }}
[results]
hits = "hits"
id = "key"
""")
    yield profile
    server.shutdown()


def test_http_at_8_is_the_sequential_run_with_several_requests_out(endpoint: Path) -> None:
    alone = asyncio.run(run_dataset(DATA, create_system(str(endpoint)), k=5))
    assert Handler.most == 1
    together = asyncio.run(run_dataset(DATA, create_system(str(endpoint)), k=5, concurrency=8))
    assert Handler.most > 1  # really concurrent
    assert comparable(together) == comparable(alone)
    errors = {r.query_id: r.error for r in together.results if r.error}
    assert set(errors) == {"q05", "q11"}
    assert "HTTP 500" in str(errors["q05"]) and "no answer within" in str(errors["q11"])
    assert all(r.latency_ms is not None for r in together.results)
    slow = next(r for r in together.results if r.query_id == "q11")
    assert slow.latency_ms is not None and slow.latency_ms >= 3000  # its own call's time


def test_run_json_at_8_equals_run_json_at_1_but_for_timing(endpoint: Path, tmp_path: Path) -> None:
    dataset = tmp_path / "dataset.json"
    dataset.write_text(DATA.model_dump_json())
    outputs = []
    for n in ("1", "8"):
        out = tmp_path / f"out{n}"
        arguments = ["--dataset", str(dataset), "--system", str(endpoint), "--k", "5"]
        arguments += ["-m", "mrr@5", "--no-store", "--out", str(out), "--concurrency", n]
        result = CliRunner().invoke(main, ["run", *arguments, "--repeat", "2"])
        assert result.exit_code == 0, result.output
        run = json.loads((out / "run.json").read_text())
        for entry in run["results"]:
            entry.pop("latency_ms")
        for key in ("started_at", "finished_at", "ingest_seconds"):
            run["spec"].pop(key)
        outputs.append(json.dumps(run, indent=2))
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[1])["repeats"]  # --repeat keeps its meaning


# --- a real MCP server that hangs on one query; restarts land where they did ----------


def hanging_profile(tmp_path: Path, concurrency: int) -> Path:
    argv = json.dumps([sys.executable, str(HERE / "robust_mcp_server.py"), "hang"])
    path = tmp_path / f"hang{concurrency}.toml"
    path.write_text(
        f'name = "robust"\n[server]\ncommand = {argv}\nstartup_timeout = 10\ncall_timeout = 1\n'
        f"concurrency = {concurrency}\n"
        '[ingest]\ntool = "write_note"\nitem = { content = "{text}" }\n'
        '[search]\ntool = "search_notes"\narguments = { query = "{query}" }\n'
        '[results]\nsource = "text_blocks"\nmatch = "content"\nranked = false\n'
    )
    return path


HANGS = Dataset(
    name="hangs",
    documents=(
        Document(id="pg", text="the ledger runs on postgresql"),
        Document(id="fri", text="deploys are frozen on fridays"),
    ),
    queries=tuple(
        Query(id=f"q{i}", text=text)
        for i, text in enumerate(["ledger", "fridays", "hang", "ledger", "fridays", "postgresql"])
    ),
    qrels={"q0": {"pg": 1}},
)


def test_a_hanging_mcp_server_at_8_restarts_as_often_and_where_a_sequential_run_did(
    tmp_path: Path,
) -> None:
    alone = asyncio.run(run_dataset(HANGS, create_system(str(hanging_profile(tmp_path, 1))), k=5))
    system = create_system(str(hanging_profile(tmp_path, 4)))
    assert width(system, 8, HANGS.queries, True) == 4  # the profile's cap
    together = asyncio.run(run_dataset(HANGS, system, k=5, concurrency=8))
    assert comparable(together) == comparable(alone)
    assert together.spec.restarts == alone.spec.restarts == 1
    assert [r.query_id for r in together.results if r.error] == ["q2"]


def test_without_restarts_left_a_broken_server_stays_broken_as_sequentially(
    tmp_path: Path,
) -> None:
    alone = asyncio.run(
        run_dataset(HANGS, create_system(str(hanging_profile(tmp_path, 1))), k=5, restarts=0)
    )
    system = create_system(str(hanging_profile(tmp_path, 4)))
    together = asyncio.run(run_dataset(HANGS, system, k=5, concurrency=8, restarts=0))
    assert comparable(together) == comparable(alone)
    assert together.spec.restarts == 0


# --- async Python retrievers, recordings, the built-in systems ------------------------


class Slow:
    """An async retriever that counts the calls it has at once."""

    out = 0
    most = 0

    def __init__(self) -> None:
        self.documents: list[dict[str, Any]] = []

    def ingest(self, documents: list[dict[str, Any]]) -> None:
        self.documents = documents

    async def search(self, text: str, k: int) -> list[str]:
        Slow.out += 1
        Slow.most = max(Slow.most, Slow.out)
        await asyncio.sleep(0.001 * (len(text) % 4))
        Slow.out -= 1
        if text == "boom":
            raise RuntimeError("no index")
        return [d["id"] for d in self.documents if text in d["text"]][:k]


def make_slow() -> Slow:
    return Slow()


def fixed(text: str, k: int) -> list[str]:
    return ["d1", "d2"][:k]


def test_an_async_python_retriever_takes_calls_at_once_with_the_same_answers() -> None:
    Slow.most = 0
    name = f"python:{__name__}:make_slow"
    alone = asyncio.run(run_dataset(DATA, create_system(name), k=5))
    assert Slow.most == 1
    together = asyncio.run(run_dataset(DATA, create_system(name), k=5, concurrency=8))
    assert Slow.most == 8
    assert comparable(together) == comparable(alone)


def test_a_plain_python_function_and_the_builtin_systems_go_one_at_a_time() -> None:
    plain = create_system(f"python:{__name__}:fixed")
    assert width(plain, 8, DATA.queries, True) == 1
    builtin = create_system("builtin-lexical")
    assert width(builtin, 8, DATA.queries, False) == 1


@pytest.mark.parametrize("session_context", [True, False])
def test_builtin_at_8_equals_builtin_at_1(session_context: bool) -> None:
    dataset = load_dataset("agent-memory-sample")
    runs = [
        asyncio.run(
            run_dataset(
                dataset,
                create_system("builtin-lexical"),
                k=10,
                concurrency=n,
                session_context=session_context,
            )
        )
        for n in (1, 8)
    ]
    assert comparable(runs[0]) == comparable(runs[1])


class Sessions:
    """A system that uses sessions and takes any number of calls (to test the rule)."""

    name = "sessions"
    accepts_session = True
    max_concurrency = None

    def settings(self) -> dict[str, Any]:
        return {}

    async def setup(self, documents: Sequence[Document]) -> None:
        return None

    async def search(self, query: Query, k: int) -> Sequence[Hit]:
        return []

    async def close(self) -> None:
        return None


def test_queries_with_sessions_go_one_at_a_time_when_the_system_uses_them() -> None:
    with_sessions = [Query(id="a", text="x", session_id="s"), Query(id="b", text="y")]
    assert width(Sessions(), 8, with_sessions, session_context=True) == 1
    assert width(Sessions(), 8, with_sessions, session_context=False) == 8
    assert width(Sessions(), 8, [Query(id="b", text="y")], session_context=True) == 8
    assert width(Sessions(), 1, [Query(id="b", text="y")], session_context=True) == 1


def test_a_recording_made_at_8_lists_queries_in_order_and_replays_the_same_run(
    endpoint: Path, tmp_path: Path
) -> None:
    path = tmp_path / "rec.jsonl"
    recorder = RecordingSystem(create_system(str(endpoint)), path)
    assert recorder.max_concurrency is None
    live = asyncio.run(run_dataset(DATA, recorder, k=5, concurrency=8))
    ids = [json.loads(line).get("query_id") for line in path.read_text().splitlines()[1:]]
    assert ids == [q.id for q in DATA.queries]
    replayed = [
        asyncio.run(run_dataset(DATA, ReplaySystem("search", path), k=5, concurrency=n))
        for n in (1, 8)
    ]
    assert comparable(replayed[0]) == comparable(replayed[1])
    assert [r.hits for r in replayed[1].results] == [r.hits for r in live.results]


def test_a_forgotten_answer_is_recorded_again_in_its_place(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    recorder = RecordingSystem(create_system(f"python:{__name__}:fixed"), path)

    async def go() -> None:
        await recorder.setup(DATA.documents)
        for query in DATA.queries[:3]:
            await recorder.search(query, 1)
        recorder.forget("q00")
        await recorder.search(DATA.queries[0], 2)
        await recorder.close()

    asyncio.run(go())
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    assert [line["query_id"] for line in lines] == ["q00", "q01", "q02"]
    assert lines[0]["k"] == 2 and len(lines[0]["hits"]) == 2


def test_concurrency_below_1_is_refused() -> None:
    from recallbench.core import ConfigError

    with pytest.raises(ConfigError, match="concurrency"):
        asyncio.run(run_dataset(DATA, create_system("builtin-lexical"), concurrency=0))
