"""What a judge call costs and what the judge cache keeps, through `recallbench judge task`
against real HTTP endpoints: an answer off the schema is billed and counted, a 200 that is
not a chat completion is never cached as the model's answer (and such entries cached by
earlier versions are purged when read), an empty key variable is no key."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from http_json import send_json
from judge_endpoint import closed_port, serve
from recallbench.cli import main
from recallbench.judges._cache import Entry, JudgeCache
from recallbench.judges._config import JudgeConfig
from recallbench.judges._provider import Completion
from recallbench.judges._run import judge_many, judgment_key
from recallbench.judges._setup import call_params, provider_for
from recallbench.judges._task_kinds import AnswerInput, AnswerTask
from recallbench.store import open_store

QUESTIONS = [
    {"question": "Where does Alice live?", "gold": "Paris", "answer": "In Paris."},
    {"question": "Who is Bob?", "gold": "a nurse", "answer": "A baker."},
]
PROSE = "I think the agent's answer is right, more or less."
GATEWAY = {"error": {"message": "upstream unavailable", "type": "gateway"}}


def verdict(user: str) -> str:
    """The answer judge's verdict by a rule: correct when the answer names Paris."""
    return json.dumps({"reasoning": "r", "correct": "Paris" in user.rsplit("answer:", 1)[1]})


@contextlib.contextmanager
def gateway(payload: Any) -> Iterator[tuple[str, list[int]]]:
    """(base URL, calls) of an endpoint answering every call 200 with ``payload``."""
    calls: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            calls.append(1)
            send_json(self, 200, payload)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", calls
    finally:
        httpd.shutdown()
        httpd.server_close()


def _config(tmp_path: Path, url: str, extra: str = "") -> Path:
    path = tmp_path / "recallbench.toml"
    path.write_text(
        f'[judge]\nbase_url = "{url}"\nmodel = "rule"\nretries = 0\ntimeout = 5\n{extra}',
        encoding="utf-8",
    )
    return path


def _task(tmp_path: Path, config: Path, cache: str, *args: str) -> Result:
    inputs = tmp_path / "qa.jsonl"
    inputs.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    return CliRunner().invoke(
        main,
        ["judge", "task", "answer", str(inputs), "--config", str(config),
         "--judge-cache", cache, "--out", str(tmp_path / "out.jsonl"), *args],
    )  # fmt: skip


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# ---------------------------------------------------------------- item 12: usage kept


def test_an_answer_off_the_schema_records_the_usage_the_provider_reported(
    tmp_path: Path,
) -> None:
    """Every answer is prose: the calls were billed, so the tokens and the cost are
    counted and cached (they were "0 tokens, $0"), and a replay reports the same."""
    cache = tmp_path / "cache.jsonl"
    prices = "price_in = 1000.0\nprice_out = 2000.0\n"
    with serve(lambda user: PROSE) as endpoint:
        result = _task(tmp_path, _config(tmp_path, endpoint.base_url, prices), str(cache))
    assert result.exit_code == 69, result.output  # every judgment failed: unreliable
    lines = _lines(tmp_path / "out.jsonl")
    assert [line["failure"] for line in lines] == ["unparseable", "unparseable"]
    assert sum(line["tokens_in"] for line in lines) == endpoint.tokens_in > 0
    assert sum(line["tokens_out"] for line in lines) == endpoint.tokens_out > 0
    cost = (endpoint.tokens_in * 1000.0 + endpoint.tokens_out * 2000.0) / 1e6
    shown = " ".join(result.output.split())
    assert f"{endpoint.tokens_in + endpoint.tokens_out:,} tokens, ${cost:.4f}" in shown
    entries = _lines(cache)
    assert len(entries) == 2 and all(e["failure"] == "unparseable" for e in entries)
    assert sum(e["tokens_in"] for e in entries) == endpoint.tokens_in
    assert sum(e["cost"] for e in entries) == pytest.approx(cost)
    assert all(e["raw"] is not None for e in entries)
    closed = _config(tmp_path, f"http://127.0.0.1:{closed_port()}/v1", prices)
    again = _task(tmp_path, closed, str(cache), "--strict")
    assert again.exit_code == 69, again.output
    assert [line["tokens_in"] for line in _lines(tmp_path / "out.jsonl")] == [
        line["tokens_in"] for line in lines
    ]


# ---------------------------------------------------------------- item 13: not an answer


def test_a_200_that_is_not_a_chat_completion_is_not_cached(tmp_path: Path) -> None:
    """A gateway answers 200 with its own JSON: the calls fail (a provider failure, not
    the model's unparseable answer) and nothing is cached, so a rerun against a healthy
    server gets real answers instead of replaying the gateway's page."""
    cache = tmp_path / "cache.jsonl"
    with gateway(GATEWAY) as (url, calls):
        broken = _task(tmp_path, _config(tmp_path, url), str(cache))
    assert broken.exit_code == 69, broken.output
    assert len(calls) == 2
    lines = _lines(tmp_path / "out.jsonl")
    assert [line["failure"] for line in lines] == ["provider", "provider"]
    assert all("not a chat completion" in line["detail"] for line in lines)
    assert not cache.exists() or _lines(cache) == []
    with serve(verdict) as endpoint:
        healthy = _task(tmp_path, _config(tmp_path, endpoint.base_url), str(cache))
    assert healthy.exit_code == 0, healthy.output
    assert endpoint.calls == 2
    lines = _lines(tmp_path / "out.jsonl")
    assert [(line["failure"], line["score"]) for line in lines] == [(None, 1.0), (None, 0.0)]


