"""The proxy under faults, with real processes: `recallbench proxy` in front of an upstream
MCP server that hangs, crashes or answers 5 MB (tests/faulty_mcp_server.py), a store that
is locked, SIGTERM with records in flight, and the HTTP proxy's door (token, Origin).
Every case ends with each logged record accounted for in the proxy's exit line and in the
store, and no call left unanswered. Timeouts here are hang guards only."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from recallbench.core._net import free_port
from recallbench.online._upstream import UpstreamLost
from recallbench.store import open_store
from recallbench.systems._mcp import wait_for_listener

SERVER = Path(__file__).parent / "faulty_mcp_server.py"
GUARD = 60.0
"""Seconds after which a test gives up waiting (a hang, never a measurement)."""
BIG = 5 * 1024 * 1024
SUMMARY = re.compile(
    r"telemetry: (\d+) written, (\d+) dropped \(queue full\), (\d+) lost at exit"
    r"(?:.*?, (\d+) dropped \(refused)?"
)


def profile(tmp_path: Path, http: bool = False, call_timeout: float = 30) -> Path:
    """A profile for the faulty server: text blocks, hits identified by their text."""
    command = [sys.executable, str(SERVER), *(["http", "{port}"] if http else [])]
    transport = (
        'transport = "streamable-http"\nurl = "http://127.0.0.1:{port}/mcp"\n' if http else ""
    )
    path = tmp_path / "faulty.toml"
    path.write_text(
        f'name = "faulty"\n[server]\ncommand = {json.dumps(command)}\n{transport}'
        f"call_timeout = {call_timeout}\n"
        '[ingest]\ntool = "write"\nitem = { content = "{text}" }\n'
        '[search]\ntool = "search"\narguments = { query = "{query}" }\n'
        '[results]\nsource = "text_blocks"\nmatch = "content"\n'
    )
    return path


def proxy_args(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "recallbench", "proxy", *arguments]


def summary(stderr: str) -> tuple[int, int, int, int]:
    """(written, dropped because the queue was full, lost at exit, refused) from the exit
    line; every record the proxy logged is in one of them."""
    found = SUMMARY.search(stderr)
    assert found is not None, stderr
    written, full, lost, refused = (int(group or 0) for group in found.groups())
    return written, full, lost, refused


def stored_queries(url: str) -> list[str]:
    with open_store(url) as store:
        return [entry.text for entry in store.query_log()]


def stored_records(url: str) -> int:
    """Searches, feedback events and judgments in the store (what the exit line counts)."""
    with open_store(url) as store:
        return len(store.query_log()) + len(store.feedback()) + len(store.judgments())


async def written_soon(url: str, count: int) -> None:
    """Wait until the store holds ``count`` searches (the writer works in the background)."""
    while len(stored_queries(url)) < count:
        await asyncio.sleep(0.05)


class Stdio:
    """A minimal MCP client over the proxy's standard input and output (JSON-RPC lines):
    it sees each answer or error as sent, and the process's status and standard error."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.next_id = 0

    async def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        await self.process.stdin.drain()
        return self.next_id

    async def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        while True:
            line = await asyncio.wait_for(self.process.stdout.readline(), GUARD)
            assert line, "the proxy closed its output without answering"
            message: dict[str, Any] = json.loads(line)
            if "id" in message and "method" not in message:
                return message

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        sent = await self.send(method, params)
        answer = await self.receive()
        assert answer["id"] == sent
        return answer

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        return await self.request("tools/call", {"name": tool, "arguments": arguments})

    async def finish(self) -> tuple[int, str]:
        """Close the proxy's input; its status and standard error."""
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        status = await asyncio.wait_for(self.process.wait(), GUARD)
        return status, (await self.process.stderr.read()).decode()


@asynccontextmanager
async def stdio_proxy(*arguments: str) -> AsyncIterator[Stdio]:
    import mcp_types

    process = await asyncio.create_subprocess_exec(
        *proxy_args(*arguments),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=4 * BIG,  # one answer is one line
    )
    client = Stdio(process)
    try:
        initialize = {
            "protocolVersion": mcp_types.LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "fault-test", "version": "0"},
        }
        answer = await client.request("initialize", initialize)
        assert "result" in answer, answer
        assert process.stdin is not None
        process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        yield client
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def text_of(answer: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in answer["result"]["content"])


# --- the fault table ---------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    name: str
    call_timeout: float = 30


FAULTS = [Fault("hang", call_timeout=1), Fault("crash"), Fault("big answer"), Fault("locked")]


