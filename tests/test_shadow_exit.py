"""Issue 29, item 6: pairs in flight when ``recallbench proxy --shadow`` exits are written
or counted as dropped, and the exit line's counts equal the rows of ``shadow_runs``.

Real processes throughout: the proxy as a subprocess; a primary and a candidate MCP server
over stdio (JSON-RPC lines, the standard library alone); a scripted agent over stdio
(JSON-RPC lines: the relay; with ``--interleave``: the SDK's server) or Streamable HTTP.
The candidate's searches wait for a file, so that which pairs are in flight is set by the
test, not by timing: the first search leaves a marker when it is asked; the test ends the
proxy (end of input, SIGTERM, SIGINT) once it is there, and releases the candidate, or not,
once the proxy says it is stopping."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from recallbench.online._shadow import Shadow
from recallbench.online._shadow_ledger import IN_FLIGHT, QUEUED
from recallbench.store import open_store
from recallbench.systems._profile import load_profile

GATED_SERVER = r"""
import json, os, pathlib, re, select, sys

GATE = os.environ.get("GATE_DIR")
NOTES = []
BACKLOG = []
BUFFER = [b""]
TOOLS = [
    {"name": "write_note", "inputSchema": {"type": "object", "properties": {
        "content": {"type": "string"}}, "required": ["content"]}},
    {"name": "search_notes", "inputSchema": {"type": "object", "properties": {
        "query": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["query"]}},
]


def line(timeout=None):
    # the next line of input; b"" when none came within timeout; None at the end
    while b"\n" not in BUFFER[0]:
        if timeout is not None and not select.select([0], [], [], timeout)[0]:
            return b""
        chunk = os.read(0, 65536)
        if not chunk:
            return None
        BUFFER[0] += chunk
    found, BUFFER[0] = BUFFER[0].split(b"\n", 1)
    return found


def gate():
    # the candidate: says it was asked, then waits for the test's release
    folder = pathlib.Path(GATE)
    (folder / f"asked-{len(list(folder.glob('asked-*')))}").touch()
    while not (folder / "release").exists():
        found = line(0.02)
        if found is None:
            sys.exit(0)
        if found:
            BACKLOG.append(found)


def call(name, arguments):
    if name == "write_note":
        NOTES.append(arguments["content"])
        return [f"stored note {len(NOTES)}"]
    if GATE:
        gate()
    words = set(re.findall(r"\w+", arguments["query"].lower()))
    hits = [n for n in NOTES if words & set(re.findall(r"\w+", n.lower()))]
    return hits[: int(arguments.get("limit") or 10)]


def answer(message):
    method, params = message.get("method"), message.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion"), "capabilities": {"tools": {}},
                "serverInfo": {"name": "gated-notes", "version": "1"}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        texts = call(params["name"], params.get("arguments") or {})
        return {"content": [{"type": "text", "text": t} for t in texts], "isError": False}
    if method == "ping":
        return {}
    return None


while True:
    found = BACKLOG.pop(0) if BACKLOG else line()
    if found is None:
        break
    if not found.strip():
        continue
    message = json.loads(found)
    if "id" not in message or "method" not in message:
        continue  # a notification, or an answer
    result = answer(message)
    reply = {"jsonrpc": "2.0", "id": message["id"]}
    if result is None:
        reply["error"] = {"code": -32601, "message": "method not found"}
    else:
        reply["result"] = result
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
"""
"""A notes server over stdio in the standard library alone (it starts in milliseconds even
when the candidate runs niced on a busy machine: the proxy waits 15 s for a candidate)."""
SEARCHES = 4
LINE = re.compile(
    r"shadow: (\d+) search(?:es)? sampled \(0 not sampled\): (\d+) pairs? written, (\d+) dropped"
    r"(?: \(([^)]*)\))?; (\d+) unfinished at exit, (\d+) of them finished within the 2 s grace"
)
WAIT = 60.0
"""Seconds any condition is waited for, at most (a loaded machine is slow, never this slow)."""


@dataclass
class Exit:
    sampled: int
    written: int
    dropped: dict[str, int]
    unfinished: int
    finished: int
    rows: int
    status: int
    stderr: str


def profiles(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The primary's and the candidate's profiles, and the candidate's gate folder."""
    script = tmp_path / "gated.py"
    script.write_text(GATED_SERVER)
    gate = tmp_path / "gate"
    gate.mkdir()
    paths = []
    for name, env in (
        ("primary", "{}"),
        ("candidate", f"{{ GATE_DIR = {json.dumps(str(gate))} }}"),
    ):
        path = tmp_path / f"{name}.toml"
        path.write_text(
            f'name = "{name}-notes"\n[server]\n'
            f"command = {json.dumps([sys.executable, str(script)])}\nenv = {env}\n"
            "call_timeout = 600\nstartup_timeout = 60\n"
            '[ingest]\ntool = "write_note"\nitem = { content = "{text}" }\n'
            '[search]\ntool = "search_notes"\narguments = { query = "{query}", limit = "{k}" }\n'
            '[results]\nsource = "text_blocks"\nmatch = "content"\n'
        )
        paths.append(path)
    return paths[0], paths[1], gate


def proxy_command(tmp_path: Path, *extra: str) -> tuple[list[str], str, Path]:
    primary, candidate, gate = profiles(tmp_path)
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    command = [
        sys.executable, "-m", "recallbench", "proxy", "--profile", str(primary),
        "--store", url, "--shadow", str(candidate), "--shadow-percent", "100", *extra,
    ]  # fmt: skip
    return command, url, gate


class Lines:
    """The proxy's standard error, read as it comes (a thread), waited on by condition."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self.lines.append("")  # the end
            self._changed.notify_all()

    def wait_for(self, text: str) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: any(text in line for line in self.lines), WAIT):
                raise AssertionError(f"no {text!r} on stderr:\n{self.text()}")

    def finished(self) -> str:
        self._thread.join(WAIT)
        return self.text()

    def text(self) -> str:
        return "".join(self.lines)


def wait_until(condition: Callable[[], bool], what: str, lines: Lines) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {WAIT} s; stderr:\n{lines.text()}")
        time.sleep(0.02)


def ending(url: str, stderr: str, status: int) -> Exit:
    """The exit line's counts, and the rows the store holds."""
    found = LINE.search(stderr)
    assert found is not None, stderr
    dropped = {}
    for part in (found.group(4) or "").split(", "):
        if part:
            count, reason = part.split(" ", 1)
            dropped[reason] = int(count)
    with open_store(url) as store:
        rows = store.count("shadow_runs")
    sampled, written, total, unfinished, finished = (int(found.group(i)) for i in (1, 2, 3, 5, 6))
    assert total == sum(dropped.values())
    return Exit(sampled, written, dropped, unfinished, finished, rows, status, stderr)


def check(result: Exit) -> None:
    """What must hold whatever happened: each sampled search is a row or a dropped pair."""
    assert result.rows == result.written, result.stderr
    assert result.sampled == result.written + sum(result.dropped.values()), result.stderr
    assert result.unfinished >= result.finished
    assert result.status in (0, 128 + signal.SIGINT, 128 + signal.SIGTERM), result.stderr


@contextmanager
def stdio_agent(command: list[str]) -> Iterator[tuple[subprocess.Popen[str], Lines, Any]]:
    """The proxy, and a function sending one JSON-RPC request and returning its answer."""
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    lines = Lines(process.stderr)
    ident = 0

    def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
        nonlocal ident
        assert process.stdin is not None and process.stdout is not None
        ident += 1
        message = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}
        process.stdin.write(json.dumps(message) + "\n")
        process.stdin.flush()
        while True:
            line = process.stdout.readline()
            assert line, lines.text()
            answer: dict[str, Any] = json.loads(line)
            if answer.get("id") == ident:
                return answer

    try:
        ask(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "agent", "version": "1"},
            },
        )
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        process.stdin.write("\n")
        process.stdin.flush()
        yield process, lines, ask
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