def _as_older_versions_cached(entry: dict[str, Any], body: str) -> dict[str, Any]:
    """A cache entry as versions before this fix wrote a gateway's 200: the body as the
    answer, unparseable, without the provider's response or usage."""
    return {
        **entry,
        "response": body,
        "parsed": None,
        "raw": None,
        "value": None,
        "score": None,
        "failure": "unparseable",
        "answered_by": None,
        "tokens_in": None,
        "tokens_out": None,
        "latency_ms": None,
        "cost": None,
    }


def test_a_cached_gateway_page_is_purged_on_read_and_asked_again(tmp_path: Path) -> None:
    """Entries older versions cached from a gateway's 200 (JSON or an HTML page) are
    dropped when the cache is read: asked again, the answers replace them in the file."""
    cache = tmp_path / "cache.jsonl"
    with serve(verdict) as endpoint:
        config = _config(tmp_path, endpoint.base_url)
        assert _task(tmp_path, config, str(cache)).exit_code == 0
        good = _lines(cache)
        bodies = [json.dumps(GATEWAY), "<html><body>502 Bad Gateway</body></html>"]
        stale = [_as_older_versions_cached(e, b) for e, b in zip(good, bodies, strict=True)]
        cache.write_text("".join(json.dumps(e) + "\n" for e in stale), encoding="utf-8")
        result = _task(tmp_path, config, str(cache))
    assert result.exit_code == 0, result.output
    assert endpoint.calls == 4  # two answers, then the same two asked again
    lines = _lines(tmp_path / "out.jsonl")
    assert [(line["failure"], line["cached"]) for line in lines] == [(None, False)] * 2
    answers = _lines(cache)
    assert [e["response"] for e in answers] == [e["response"] for e in good]
    assert all(e["raw"] is not None and e["failure"] is None for e in answers)


def test_an_off_schema_answer_cached_by_older_versions_is_kept(tmp_path: Path) -> None:
    """Only a body that is not a model's text is purged: a model's prose (cached without
    usage by older versions) still replays, under --strict too."""
    cache = tmp_path / "cache.jsonl"
    with serve(verdict) as endpoint:
        assert _task(tmp_path, _config(tmp_path, endpoint.base_url), str(cache)).exit_code == 0
    stale = [_as_older_versions_cached(e, PROSE) for e in _lines(cache)]
    cache.write_text("".join(json.dumps(e) + "\n" for e in stale), encoding="utf-8")
    closed = _config(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")
    result = _task(tmp_path, closed, str(cache), "--strict")
    assert result.exit_code == 69, result.output
    lines = _lines(tmp_path / "out.jsonl")
    assert [(line["failure"], line["cached"]) for line in lines] == [("unparseable", True)] * 2


def test_the_store_cache_purges_a_cached_gateway_page(db_url: str) -> None:
    """The same purge in a store workspace's cache: the row is deleted, the answer asked
    again takes its key."""
    task = AnswerTask()
    item = AnswerInput("Where does Alice live?", "Paris", "In Paris.")
    with serve(verdict) as endpoint, open_store(db_url) as store:
        config = JudgeConfig(base_url=endpoint.base_url, model="rule", retries=0)
        params = call_params(config)
        key = judgment_key(task, item, config.model, params)
        page = Completion(json.dumps(GATEWAY), None, "", 0, 0, 0.0)
        cache = JudgeCache(store)
        cache.put(Entry(key, page, None, None, "unparseable", None, tokens_known=False))
        assert cache.get_many([key]) == {} and store.count("judge_cache") == 0

        cache.put(Entry(key, page, None, None, "unparseable", None, tokens_known=False))
        run = asyncio.run(judge_many(task, [item], provider_for(config), cache, params=params))
        assert endpoint.calls == 1 and run.judgments[0].value is not None
        assert run.judgments[0].value.correct
        (stored,) = cache.get_many([key]).values()
        assert stored.raw and stored.tokens_in > 0


# ---------------------------------------------------------------- item 25: empty key


def test_an_empty_key_variable_is_refused_like_an_unset_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key variable set to the empty string sent no key: every call failed as a
    "connection" failure (exit 69). Empty is unset: exit 2 with the same message, before
    any call."""
    extra = 'api_key_env = "RECALLBENCH_TEST_EMPTY_KEY"\n'
    with serve(verdict) as endpoint:
        config = _config(tmp_path, endpoint.base_url, extra)
        monkeypatch.delenv("RECALLBENCH_TEST_EMPTY_KEY", raising=False)
        unset = _task(tmp_path, config, "none")
        monkeypatch.setenv("RECALLBENCH_TEST_EMPTY_KEY", "")
        empty = _task(tmp_path, config, "none")
    assert unset.exit_code == empty.exit_code == 2, empty.output
    assert "environment variable RECALLBENCH_TEST_EMPTY_KEY is not set" in empty.output
    assert empty.output == unset.output and "Traceback" not in empty.output
    assert endpoint.calls == 0