@pytest.mark.parametrize("fault", FAULTS, ids=[fault.name for fault in FAULTS])
def test_the_fault_table_no_hung_call_no_silent_loss(fault: Fault, tmp_path: Path) -> None:
    """Per fault: the agent gets an answer or a JSON-RPC error for every call, the proxy
    ends (non-zero when the server died), and every search it logged is in the exit line's
    counts, and those written are in the store."""
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    arguments = ("--profile", str(profile(tmp_path, call_timeout=fault.call_timeout)))
    lock: sqlite3.Connection | None = None

    async def scenario() -> tuple[int, str, int]:
        nonlocal lock
        logged = 0
        async with stdio_proxy(*arguments, "--store", url) as proxy:
            await proxy.call("write", content="Deploys are frozen on Fridays.")
            assert "Deploys" in text_of(await proxy.call("search", query="deploys"))
            logged += 1
            if fault.name == "hang":
                answer = await proxy.call("search", query="hang")
                assert answer["error"]["code"] == REQUEST_TIMEOUT
                assert "did not answer tools/call within 1 s" in answer["error"]["message"]
                assert "Deploys" in text_of(await proxy.call("search", query="after"))
                logged += 1
            elif fault.name == "crash":
                answer = await proxy.call("crash")
                assert answer["error"]["code"] == CONNECTION_CLOSED
                assert "closed the connection" in answer["error"]["message"]
            elif fault.name == "big answer":
                assert len(text_of(await proxy.call("search", query=f"big {BIG}"))) == BIG
                logged += 1
            elif fault.name == "locked":
                await asyncio.wait_for(written_soon(url, 1), GUARD)
                lock = sqlite3.connect(tmp_path / "telemetry.db")
                lock.execute("BEGIN EXCLUSIVE")  # held until the proxy has ended
                for query in ("first", "second", "third"):
                    await proxy.call("search", query=query)
                logged += 3
            status, stderr = await proxy.finish()
        return status, stderr, logged

    status, stderr, logged = asyncio.run(asyncio.wait_for(scenario(), 3 * GUARD))
    if lock is not None:
        lock.rollback()
        lock.close()
    written, full, lost, refused = summary(stderr)
    assert stored_records(url) == written
    if fault.name == "crash":
        assert status == UpstreamLost.exit_code  # the same on every path the proxy stops by
        assert "crashing on purpose" in stderr and "the memory server closed" in stderr
    else:
        assert status == 0, stderr
    if fault.name == "locked":  # the three searches (and their feedback): counted, not silent
        assert stored_queries(url) == ["deploys"] and lost + refused >= 3
    else:
        assert len(stored_queries(url)) == logged and (full, lost, refused) == (0, 0, 0)


def test_sigterm_with_searches_in_flight_writes_every_answered_search(tmp_path: Path) -> None:
    """Searches sent without waiting, SIGTERM after a part of them is answered: every
    search the agent got an answer for is in the store, and the exit line says so."""
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    total, before = 300, 100

    async def scenario() -> tuple[int, str, int]:
        async with stdio_proxy("--profile", str(profile(tmp_path)), "--store", url) as proxy:
            for index in range(total):
                await proxy.send(
                    "tools/call", {"name": "search", "arguments": {"query": f"q{index}"}}
                )
            answered = 0
            for _ in range(before):
                answered += "result" in await proxy.receive()
            proxy.process.send_signal(signal.SIGTERM)
            assert proxy.process.stdout is not None and proxy.process.stderr is not None
            rest = await asyncio.wait_for(proxy.process.stdout.read(), GUARD)
            answered += sum('"result"' in line for line in rest.decode().splitlines())
            status = await asyncio.wait_for(proxy.process.wait(), GUARD)
            return status, (await proxy.process.stderr.read()).decode(), answered

    status, stderr, answered = asyncio.run(scenario())
    assert status in (0, 128 + signal.SIGTERM)  # a clean end, or the end after the grace
    written, full, lost, refused = summary(stderr)
    assert (full, lost, refused) == (0, 0, 0)
    assert stored_records(url) == written
    assert len(stored_queries(url)) >= answered >= before


# --- Streamable HTTP ---------------------------------------------------------------------


@asynccontextmanager
async def http_proxy(
    *arguments: str, env: dict[str, str], errors: Path
) -> AsyncIterator[tuple[str, Any]]:
    """The proxy serving Streamable HTTP: its URL and process (stopped with SIGTERM); its
    standard error goes to the file ``errors`` (a pipe nobody reads could fill up)."""
    port = free_port()
    with errors.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            *proxy_args(*arguments, "--http", str(port)), env={**os.environ, **env}, stderr=stderr
        )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        await wait_for_listener(url, GUARD, process)
        yield url, process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


@asynccontextmanager
async def http_session(url: str, token: str) -> AsyncIterator[Any]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http, max_sse_event_size=None) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        yield session


