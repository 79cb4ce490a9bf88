"""The stdio proxy's relay of JSON-RPC lines (recallbench.online._relay), with real
processes: `recallbench proxy` in front of a tiny scripted stdio server that answers in
the TypeScript SDK's key order, sends notifications and requests of its own, echoes
megabytes and dies on request. The client is raw JSON lines, so ids, bytes and odd input
are seen as sent. What the agent sees through the SDK path is compared in test_proxy*.py
(the relay serves those tests over stdio)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from recallbench.online._hits import text_id
from recallbench.online._wire import NO_ID, id_key, response_id
from recallbench.store import open_store

GUARD = 60.0
"""Seconds after which a test gives up waiting (a hang, never a measurement)."""
BIG = 5 * 1024 * 1024

SERVER = r"""
import json, os, sys

def send(message):
    # the TypeScript SDK's order: result first, id last
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()

def answer(ident, result):
    send({"result": result, "jsonrpc": "2.0", "id": ident})

def text(ident, value):
    answer(ident, {"content": [{"type": "text", "text": value}]})

NAMES = ("search", "write", "ask", "die", "seen", "slow")
TOOLS = [{"name": name, "inputSchema": {"type": "object"}} for name in NAMES]
seen, backlog = [], []

def handle(message):
    method, ident = message.get("method"), message.get("id")
    seen.append(method or "response")
    if method == "initialize":
        info = {"name": "scripted", "version": "1"}
        version = message["params"]["protocolVersion"]
        result = {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info}
        answer(ident, result)
    elif method == "tools/list":
        answer(ident, {"tools": TOOLS})
    elif method == "tools/call":
        name, arguments = message["params"]["name"], message["params"].get("arguments", {})
        if name == "search":
            query = arguments["query"]
            big = query.startswith("big ")
            text(ident, "x" * int(query.split()[1]) if big else f"{query}: a note")
        elif name == "write":
            text(ident, f"stored {len(arguments['content'])}")
        elif name == "ask":  # a notification, then a request of the server's with id 0
            log = {"level": "info", "data": "asking"}
            send({"method": "notifications/message", "params": log, "jsonrpc": "2.0"})
            send({"method": "roots/list", "jsonrpc": "2.0", "id": 0})
            while True:  # what comes before the answer is handled after it
                reply = json.loads(sys.stdin.readline())
                if "method" not in reply:
                    break
                backlog.append(reply)
            seen.append("response")
            text(ident, json.dumps(reply))
        elif name == "slow":  # answers after the proxy's timeout (the test's profile: 1 s)
            import time
            time.sleep(2)
            text(ident, "late")
        elif name == "die":
            print("scripted: dying on purpose", file=sys.stderr, flush=True)
            os._exit(3)
        elif name == "seen":
            text(ident, json.dumps(seen))
    elif ident is not None and method is not None:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "Not found"}})

for line in sys.stdin:
    handle(json.loads(line))
    while backlog:
        handle(backlog.pop(0))
"""


def profile(tmp_path: Path, call_timeout: float = 30) -> Path:
    """A profile for the scripted server: text blocks, hits identified by their text."""
    server = tmp_path / "scripted.py"
    server.write_text(SERVER)
    path = tmp_path / "scripted.toml"
    path.write_text(
        f'name = "scripted"\n[server]\ncommand = {json.dumps([sys.executable, str(server)])}\n'
        f"call_timeout = {call_timeout}\n"
        '[ingest]\ntool = "write"\nitem = { content = "{text}" }\n'
        '[search]\ntool = "search"\narguments = { query = "{query}" }\n'
        '[results]\nsource = "text_blocks"\nmatch = "content"\n'
    )
    return path


class Agent:
    """Raw JSON-RPC lines over the proxy's standard input and output."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.process.stdin is not None
        line = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        self.process.stdin.write(line)
        await self.process.stdin.drain()

    async def line(self) -> bytes:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), GUARD)
        assert line, "the proxy closed its output"
        return line

    async def receive(self) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(await self.line())
        return message

    async def call(self, ident: Any, tool: str, **arguments: Any) -> dict[str, Any]:
        params = {"name": tool, "arguments": arguments}
        await self.send({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params})
        answer = await self.receive()
        assert answer["id"] == ident, answer
        return answer

    async def finish(self) -> tuple[int, str]:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        status = await asyncio.wait_for(self.process.wait(), GUARD)
        return status, (await self.process.stderr.read()).decode()