def stop(process: subprocess.Popen[str], how: str) -> None:
    if how == "eof":
        assert process.stdin is not None
        process.stdin.close()
    else:
        process.send_signal(getattr(signal, how))


def run_stdio(tmp_path: Path, how: str, release: bool, *extra: str) -> Exit:
    """A write and SEARCHES searches; the proxy is stopped with the first search asked of
    the candidate (the rest queued) and, with ``release``, the candidate released once the
    proxy says it is stopping."""
    command, url, gate = proxy_command(tmp_path, *extra)
    with stdio_agent(command) as (process, lines, ask):
        ask("tools/call", {"name": "write_note", "arguments": {"content": "kestrel decision"}})
        for n in range(SEARCHES):
            answer = ask(
                "tools/call", {"name": "search_notes", "arguments": {"query": f"kestrel {n}"}}
            )
            assert "result" in answer
        wait_until((gate / "asked-0").exists, "the candidate asked", lines)
        stop(process, how)
        lines.wait_for("shadow: stopping: ")
        if release:
            (gate / "release").touch()
        status = process.wait(WAIT)
        stderr = lines.finished()
        if how != "eof":
            assert process.stdin is not None
            process.stdin.close()
    return ending(url, stderr, status)


@pytest.mark.parametrize("how", ["eof", "SIGTERM", "SIGINT"])
def test_pairs_the_candidate_never_answers_are_counted_dropped(tmp_path: Path, how: str) -> None:
    """Before the fix: "N searches mirrored, 0 dropped" with a row missing per pair in
    flight. Now the one in flight and the three queued behind it are dropped, by stage."""
    result = run_stdio(tmp_path, how, release=False)
    check(result)
    assert (result.sampled, result.written, result.rows) == (SEARCHES, 0, 0)
    assert result.dropped == {IN_FLIGHT: 1, QUEUED: SEARCHES - 1}
    assert (result.unfinished, result.finished) == (SEARCHES, 0)