def test_http_sigterm_with_a_client_connected_and_5_mb_both_ways(tmp_path: Path) -> None:
    """An HTTP upstream behind the HTTP proxy: a 5 MB memory goes in, a 5 MB answer comes
    out; then SIGTERM while the client is still connected ends the proxy, with the searches
    written."""
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    token = "a-token-for-this-test"
    arguments = ("--profile", str(profile(tmp_path, http=True)), "--store", url)

    async def scenario() -> tuple[int, str]:
        errors = tmp_path / "stderr.txt"
        env = {"RECALLBENCH_PROXY_TOKEN": token}
        async with http_proxy(*arguments, env=env, errors=errors) as (address, process):
            async with http_session(address, token) as session:
                written = await session.call_tool("write", {"content": "y" * BIG})
                assert written.content[0].text == f"stored {BIG} characters"
                big = await session.call_tool("search", {"query": f"big {BIG}"})
                assert len(big.content[0].text) == BIG
                await session.call_tool("search", {"query": "small"})
                process.send_signal(signal.SIGTERM)  # the session is still open
                status = await asyncio.wait_for(process.wait(), GUARD)
            return status, errors.read_text()

    status, stderr = asyncio.run(scenario())
    assert status == 0, stderr
    written, *others = summary(stderr)
    assert others == [0, 0, 0] and stored_records(url) == written
    assert token not in stderr  # a given token is never printed
    assert sorted(text[:9] for text in stored_queries(url)) == ["big 52428", "small"]


def test_http_proxy_needs_its_token_and_refuses_foreign_origins(tmp_path: Path) -> None:
    """Without the token 401; a page's Origin 403 unless allowed; the generated token is
    printed once at start and works; --no-auth opens the door (Origin still checked)."""
    import httpx2

    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    arguments = ("--profile", str(profile(tmp_path)), "--allow-origin", "http://localhost:5173")

    async def statuses(*extra: str) -> tuple[dict[str, int], str]:
        errors = tmp_path / "stderr.txt"
        async with http_proxy(*arguments, *extra, env={}, errors=errors) as (address, process):
            banner = errors.read_text()  # said before it listens
            token = banner.partition("Bearer ")[2].partition("\n")[0]
            cases = {
                "none": {},
                "wrong": {"Authorization": "Bearer nope"},
                "token": {"Authorization": f"Bearer {token.strip()}"},
                "page": {
                    "Authorization": f"Bearer {token.strip()}",
                    "Origin": "http://localhost:3000",
                },
                "allowed": {
                    "Authorization": f"Bearer {token.strip()}",
                    "Origin": "http://localhost:5173",
                },
            }
            found = {}
            async with httpx2.AsyncClient() as http:
                for case, headers in cases.items():
                    reply = await http.post(address, json=initialize, headers={**accept, **headers})
                    found[case] = reply.status_code
            process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(process.wait(), GUARD)
            return found, banner

    found, banner = asyncio.run(statuses())
    assert "serving http://127.0.0.1:" in banner
    assert found == {"none": 401, "wrong": 401, "token": 200, "page": 403, "allowed": 200}


# --- what of the texts the proxy stores ----------------------------------------------------


@pytest.mark.parametrize("option", ["--redact", "--no-texts"])
def test_the_proxy_stores_no_text_it_was_told_to_hide(option: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    hide = ("--redact", r"sk-\w+", "--redact", "Ana") if option == "--redact" else (option,)

    async def scenario() -> tuple[int, str]:
        async with stdio_proxy("--profile", str(profile(tmp_path)), "--store", url, *hide) as proxy:
            await proxy.call("write", content="Ana's key is sk-abc123")
            answer = await proxy.call("search", query="key of Ana sk-zzz")
            assert "sk-abc123" in text_of(answer)  # the agent's answer is untouched
            return await proxy.finish()

    status, stderr = asyncio.run(scenario())
    assert status == 0, stderr
    with open_store(url) as store:
        [entry] = store.query_log()
    stored = entry.text + json.dumps(entry.texts)
    assert "sk-" not in stored and "Ana" not in stored
    if option == "--redact":
        assert entry.text == "key of [redacted] [redacted]"
        assert list(entry.texts.values()) == [
            "key of [redacted] [redacted]: [redacted]'s key is [redacted]"
        ]
    else:
        assert entry.text.startswith("[withheld sha256:") and entry.texts == {}


def test_proxy_option_errors() -> None:
    from click.testing import CliRunner

    from recallbench.cli import main

    runner = CliRunner()
    bad = runner.invoke(main, ["proxy", "--redact", "(", "--", "true"])
    assert bad.exit_code == 2 and "redact pattern '('" in bad.output
    both = runner.invoke(main, ["proxy", "--no-auth", "--token", "x", "--", "true"])
    assert both.exit_code == 2 and "contradict" in both.output
