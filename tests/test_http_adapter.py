"""The HTTP adapter against a real HTTP server on the loopback interface."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from http_json import send_json
from recallbench.core import Dataset, Document, Query
from recallbench.measures import parse_measures
from recallbench.report import build_report
from recallbench.runner import run_dataset
from recallbench.systems import create_system

STORE: list[dict[str, Any]] = []
SEEN_AUTH: list[str] = []


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # keep test output clean
        return None

    def _reply(self, status: int, body: Any) -> None:
        send_json(self, status, body)

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        SEEN_AUTH.append(self.headers.get("Authorization", ""))
        if self.path == "/memories":
            STORE.extend(payload["items"])
            self._reply(200, {"ok": True})
        elif self.path == "/search":
            if payload["q"] == "boom":
                self._reply(500, {"error": "index unavailable"})
                return
            words = set(payload["q"].lower().split())
            scored = [(m["key"], len(words & set(m["body"].lower().split()))) for m in STORE]
            ranked = [
                {"key": k, "relevance": s} for k, s in sorted(scored, key=lambda x: -x[1]) if s
            ][: payload["top_k"]]
            self._reply(200, {"data": {"matches": ranked}})
        else:
            self._reply(404, {})


@pytest.fixture
def server() -> Iterator[str]:
    STORE.clear()
    SEEN_AUTH.clear()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def profile(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "search-api.toml"
    path.write_text(f"""
name = "search-api"
kind = "http"
[http]
base_url = "{url}"
headers = {{ Authorization = "Bearer ${{SEARCH_API_TOKEN}}" }}
[ingest]
path = "/memories"
batch_size = 2
batch_field = "items"
item = {{ key = "{{id}}", body = "{{text}}" }}
[search]
path = "/search"
body = {{ q = "{{query}}", top_k = "{{k}}" }}
[results]
hits = "data.matches"
id = "key"
score = "relevance"
""")
    return path


def test_http_endpoint_is_evaluated(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARCH_API_TOKEN", "s3cret")
    dataset = Dataset(
        name="tiny",
        documents=(
            Document(id="a", text="ledger on postgresql"),
            Document(id="b", text="deploys frozen fridays"),
            Document(id="c", text="cat named pixel"),
        ),
        queries=(Query(id="q1", text="postgresql ledger"), Query(id="q2", text="boom")),
        qrels={"q1": {"a": 1}, "q2": {"b": 1}},
    )
    system = create_system(str(profile(tmp_path, server)))
    run = asyncio.run(run_dataset(dataset, system, k=5))
    assert len(STORE) == 3 and set(SEEN_AUTH) == {"Bearer s3cret"}
    first, second = run.results
    assert [(h.doc_id, h.score, h.channels) for h in first.hits] == [("a", 2.0, ("http",))]
    assert second.error is not None and "HTTP 500" in second.error
    assert "s3cret" not in json.dumps(run.spec.settings)  # header names only
    assert build_report(dataset, run, parse_measures(["mrr@5"])).counts.failed == 1


def test_missing_secret_is_a_clear_error(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SEARCH_API_TOKEN", raising=False)
    from recallbench.core import SystemUnderTestError

    system = create_system(str(profile(tmp_path, server)))
    with pytest.raises(SystemUnderTestError, match="SEARCH_API_TOKEN"):
        asyncio.run(run_dataset(Dataset(name="x", documents=(), queries=(), qrels={}), system))