@asynccontextmanager
async def relayed(tmp_path: Path, *options: str, timeout: float = 30) -> AsyncIterator[Agent]:
    command = ["proxy", "--profile", str(profile(tmp_path, timeout))]
    process = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "recallbench", *command],
        *options,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=4 * BIG,
    )
    agent = Agent(process)
    try:
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
        await agent.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        assert json.loads(await agent.line()) == {
            "result": {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "scripted", "version": "1"},
            },
            "jsonrpc": "2.0",
            "id": 0,
        }  # the server's own answer
        await agent.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield agent
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def text(answer: dict[str, Any]) -> str:
    return "".join(block["text"] for block in answer["result"]["content"])


def run(scenario: Any) -> Any:
    return asyncio.run(asyncio.wait_for(scenario, 3 * GUARD))


def test_response_ids_are_read_from_the_ends_of_the_line() -> None:
    typescript = b'{"result":{"structuredContent":{"id":7}},"jsonrpc":"2.0","id":"a\\"b"}\n'
    assert response_id(typescript) == 'a"b'
    python = b'{"jsonrpc":"2.0","id":12,"result":{"id":3}}\n'
    assert response_id(python) == 12
    assert response_id(b'{"result":{"x":{"id":7}}}\n') is NO_ID  # no top-level id: parsed
    request = b'{"method":"roots/list","jsonrpc":"2.0","id":0}\n'  # the server's own request
    assert response_id(request) is NO_ID
    assert id_key(1) != id_key("1") and id_key(1) == id_key(1)


def test_ids_pass_as_sent_and_answers_keep_the_server_s_bytes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"

    async def scenario() -> tuple[list[bytes], int]:
        async with relayed(tmp_path, "--store", url) as agent:
            for ident in (7, "7", "recallbench", 8.5):  # all in flight at once
                params = {"name": "search", "arguments": {"query": f"q{ident}"}}
                await agent.send(
                    {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}
                )
            lines = [await agent.line() for _ in range(4)]
            status, _ = await agent.finish()
        return lines, status

    lines, status = run(scenario())
    assert status == 0
    assert sorted(lines) == sorted(
        b'{"result":{"content":[{"type":"text","text":"q%s: a note"}]},"jsonrpc":"2.0","id":%s}\n'
        % (str(ident).encode(), json.dumps(ident).encode())
        for ident in (7, "7", "recallbench", 8.5)
    )
    with open_store(url) as store:  # logged from the raw answers, after they went out
        assert sorted(entry.text for entry in store.query_log()) == [
            "q7",
            "q7",
            "q8.5",
            "qrecallbench",
        ]


def test_notifications_and_the_server_s_requests_pass_both_ways(tmp_path: Path) -> None:
    async def scenario() -> list[dict[str, Any]]:
        async with relayed(tmp_path) as agent:
            params = {"name": "ask", "arguments": {}}
            await agent.send({"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": params})
            notification, request = await agent.receive(), await agent.receive()
            # the agent answers the server's request 0 while its own request 0 is open
            await agent.send({"jsonrpc": "2.0", "id": 0, "result": {"roots": []}})
            answer = await agent.receive()
            await agent.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
            seen = await agent.call("s", "seen")
            await agent.finish()
        return [notification, request, answer, seen]

    notification, request, answer, seen = run(scenario())
    assert notification["method"] == "notifications/message"
    assert request == {"method": "roots/list", "jsonrpc": "2.0", "id": 0}
    assert answer["id"] == 0
    assert json.loads(text(answer)) == {"jsonrpc": "2.0", "id": 0, "result": {"roots": []}}
    methods = json.loads(text(seen))
    # the server got the agent's handshake, the proxy's own tools/list, the answer, the
    # notification; never a request of the proxy's under an id an agent could use
    assert methods[:2] == ["initialize", "notifications/initialized"]
    assert "response" in methods and "notifications/roots/list_changed" in methods
    assert methods.count("tools/list") == 1


def test_five_megabytes_each_way(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with relayed(tmp_path, "--store", url) as agent:
            written = await agent.call(1, "write", content="y" * BIG)
            found = await agent.call(2, "search", query=f"big {BIG}")
            await agent.finish()
        return written, found

    written, found = run(scenario())
    assert text(written) == f"stored {BIG}"
    assert len(text(found)) == BIG


def test_a_malformed_line_gets_the_parse_error_and_the_session_goes_on(tmp_path: Path) -> None:
    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with relayed(tmp_path) as agent:
            await agent.send(b"this is not json\n\n")  # the blank line is ignored
            error = await agent.receive()
            answer = await agent.call(3, "search", query="still")
            await agent.finish()
        return error, answer

    error, answer = run(scenario())
    assert error == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error"},
    }
    assert text(answer) == "still: a note"


