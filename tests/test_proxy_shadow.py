"""``recallbench proxy --shadow``: a candidate server gets the agent's writes and a
deterministic sample of its searches after the agent's answer; both ranked lists land in
``shadow_runs``. Against real server-memory (primary and candidate), then a candidate that
hangs and dies, then the sampling, the argument mapping and the bounded queue alone."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from recallbench.core._query_key import query_key
from recallbench.online._hits import text_id
from recallbench.online._shadow import Shadow
from recallbench.online._shadow_calls import (
    bindings,
    mirrored_reader,
    sampled,
    search_arguments,
    write_calls,
)
from recallbench.store import open_store
from recallbench.systems._profile import load_profile, shipped_profiles

Call = tuple[str, dict[str, Any]]

NOTES = {
    "ledger-db": "The ledger runs on PostgreSQL since March.",
    "backup-db": "Nightly backups of PostgreSQL go to the cold bucket.",
    "deploy-freeze": "Deploys are frozen on Fridays.",
    "standup": "The Friday standup moved to 10:00.",
}
WRITE: Call = (
    "create_entities",
    {
        "entities": [
            {"name": name, "entityType": "memory", "observations": [text]}
            for name, text in NOTES.items()
        ]
    },
)
SEARCHES = ["postgres", "PostgreSQL", "friday", "Friday", "standup", "ledger", "postgres"]
"""At 50%: postgres, friday (either spelling) and standup are sampled, the others not
(asserted below)."""
LATE: Call = (
    "add_observations",
    {"observations": [{"entityName": "standup", "contents": ["Friday at 10:30 now."]}]},
)


def calls() -> list[Call]:
    return [WRITE, *(("search_nodes", {"query": q}) for q in SEARCHES), LATE]


def proxy_command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "recallbench", "proxy", *arguments]


async def session(
    command: Sequence[str], script: Sequence[Call], wait_for: tuple[str, int] | None = None
) -> tuple[list[str], str]:
    """The agent's answers (as JSON) to ``script`` through the proxy, and the proxy's
    standard error. ``wait_for`` (store url, rows): before hanging up, wait until the store
    holds that many shadow runs (the mirror runs after the answers, up to the exit)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError

    parameters = StdioServerParameters(
        command=command[0], args=list(command[1:]), env=dict(os.environ)
    )
    errors = Path(os.environ.get("TMPDIR", "/tmp")) / f"shadow-{os.getpid()}-{time.time_ns()}.err"
    with errors.open("w+") as errlog:
        async with (
            stdio_client(parameters, errlog=errlog) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            answers = []
            for name, arguments in script:
                try:
                    result = await client.call_tool(name, arguments)
                    answers.append(json.dumps(result.model_dump(mode="json")))
                except MCPError as error:
                    answers.append("error " + json.dumps(error.error.model_dump(mode="json")))
            if wait_for is not None:
                await _wait_for_runs(*wait_for)
    for _ in range(100):  # the proxy writes its summary as it stops
        if "shadow:" in errors.read_text() or not wait_for:
            break
        await asyncio.sleep(0.1)
    text = errors.read_text()
    errors.unlink()
    return answers, text


async def _wait_for_runs(url: str, count: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open_store(url) as store:
            if store.count("shadow_runs") >= count:
                return
        await asyncio.sleep(0.1)
    raise AssertionError(f"fewer than {count} shadow runs after {timeout} s")


def test_a_server_memory_candidate_mirrors_writes_and_sampled_searches(
    installed_servers: Path, tmp_path: Path
) -> None:
    # fixed by the hash of the words: "friday" and "Friday" are one text, drawn together
    assert [sampled(q, 50) for q in SEARCHES] == [1, 0, 1, 1, 1, 0, 1]
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    candidate_dir = tmp_path / "candidate"
    shadowed = proxy_command(
        "--profile", "server-memory", "--store", url, "--shadow", "server-memory",
        "--shadow-percent", "50", "--shadow-store-dir", str(candidate_dir),
    )  # fmt: skip
    answers, stderr = asyncio.run(session(shadowed, calls(), (url, 5)))
    plain, _ = asyncio.run(
        session(proxy_command("--profile", "server-memory", "--store", f"{url}-plain"), calls())
    )
    assert answers == plain  # the agent sees exactly what it sees without a shadow
    # the create and the late add_observations: the same server, so every write goes as it came
    assert "shadow: 5 searches sampled (2 not sampled): 5 pairs written, 0 dropped" in stderr
    assert "2 writes mirrored, 0 dropped; 0 candidate errors" in stderr

    with open_store(url) as store:
        runs = store.shadow_runs()
        logged = {entry.query_id: entry for entry in store.query_log()}
    assert [logged[run["query_id"]].text for run in runs] == [
        "postgres", "friday", "Friday", "standup", "postgres"
    ]  # fmt: skip
    # the candidate holds the same memories: its searches find what the primary finds
    assert [run["treatment_results"] for run in runs] == [
        ("ledger-db", "backup-db"),
        ("deploy-freeze", "standup"),
        ("deploy-freeze", "standup"),
        ("standup",),
        ("ledger-db", "backup-db"),
    ]
    for run in runs:
        assert run["control_results"] == run["treatment_results"] == logged[run["query_id"]].results
        assert run["control_latency_ms"] > 0 and run["treatment_latency_ms"] > 0
        assert (run["kendall_tau"], run["jaccard"], run["top1_changed"]) == (1.0, 1.0, False)
        assert run["ab_test_id"] is None
        # the query unit is written with the pair (m014): "friday" and "Friday" are one
        assert run["query_key"] == query_key(logged[run["query_id"]].text)
    stored = (candidate_dir / "memory.jsonl").read_text()
    assert all(name in stored for name in NOTES) and "10:30" in stored  # the update too


FLAKY_SERVER = """
import os
import anyio
from mcp.server import MCPServer

server = MCPServer("flaky-notes")
NOTES = []

@server.tool()
def write_note(content: str) -> str:
    NOTES.append(content)
    return f"stored note {len(NOTES)}"

@server.tool()
async def search_notes(query: str, limit: int = 10) -> list[str]:
    if query == "hang":
        await anyio.sleep(3600)
    if query == "die":
        os._exit(3)
    return [n for n in NOTES if query.lower() in n.lower()][:limit]

server.run()
"""


def test_a_candidate_that_hangs_or_dies_changes_nothing_for_the_agent(
    installed_servers: Path, tmp_path: Path
) -> None:
    """A text-only candidate (server-memory's entities mapped to write_note) with a 1 s
    call timeout: it hangs on one search and exits on another; the agent's answers equal
    those of a proxy without shadow, and each failure is a run with no treatment."""
    script = tmp_path / "flaky.py"
    script.write_text(FLAKY_SERVER)
    profile = tmp_path / "flaky.toml"
    profile.write_text(
        f'name = "flaky"\n[server]\ncommand = {json.dumps([sys.executable, str(script)])}\n'
        "call_timeout = 1\n"
        '[ingest]\ntool = "write_note"\nitem = { content = "{text}" }\n'
        '[search]\ntool = "search_notes"\narguments = { query = "{query}", limit = "{k}" }\n'
        '[results]\nsource = "text_blocks"\nmatch = "content"\n'
    )
    script_calls = [
        WRITE,
        *(("search_nodes", {"query": q}) for q in ("postgres", "hang", "friday", "die", "ledger")),
    ]
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    command = proxy_command(
        "--profile", "server-memory", "--store", url, "--shadow", str(profile),
        "--shadow-percent", "100",
    )  # fmt: skip
    started = time.monotonic()
    answers, stderr = asyncio.run(session(command, script_calls, (url, 5)))
    plain, _ = asyncio.run(
        session(
            proxy_command("--profile", "server-memory", "--store", f"{url}-plain"), script_calls
        )
    )
    assert answers == plain
    assert time.monotonic() - started < 60
    assert "the candidate failed a search" in stderr
    assert "3 candidate errors" in stderr  # hang (timeout), die, and the search after it
    with open_store(url) as store:
        runs = store.shadow_runs()
        text = {entry.query_id: entry.text for entry in store.query_log()}
    by_query = {text[run["query_id"]]: run for run in runs}
    assert by_query["postgres"]["treatment_results"] == (
        text_id(NOTES["ledger-db"]),
        text_id(NOTES["backup-db"]),
    )
    assert by_query["friday"]["treatment_results"] == (
        text_id(NOTES["deploy-freeze"]),
        text_id(NOTES["standup"]),
    )
    for query in ("hang", "die", "ledger"):
        run = by_query[query]
        assert run["treatment_results"] == () and run["treatment_latency_ms"] is None
        assert run["kendall_tau"] is None and run["control_latency_ms"] is not None
    assert by_query["ledger"]["control_results"] == ("ledger-db",)
    # each failure's text is stored with its side; a side that answered has none
    assert by_query["hang"]["treatment_error"] == "timeout"
    assert by_query["die"]["treatment_error"] == (
        "MCPError: recallbench proxy: flaky closed the connection (it exited)"
    )
    assert by_query["ledger"]["treatment_error"] == "RuntimeError: flaky exited"
    for query in ("postgres", "friday"):
        assert by_query[query]["treatment_error"] is None
    assert all(run["control_error"] is None for run in runs)


# --- the parts alone --------------------------------------------------------------------


def test_sampling_is_a_stable_function_of_the_query() -> None:
    queries = [f"query {i}" for i in range(10_000)]
    chosen = [q for q in queries if sampled(q, 10)]
    assert 900 <= len(chosen) <= 1100  # binomial(10,000, 0.1): sd 30
    assert chosen == [q for q in queries if sampled(q, 10)]
    assert all(sampled(q, 100) for q in queries[:100])
    assert not any(sampled(q, 0) for q in queries[:100])
    assert set(chosen) <= {q for q in queries if sampled(q, 20)}  # nested as it grows


def test_writes_and_searches_are_mapped_through_the_profiles() -> None:
    memory = load_profile(shipped_profiles()["server-memory"])
    recall = load_profile(shipped_profiles()["agentrecall"])
    _, arguments = WRITE
    assert write_calls(memory.ingest, memory.ingest, arguments) == [arguments]
    assert write_calls(memory.ingest, recall.ingest, arguments)[0] == {
        "content": NOTES["ledger-db"],
        "metadata": {"doc_id": "ledger-db"},
    }
    assert len(write_calls(memory.ingest, recall.ingest, arguments)) == 4  # one per item
    back = write_calls(recall.ingest, memory.ingest, {"content": "Deploys are frozen."})
    assert back == [
        {
            "entities": [
                {
                    "name": text_id("Deploys are frozen."),
                    "entityType": "memory",
                    "observations": ["Deploys are frozen."],
                }
            ]
        }
    ]
    assert bindings(memory.ingest.item, {"name": "x", "observations": ["a", "b"]}) == {
        "id": "x",
        "text": "a b",
    }
    search = {"query": "postgres"}
    assert search_arguments(memory.search, memory.search, search, "postgres") == search
    assert search_arguments(memory.search, recall.search, search, "postgres") == {
        "query": "postgres",
        "k": 10,
    }
    assert search_arguments(recall.search, memory.search, {"query": "q", "k": 3}, "q") == {
        "query": "q"
    }


def test_the_candidate_s_hits_are_named_by_the_mirrored_ids() -> None:
    """agentrecall's proxy view names hits by its row ids; mirrored writes carry the
    primary's ids at metadata.doc_id, which the shadow reads instead."""
    from recallbench.online._hits import hits_of

    recall = load_profile(shipped_profiles()["agentrecall"])
    memory = load_profile(shipped_profiles()["server-memory"])
    reader = mirrored_reader(recall)
    assert (reader.proxy.id, reader.proxy.text) == ("metadata.doc_id", "content")
    assert mirrored_reader(memory) is memory
    hit = {"id": 7, "content": NOTES["ledger-db"], "metadata": {"doc_id": "ledger-db"}}
    answer = {"content": [{"type": "text", "text": json.dumps(hit)}], "structuredContent": {
        "result": [hit]}}  # fmt: skip
    assert hits_of(recall, answer) == [("7", NOTES["ledger-db"])]
    assert hits_of(reader, answer) == [("ledger-db", NOTES["ledger-db"])]


def test_a_full_queue_drops_and_counts(installed_servers: Path) -> None:
    """Nothing serves the queue: the first job waits, the next are dropped; at close the
    waiting one is counted too. The agent's side only ever puts without waiting."""
    memory = load_profile(shipped_profiles()["server-memory"])

    class Never:
        lost = asyncio.Event()

    async def scenario() -> Shadow:
        shadow = Shadow(Never(), memory, memory, percent=100, size=1)  # type: ignore[arg-type]
        for query in ("a", "b", "c"):
            started = time.perf_counter()
            shadow.observe("search_nodes", {"query": query}, {"content": []}, 1.0, query)
            # a put that waited would wait forever (nothing serves the queue); a loaded
            # machine may still pause the process for a while
            assert time.perf_counter() - started < 1.0
        shadow.observe("create_entities", WRITE[1], {"content": [], "isError": True}, 1.0, None)
        shadow.observe("open_nodes", {"names": ["x"]}, {"content": []}, 1.0, None)  # a read
        assert dict(shadow.stats.dropped) == {"queue full": 2}
        shadow.close()
        shadow.observe("search_nodes", {"query": "d"}, {"content": []}, 1.0, "d")
        return shadow

    stats = asyncio.run(scenario()).stats
    # every sampled search is accounted for: none written, each dropped with its reason
    assert (stats.searches, stats.written, stats.writes) == (4, 0, 0)
    assert dict(stats.dropped) == {
        "queue full": 2,
        "queued at exit": 1,
        "sampled after the exit began": 1,
    }


def test_the_same_server_gets_every_write_but_not_reads(installed_servers: Path) -> None:
    """A candidate of the primary's own kind gets the agent's other accepted calls as they
    came (an update here), but not its search, its read tools, nor what the server
    annotates read-only; a call the primary refused is not mirrored."""
    memory = load_profile(shipped_profiles()["server-memory"])

    class Listed:
        lost = asyncio.Event()

        async def tools(self) -> list[dict[str, Any]]:
            return [
                {"name": name, "annotations": {"readOnlyHint": name == "read_graph"}}
                for name in ("create_entities", "add_observations", "read_graph", "search_nodes")
            ]

    async def scenario() -> list[Any]:
        shadow = Shadow(Listed(), memory, memory, percent=0, size=10)  # type: ignore[arg-type]
        await shadow.check_tools()
        ok = {"content": []}
        shadow.observe("add_observations", LATE[1], ok, 1.0, None)
        shadow.observe("add_observations", LATE[1], {"content": [], "isError": True}, 1.0, None)
        shadow.observe("read_graph", {}, ok, 1.0, None)
        shadow.observe("open_nodes", {"names": ["standup"]}, ok, 1.0, None)
        shadow.observe("search_nodes", {"query": "x"}, ok, 1.0, "q")  # sampled out at 0%
        jobs = []
        while True:
            try:
                jobs.append(shadow._receive.receive_nowait())
            except Exception:
                return jobs

    jobs = asyncio.run(scenario())
    assert [(job.kind, job.tool, job.calls) for job in jobs] == [
        ("write", "add_observations", (LATE[1],))
    ]


def test_usage_errors(tmp_path: Path) -> None:
    run = [sys.executable, "-m", "recallbench", "proxy"]
    shadow_only = subprocess.run(
        [*run, "--shadow", "server-memory", "--", "node", "x.js"], capture_output=True, text=True
    )
    assert shadow_only.returncode == 2 and "--shadow needs --profile" in shadow_only.stderr
    no_shadow = subprocess.run(
        [*run, "--profile", "server-memory", "--shadow-store-dir", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert no_shadow.returncode == 2 and "it needs --shadow" in no_shadow.stderr
    lone = subprocess.run(
        [*run, "--profile", "server-memory", "--interleave"], capture_output=True, text=True
    )
    assert (
        lone.returncode == 2 and "--interleave" in lone.stderr and "needs --shadow" in lone.stderr
    )
    wait = subprocess.run(
        [*run, "--profile", "server-memory", "--shadow", "server-memory", "--interleave-wait", "1"],
        capture_output=True,
        text=True,
    )
    assert wait.returncode == 2 and "it needs --interleave" in wait.stderr


@pytest.mark.parametrize("percent", ["-1", "101"])
def test_percent_range(percent: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "recallbench", "proxy", "--profile", "server-memory",
         "--shadow", "server-memory", "--shadow-percent", percent],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 2 and "--shadow-percent" in result.stderr


def test_the_cli_interleaves_and_serves_the_outcome_tool(
    installed_servers: Path, tmp_path: Path
) -> None:
    """`recallbench proxy --interleave --outcome-tool`: every search is shown as the
    team-draft interleaving of two lists that agree (so the agent sees the primary's
    order), stored with its teams and the session; the outcome tool is answered by the
    proxy and lands in the store with the same session."""
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    command = proxy_command(
        "--profile", "server-memory", "--store", url, "--shadow", "server-memory",
        "--shadow-percent", "100", "--shadow-store-dir", str(tmp_path / "candidate"),
        "--interleave", "--outcome-tool",
    )  # fmt: skip
    outcome: Call = ("recallbench_record_outcome", {"success": True, "outcome": 0.5})
    script = [WRITE, ("search_nodes", {"query": "postgres"}), outcome]
    answers, _ = asyncio.run(session(command, script, (url, 1)))
    plain, _ = asyncio.run(
        session(proxy_command("--profile", "server-memory", "--store", f"{url}-plain"), script[:2])
    )
    assert answers[:2] == plain
    assert '"is_error": false' in answers[2] and "recorded for session" in answers[2]
    with open_store(url) as store:
        (run,) = store.shadow_runs()
        (logged,) = store.session_outcomes()
    # the lists agree, so the draft keeps their order; the coin (seeded by the query id)
    # says which team placed the first, the other team the second
    assert [doc for doc, _ in run["interleaved"]] == ["ledger-db", "backup-db"]
    assert {team for _, team in run["interleaved"]} == {"control", "treatment"}
    assert (logged.session_id, logged.success, logged.outcome, logged.source) == (
        run["session_id"],
        True,
        0.5,
        "proxy",
    )


def test_interleave_needs_a_shadow(tmp_path: Path) -> None:
    result = subprocess.run(
        proxy_command("--profile", "server-memory", "--interleave"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "--interleave" in result.stderr
    assert "Traceback" not in result.stderr
