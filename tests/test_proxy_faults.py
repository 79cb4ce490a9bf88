"""The proxy stopping and starting under faults, with real processes (issue 28, items 19-21
and 23): SIGTERM to the HTTP proxy with hundreds of searches in flight (every answered
search is in the log, and the exit line counts exactly the rows written), SIGTERM while a
call waits on a hung server (a JSON-RPC error for the agent, status 130, no traceback), a
shadow candidate that hangs or exits at start (the proxy serves without it and says so),
and a store that cannot be opened at start (an error with an explicit ``--store``, or the
records not stored counted at exit). Timeouts here are hang guards only."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from recallbench.core._net import free_port
from recallbench.systems._mcp import wait_for_listener
from test_online_faults import (
    GUARD,
    profile,
    proxy_args,
    stdio_proxy,
    stored_queries,
    stored_records,
    summary,
    text_of,
)

TOKEN = "a-token-for-the-fault-tests"
INTERRUPTED = 130
"""The exit-code table's "interrupted"."""


class Http:
    """A minimal Streamable HTTP client of the proxy: each call is one POST, its answer the
    JSON-RPC message as sent (None when the connection failed: no answer at all)."""

    def __init__(self, http: Any, url: str) -> None:
        self.http = http
        self.url = url
        self.headers = {
            "Authorization": f"Bearer {TOKEN}",
            "Accept": "application/json, text/event-stream",
        }
        self.next_id = 0

    async def post(self, message: dict[str, Any]) -> dict[str, Any] | None:
        import httpx2

        try:
            reply = await self.http.post(self.url, json=message, headers=self.headers)
        except httpx2.HTTPError:
            return None
        if "mcp-session-id" in reply.headers:
            self.headers["mcp-session-id"] = reply.headers["mcp-session-id"]
        if "id" not in message:
            return {}
        for line in reply.text.splitlines():
            if line.startswith("data:"):
                found: dict[str, Any] = json.loads(line[5:])
                if found.get("id") == message["id"]:
                    return found
        if reply.headers.get("content-type", "").startswith("application/json"):
            answer: dict[str, Any] = reply.json()
            return answer
        return None

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        self.next_id += 1
        return await self.post(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        )

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any] | None:
        return await self.request("tools/call", {"name": tool, "arguments": arguments})

    async def open(self) -> None:
        import mcp_types

        initialize = {
            "protocolVersion": mcp_types.LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "fault-test", "version": "0"},
        }
        answer = await self.request("initialize", initialize)
        assert answer is not None and "result" in answer, answer
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})


@asynccontextmanager
async def http_proxy(
    *arguments: str, errors: Path, env: dict[str, str] | None = None
) -> AsyncIterator[tuple[Http, asyncio.subprocess.Process]]:
    """The proxy serving Streamable HTTP, with a session open; standard error to ``errors``."""
    import httpx2

    port = free_port()
    with errors.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            *proxy_args(*arguments, "--http", str(port)),
            env={**os.environ, "RECALLBENCH_PROXY_TOKEN": TOKEN, **(env or {})},
            stdin=asyncio.subprocess.DEVNULL,
            stderr=stderr,
        )
    url = f"http://127.0.0.1:{port}/mcp"
    limits = httpx2.Limits(max_connections=1000, max_keepalive_connections=1000)
    try:
        await wait_for_listener(url, GUARD, process)
        async with httpx2.AsyncClient(timeout=GUARD, limits=limits) as http:
            client = Http(http, url)
            await client.open()
            yield client, process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def ended(process: asyncio.subprocess.Process, errors: Path) -> tuple[int, str]:
    status = await asyncio.wait_for(process.wait(), GUARD)
    return status, errors.read_text()


# --- 19: every search answered after SIGTERM is logged ----------------------------------


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_http_signal_with_searches_in_flight_logs_every_answered_search(
    signum: signal.Signals, tmp_path: Path
) -> None:
    """300 searches sent at once over HTTP, the signal once 30 are answered: the calls the
    proxy still answers in its drain are logged too, the exit line's count is the rows in
    the store, and every call got an answer or an error reply."""
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    errors = tmp_path / "stderr.txt"
    total, before = 300, 30

    async def scenario() -> tuple[int, str, list[dict[str, Any] | None]]:
        arguments = ("--profile", str(profile(tmp_path)), "--store", url)
        async with http_proxy(*arguments, errors=errors) as (client, process):
            assert text_of(await client.call("write", content="Deploys are frozen.") or {})
            calls = [
                asyncio.ensure_future(client.call("search", query=f"q{i}")) for i in range(total)
            ]
            while sum(call.done() for call in calls) < before:
                await asyncio.sleep(0.01)
            process.send_signal(signum)
            answers = await asyncio.wait_for(asyncio.gather(*calls), GUARD)
            status, stderr = await ended(process, errors)
        return status, stderr, answers

    status, stderr, answers = asyncio.run(scenario())
    assert "Traceback" not in stderr, stderr
    answered = sum(answer is not None and "result" in answer for answer in answers)
    assert answered >= before
    written, full, lost, refused = summary(stderr)
    assert (full, lost, refused) == (0, 0, 0), stderr
    assert stored_records(url) == written  # the count is the rows, always
    assert len(stored_queries(url)) >= answered, stderr  # and every answered search is one
    cut = [answer for answer in answers if answer is not None and "error" in answer]
    assert status == (INTERRUPTED if cut else 0), stderr