@pytest.mark.parametrize("how", ["eof", "SIGINT"])
def test_pairs_finished_within_the_grace_are_written(tmp_path: Path, how: str) -> None:
    """Released as the proxy stops, the candidate answers within the 2 s grace (all four
    on an idle machine, and under three busy loops on two cores): those pairs are written."""
    result = run_stdio(tmp_path, how, release=True)
    check(result)
    finished_in_grace(result)


def finished_in_grace(result: Exit) -> None:
    """Every pair was unfinished when the proxy began to stop; the ones the candidate
    finished in the grace are the rows (the first at least: it was released), the rest
    dropped at their stage (a machine too busy to answer four within 2 s)."""
    assert result.sampled == result.unfinished == SEARCHES
    assert result.finished == result.written == result.rows >= 1
    assert set(result.dropped) <= {IN_FLIGHT, QUEUED}


def test_interleaved_pairs_in_flight_at_exit_are_counted(tmp_path: Path) -> None:
    """The SDK's server (interleaving): the agent got the primary's answer (the candidate
    late), the candidate's side never came: each pair is a dropped one."""
    result = run_stdio(tmp_path, "eof", False, "--interleave", "--interleave-wait", "0")
    check(result)
    assert (result.sampled, result.written, result.rows) == (SEARCHES, 0, 0)
    assert result.dropped == {IN_FLIGHT: 1, QUEUED: SEARCHES - 1}
    assert "primary's answer shown for 4 late candidate" in result.stderr