def test_the_proxy_s_own_tools_are_listed_and_answered_never_forwarded(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    note = text_id("deploys: a note")  # a text-only server's hit is named by its text

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with relayed(tmp_path, "--store", url, "--validate-tool", "--outcome-tool") as agent:
            await agent.send({"jsonrpc": "2.0", "id": "l", "method": "tools/list"})
            tools = await agent.receive()
            await agent.call(1, "search", query="deploys")
            validated = await agent.call(2, "memory_validate", id=note, useful=True)
            seen = await agent.call(3, "seen")
            await agent.finish()
        return tools, validated, seen

    tools, validated, seen = run(scenario())
    names = [tool["name"] for tool in tools["result"]["tools"]]
    assert names == [
        *("search", "write", "ask", "die", "seen", "slow"),
        *("memory_validate", "recallbench_record_outcome"),
    ]
    assert text(validated).startswith("recorded:")
    assert "memory_validate" not in text(seen)


def test_the_server_dying_mid_call_ends_the_proxy_with_status_3(tmp_path: Path) -> None:
    """Status 3: the system under test failed (the exit-code table's)."""
    from mcp_types import CONNECTION_CLOSED

    async def scenario() -> tuple[dict[str, Any], int, str]:
        async with relayed(tmp_path) as agent:
            answer = await agent.call(5, "die")
            status, stderr = await agent.finish()
        return answer, status, stderr

    answer, status, stderr = run(scenario())
    assert answer["error"] == {
        "code": CONNECTION_CLOSED,
        "message": "recallbench proxy: scripted closed the connection (it exited)",
    }
    assert status == 3
    assert "dying on purpose" in stderr and "the memory server closed" in stderr


def test_the_candidate_s_line_client_lists_calls_and_sees_the_server_exit(
    tmp_path: Path,
) -> None:
    """The shadow's candidate over lines, niced: its tools (the handshake done by the client),
    a call answered as the server's JSON, and the connection-closed error when the
    server exits mid-call."""
    from contextlib import AsyncExitStack

    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    from recallbench.online._upstream import profile_launch
    from recallbench.online._wire import NICE, LineClient
    from recallbench.systems._profile import load_profile

    async def scenario() -> tuple[list[str], dict[str, Any], int, bool]:
        launch = profile_launch(load_profile(profile(tmp_path)), tmp_path)
        async with AsyncExitStack() as stack:
            client = await LineClient.connect(launch, stack, NICE)
            pid = client.upstream.process.pid
            mine = os.getpriority(os.PRIO_PROCESS, 0)
            assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, mine + NICE)
            names = await client.tool_names()
            found = await client.call_tool("search", {"query": "deploys"})
            with pytest.raises(MCPError) as died:
                await client.call_tool("die", {})
            await asyncio.wait_for(client.lost.wait(), GUARD)
            return names, found, died.value.error.code, client.lost.is_set()

    names, found, code, lost = run(scenario())
    assert names == ["search", "write", "ask", "die", "seen", "slow"]
    assert found == {"content": [{"type": "text", "text": "deploys: a note"}]}
    assert code == CONNECTION_CLOSED and lost


def test_a_timeout_answers_the_agent_cancels_at_the_server_and_drops_the_late_answer(
    tmp_path: Path,
) -> None:
    from mcp_types import REQUEST_TIMEOUT

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], list[str]]:
        async with relayed(tmp_path, timeout=1) as agent:
            late = await agent.call(1, "slow")
            # the one-threaded server is busy with "slow" for another second: a call sent
            # now would wait that second out against its own 1 s timeout (flaky under load)
            await asyncio.sleep(1.5)
            after = await agent.call(2, "search", query="after")  # not the late answer
            seen = json.loads(text(await agent.call(3, "seen")))
            await agent.finish()
        return late, after, seen

    late, after, seen = run(scenario())
    assert late["error"] == {
        "code": REQUEST_TIMEOUT,
        "message": "recallbench proxy: scripted did not answer tools/call within 1 s "
        "(the profile's call_timeout)",
    }
    assert text(after) == "after: a note"
    assert "notifications/cancelled" in seen


def test_a_timeout_set_by_the_option_is_credited_to_the_option(tmp_path: Path) -> None:
    """Issue 28 item 31: the error credited the profile's call_timeout when --call-timeout
    had set it."""
    from mcp_types import REQUEST_TIMEOUT

    async def scenario() -> dict[str, Any]:
        async with relayed(tmp_path, "--call-timeout", "1") as agent:
            late = await agent.call(1, "slow")
            await agent.finish()
        return late

    late = run(scenario())
    assert late["error"] == {
        "code": REQUEST_TIMEOUT,
        "message": "recallbench proxy: scripted did not answer tools/call within 1 s "
        "(--call-timeout)",
    }