# --- 21: SIGTERM while a call waits on a hung server ------------------------------------


def test_http_sigterm_while_a_call_waits_on_a_hung_server(tmp_path: Path) -> None:
    """The agent's call gets a JSON-RPC error that says the proxy stopped (not a dropped
    connection), the proxy exits with the table's "interrupted" status, no traceback."""
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    errors = tmp_path / "stderr.txt"
    marker = tmp_path / "hanging"

    async def scenario() -> tuple[int, str, dict[str, Any] | None, dict[str, Any] | None]:
        arguments = ("--profile", str(profile(tmp_path)), "--store", url)
        env = {"FAULTY_HANG_MARKER": str(marker)}
        async with http_proxy(*arguments, errors=errors, env=env) as (client, process):
            done = await client.call("search", query="before")
            hung = asyncio.ensure_future(client.call("search", query="hang"))
            while not marker.exists():  # the call waits on the server
                await asyncio.sleep(0.02)
            process.send_signal(signal.SIGTERM)
            answer = await asyncio.wait_for(hung, GUARD)
            status, stderr = await ended(process, errors)
        return status, stderr, done, answer

    status, stderr, done, answer = asyncio.run(scenario())
    assert done is not None and "result" in done
    assert answer is not None and "error" in answer, answer
    assert "stopping" in answer["error"]["message"]
    assert "Traceback" not in stderr, stderr
    assert status == INTERRUPTED, stderr
    assert "1 call in flight" in stderr
    assert summary(stderr)[1:] == (0, 0, 0) and stored_queries(url) == ["before"]


# --- 20: a shadow candidate that does not start -----------------------------------------

HANGS = "import time; time.sleep(3600)"
EXITS = "import sys; print('candidate: no config', file=sys.stderr); sys.exit(1)"
NO_TOOLS = (
    "from mcp.server import MCPServer\n"
    "server = MCPServer('empty')\n"
    "@server.tool()\n"
    "def other() -> str:\n"
    "    return 'x'\n"
    "server.run()\n"
)


def candidate(tmp_path: Path, name: str, code: str) -> Path:
    """A candidate's profile; one that hangs is given 3 s to start (the others the proxy's
    own limit, which a loaded machine's Python start needs)."""
    script = tmp_path / f"{name}.py"
    script.write_text(code)
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\n[server]\n'
        f"command = {json.dumps([sys.executable, str(script)])}\n"
        f"startup_timeout = {3 if code == HANGS else 60}\n"
        '[ingest]\ntool = "write"\nitem = { content = "{text}" }\n'
        '[search]\ntool = "search"\narguments = { query = "{query}" }\n'
        '[results]\nsource = "text_blocks"\nmatch = "content"\n'
    )
    return path


@pytest.mark.parametrize(
    ("name", "code", "reason"),
    [
        ("hangs", HANGS, "did not start within 3 s"),
        ("exits", EXITS, "failed to start"),
        ("lacks", NO_TOOLS, "has no tool 'write'"),
    ],
)
@pytest.mark.parametrize("interleave", [False, True], ids=["mirror", "interleave"])
def test_a_candidate_that_does_not_start_leaves_the_proxy_serving(
    name: str, code: str, reason: str, interleave: bool, tmp_path: Path
) -> None:
    """The agent's initialize is answered, its calls are served by the primary and logged;
    the candidate's absence is said at start and counted in the exit summary."""
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    arguments = [
        "--profile", str(profile(tmp_path)), "--store", url,
        "--shadow", str(candidate(tmp_path, name, code)), "--shadow-percent", "100",
    ]  # fmt: skip
    arguments += ["--interleave"] if interleave else []

    async def scenario() -> tuple[int, str]:
        async with stdio_proxy(*arguments) as proxy:  # initialize answered
            await proxy.call("write", content="Deploys are frozen on Fridays.")
            assert "Deploys" in text_of(await proxy.call("search", query="deploys"))
            assert "Deploys" in text_of(await proxy.call("search", query="friday"))
            return await proxy.finish()

    status, stderr = asyncio.run(asyncio.wait_for(scenario(), 3 * GUARD))
    assert status == 0, stderr
    assert "Traceback" not in stderr, stderr
    assert f"shadow: the candidate {name} is left out: " in stderr and reason in stderr, stderr
    assert "serving without it" in stderr
    assert f"shadow: {name} absent: 1 write and 2 searches not mirrored" in stderr, stderr
    assert stored_queries(url) == ["deploys", "friday"]
    assert summary(stderr)[1:] == (0, 0, 0)