@pytest.mark.parametrize(("how", "release"), [("SIGTERM", False), ("SIGINT", True)])
def test_over_http_the_counts_agree_with_the_rows(tmp_path: Path, how: str, release: bool) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from recallbench.core._net import free_port
    from recallbench.systems._mcp import wait_for_listener

    port = free_port()
    command, url, gate = proxy_command(tmp_path, "--http", str(port), "--no-auth")
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    lines = Lines(process.stderr)

    async def agent() -> None:
        address = f"http://127.0.0.1:{port}/mcp"
        await wait_for_listener(address, WAIT, process)  # type: ignore[arg-type]
        async with (
            create_mcp_http_client() as http,
            streamable_http_client(address, http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            await session.call_tool("write_note", {"content": "kestrel decision"})
            for n in range(SEARCHES):
                await session.call_tool("search_notes", {"query": f"kestrel {n}"})

    try:
        asyncio.run(agent())
        wait_until((gate / "asked-0").exists, "the candidate asked", lines)
        stop(process, how)
        lines.wait_for("shadow: stopping: ")
        if release:
            (gate / "release").touch()
        status = process.wait(WAIT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    result = ending(url, lines.finished(), status)
    check(result)
    assert result.sampled == SEARCHES and result.unfinished == SEARCHES
    if release:
        finished_in_grace(result)
    else:
        assert (result.written, result.rows) == (0, 0)
        assert result.dropped == {IN_FLIGHT: 1, QUEUED: SEARCHES - 1}


# --- the accounting alone ----------------------------------------------------------------


def test_a_pair_is_counted_once_whatever_comes_first(tmp_path: Path) -> None:
    """A candidate that answers after :meth:`Shadow.close` counted its pair dropped does
    not write it too; a pair handed to a logging thread that never runs it (a full queue)
    is counted at the final flush; a store that fails counts its rows dropped."""
    _, candidate, _ = profiles(tmp_path)
    profile = load_profile(candidate)

    class Slow:
        lost = asyncio.Event()

        def __init__(self) -> None:
            self.asked = asyncio.Event()
            self.release = asyncio.Event()

        async def call_tool(self, tool: str, arguments: Any) -> dict[str, Any]:
            self.asked.set()
            await self.release.wait()
            return {"content": [{"type": "text", "text": "kestrel decision"}]}

    class Failing:
        def log_shadow_runs(self, rows: list[dict[str, Any]]) -> None:
            raise OSError("disk full")

    async def scenario() -> Shadow:
        slow = Slow()
        shadow = Shadow(slow, profile, profile, percent=100)  # type: ignore[arg-type]
        shadow.store = Failing()  # type: ignore[assignment]
        handed: list[Callable[[], None]] = []
        shadow.submit = handed.append  # a logging thread that has not run them yet
        async with asyncio.TaskGroup() as group:
            runner = group.create_task(shadow.run())
            answer = {"content": [{"type": "text", "text": "kestrel decision"}]}
            for query in ("a", "b", "c"):
                shadow.observe("search_notes", {"query": query}, answer, 1.0, query)
            await slow.asked.wait()  # "a" in flight, "b" and "c" queued
            slow.release.set()
            await shadow.drain(30)  # "a", "b" and "c" answered: handed
            shadow.close()
            await runner
        handed[0]()  # one ran (its row is waiting for the batch); two never did
        shadow.flush(final=True)
        return shadow

    stats = asyncio.run(scenario()).stats
    assert (stats.searches, stats.written) == (3, 0)
    assert dict(stats.dropped) == {"log queue full": 2, "store write failed": 1}
    assert (stats.unfinished, stats.finished_in_grace) == (3, 3)

    async def answered_after_close() -> tuple[Shadow, list[Callable[[], None]]]:
        slow = Slow()
        shadow = Shadow(slow, profile, profile, percent=100)  # type: ignore[arg-type]
        shadow.store = Failing()  # type: ignore[assignment]
        handed: list[Callable[[], None]] = []
        shadow.submit = handed.append
        async with asyncio.TaskGroup() as group:
            runner = group.create_task(shadow.run())
            shadow.observe("search_notes", {"query": "a"}, {"content": []}, 1.0, "a")
            await slow.asked.wait()
            shadow.close()  # no grace: "a" is dropped in flight
            slow.release.set()  # then the candidate answers
            await runner
        return shadow, handed

    shadow, handed = asyncio.run(answered_after_close())
    assert handed == [] and dict(shadow.stats.dropped) == {IN_FLIGHT: 1}
    assert shadow.stats.unfinished is None  # no grace was given: not said
