"""Secrets never leave in error text: the judge's API key and the ``${ENV}`` values of an
HTTP profile's headers, against endpoints that echo the request's headers back in their
error replies (the stored outputs, the recording, the judge cache and the terminal are
searched for every spelling of the secret)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from http_json import send_json
from recallbench.cli import main
from recallbench.core import Dataset, Document, Query
from recallbench.core._secrets import REDACTED, redact, spellings

SECRET = "sk-live/7f3a+9c2e1b"
"""A key that URLs spell differently (and JSON as it is, so that a file is searched for
it as written: a key with a quote is escaped once more in every JSON file)."""


def test_every_spelling_of_a_secret_is_redacted() -> None:
    awkward = 'sk-live/7f3a+9c2e"1b\n'
    assert len(spellings(awkward)) >= 4  # JSON, repr and URL spellings differ from it
    text = " | ".join(spellings(awkward)) + " | Bearer " + awkward
    shown = redact(text, [awkward, ""])
    assert all(form not in shown for form in spellings(awkward))
    assert shown.count(REDACTED) == len(spellings(awkward)) + 1
    assert redact("nothing to hide", []) == "nothing to hide"
    assert redact("abcabc", ["abc", "bc"]) == f"{REDACTED}{REDACTED}"  # one pass, longest first


def _leaks(text: str) -> list[str]:
    return [form for form in spellings(SECRET) if form in text]


def _tree_text(*folders: Path) -> str:
    return "\n".join(
        path.read_text(encoding="utf-8", errors="replace")
        for folder in folders
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    )


class Echo(BaseHTTPRequestHandler):
    """Echoes the Authorization header back, in the way the request's text asks for."""

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        auth = self.headers.get("Authorization", "")
        echo = {"error": {"message": "unauthorised", "received": {"Authorization": auth}}}
        text = json.dumps(body)
        if "/memories" in self.path:
            send_json(self, 200, {"ok": True})
        elif "echo-401" in text:
            send_json(self, 401, echo)
        elif "echo-500" in text:
            send_json(self, 500, echo)
        elif "echo-page" in text:
            send_json(self, 200, f"<html>bad gateway for {auth}</html>".encode())
        elif "echo-answer" in text:
            content = f"Your header was {auth}"
            message = {"role": "assistant", "content": content}
            send_json(self, 200, {"choices": [{"message": message}], "usage": {}})
        elif "/search" in self.path:
            send_json(self, 200, {"hits": [{"id": "a"}]})
        else:
            send_json(self, 404, {})


@pytest.fixture
def echo() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


# ---------------------------------------------------------------- item 15: the judge's key


def test_the_judge_key_echoed_by_the_endpoint_is_redacted_everywhere(
    echo: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`judge task` against an endpoint that echoes the Authorization header in a 401, a
    500, a gateway's 200 page and a model's answer: the judged output, the judge cache
    and the terminal hold no spelling of the key (the judged output held it verbatim)."""
    monkeypatch.setenv("RECALLBENCH_TEST_JUDGE_KEY", SECRET)
    config = tmp_path / "recallbench.toml"
    config.write_text(
        f'[judge]\nbase_url = "{echo}/v1"\nmodel = "rule"\nretries = 0\ntimeout = 5\n'
        'api_key_env = "RECALLBENCH_TEST_JUDGE_KEY"\n',
        encoding="utf-8",
    )
    cases = ("echo-401", "echo-500", "echo-page", "echo-answer")
    inputs = tmp_path / "qa.jsonl"
    inputs.write_text(
        "".join(
            json.dumps({"question": case, "gold": "Paris", "answer": "Paris"}) + "\n"
            for case in cases
        ),
        encoding="utf-8",
    )
    cache = tmp_path / "cache.jsonl"
    out = tmp_path / "qa.judged.jsonl"
    result = CliRunner().invoke(
        main,
        ["judge", "task", "answer", str(inputs), "--config", str(config),
         "--judge-cache", str(cache)],
    )  # fmt: skip
    assert result.exit_code == 69, result.output
    assert _leaks(out.read_text(encoding="utf-8")) == []
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [line["failure"] for line in lines] == ["http", "http", "provider", "unparseable"]
    assert all(REDACTED in line["detail"] for line in lines[:3])
    assert _leaks(cache.read_text(encoding="utf-8")) == []
    assert REDACTED in cache.read_text(encoding="utf-8")  # the answer was cached, redacted
    assert _leaks(result.output) == []


# ---------------------------------------------------------------- item 28: HTTP profiles


def test_a_header_secret_echoed_by_a_search_endpoint_is_redacted_everywhere(
    echo: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run` of an HTTP profile whose Authorization header is ``${TOKEN}``, against an
    endpoint echoing it in a 500 reply and in a page that is not JSON: run.json, the
    reports, the recording and the terminal hold no spelling of the token."""
    monkeypatch.setenv("RECALLBENCH_TEST_SEARCH_TOKEN", SECRET)
    profile = tmp_path / "echo-api.toml"
    profile.write_text(
        f"""
name = "echo-api"
kind = "http"
[http]
base_url = "{echo}"
headers = {{ Authorization = "Bearer ${{RECALLBENCH_TEST_SEARCH_TOKEN}}" }}
[ingest]
path = "/memories"
item = {{ key = "{{id}}", body = "{{text}}" }}
[search]
path = "/search"
body = {{ q = "{{query}}" }}
[results]
hits = "hits"
id = "id"
""",
        encoding="utf-8",
    )
    dataset = Dataset(
        name="echoes",
        documents=(Document(id="a", text="alpha"), Document(id="b", text="beta")),
        queries=(
            Query(id="q1", text="alpha"),
            Query(id="q2", text="echo-500"),
            Query(id="q3", text="echo-page"),
        ),
        qrels={"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"b": 1}},
    )
    data = tmp_path / "echoes.json"
    data.write_text(dataset.model_dump_json(), encoding="utf-8")
    out, record = tmp_path / "out", tmp_path / "rec"
    result = CliRunner().invoke(
        main,
        ["run", "--dataset", str(data), "--system", str(profile), "--k", "3", "--no-store",
         "--record", str(record), "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert {path.name for path in out.iterdir()} >= {"run.json", "report.json", "report.md"}
    assert _leaks(_tree_text(out, record)) == []
    assert _leaks(result.output) == []
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    errors = [r.get("error") for r in run["results"]]
    assert errors[0] is None and all(e and REDACTED in e for e in errors[1:]), errors