# --- 23: a store that cannot be opened at start -----------------------------------------


def run_proxy(
    tmp_path: Path, *arguments: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A stdio proxy session: initialize, a write and a search, end of input."""
    import mcp_types

    messages: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": mcp_types.LATEST_PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "fault-test", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "write", "arguments": {"content": "Deploys are frozen."}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "deploys"}},
        },
    ]
    command = proxy_args("--profile", str(profile(tmp_path)), *arguments)
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert process.stdin is not None and process.stdout is not None
    answers = []
    for message in messages:  # one at a time: the answer before the next request
        try:
            process.stdin.write(json.dumps(message) + "\n")
            process.stdin.flush()
        except BrokenPipeError:
            break
        if "id" in message:
            line = process.stdout.readline()
            if not line:
                break
            answers.append(line)
    stdout, stderr = process.communicate(timeout=GUARD)
    return subprocess.CompletedProcess(
        command, process.returncode, "".join(answers) + stdout, stderr
    )


def garbage_store(tmp_path: Path) -> str:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not a database, " * 100)
    return f"sqlite:///{path}"


def closed_postgres() -> str:
    return f"postgresql://rb@127.0.0.1:{free_port()}/recallbench"


@pytest.mark.parametrize(
    ("kind", "status"), [("malformed URL", 2), ("not a database", 2), ("unreachable", 69)]
)
def test_an_explicit_store_that_cannot_be_opened_stops_the_proxy_before_it_starts(
    kind: str, status: int, tmp_path: Path
) -> None:
    store = {
        "malformed URL": "nosuchdb://somewhere",
        "not a database": garbage_store(tmp_path),
        "unreachable": closed_postgres(),
    }[kind]
    done = run_proxy(tmp_path, "--store", store)
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "error:" in done.stderr and "--no-require-store" in done.stderr, done.stderr
    assert done.stdout == ""  # nothing answered: the server was never started


@pytest.mark.parametrize("how", ["--no-require-store", "default store"])
def test_a_store_that_cannot_be_opened_counts_what_was_not_stored(how: str, tmp_path: Path) -> None:
    """Opted out (or the default store, not asked for): the agent is served, and the exit
    line says telemetry was off and how many records were not stored."""
    store = garbage_store(tmp_path)
    if how == "default store":
        done = run_proxy(tmp_path, env={"RECALLBENCH_STORE": store})
    else:
        done = run_proxy(tmp_path, "--store", store, how)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert ["result" in answer for answer in answers] == [True] * 3  # all served
    assert "telemetry is off: the store cannot be opened" in done.stderr
    # the search and its scroll_past at the end of the session
    assert "telemetry: off (the store could not be opened): 2 records not stored" in done.stderr


def test_a_full_disk_at_start_is_a_service_failure(tmp_path: Path) -> None:
    """A SQLite store on a full file system (a tmpfs of 64 KiB, filled): exit 69 and
    nothing served; with --no-require-store the records not stored are counted."""
    mount = tmp_path / "full"
    mount.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True
        ).returncode
    ):
        pytest.skip("mounting a small file system needs root")
    try:
        with (mount / "filler").open("wb") as filler, pytest.raises(OSError, match="No space"):
            filler.write(b"x" * 1024 * 1024)
        store = f"sqlite:///{mount / 'telemetry.db'}"
        refused = run_proxy(tmp_path, "--store", store)
        assert refused.returncode == 69, refused.stderr
        assert "Traceback" not in refused.stderr and refused.stdout == ""
        allowed = run_proxy(tmp_path, "--store", store, "--no-require-store")
        assert allowed.returncode == 0, allowed.stderr
        assert "2 records not stored" in allowed.stderr
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_the_help_says_what_the_proxy_does_under_these_faults() -> None:
    from click.testing import CliRunner

    from recallbench.cli import main

    shown = CliRunner().invoke(main, ["proxy", "--help"], terminal_width=200).output
    assert "--require-store / --no-require-store" in shown
    assert "130 (interrupted)" in shown and "exit 69" in shown
    assert "left out" in shown  # a candidate that does not start
