"""`recallbench proxy` against real memory servers: an MCP client gets byte-identical
answers through the proxy and from the server directly (stdio and Streamable HTTP), and
the store holds exactly the searches and feedback the session implies. Then the feedback
rules on synthetic sequences."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from recallbench.cli import main
from recallbench.core._net import free_port as _free_port
from recallbench.online._feedback import (
    RE_SEARCH_WINDOW,
    Feedback,
    Search,
    SessionFeedback,
    is_near_duplicate,
    re_search,
    result_ids,
    scroll_past,
)
from recallbench.online._hits import query_path
from recallbench.online._proxy_sessions import VALIDATE_TOOL, read_ids
from recallbench.online._upstream import profile_launch
from recallbench.store import open_store
from recallbench.systems._mcp import wait_for_listener
from recallbench.systems._profile import load_profile, shipped_profiles

Call = tuple[str, dict[str, Any]]

MEMORY_CALLS: list[Call] = [
    (
        "create_entities",
        {
            "entities": [
                {"name": name, "entityType": "memory", "observations": [text]}
                for name, text in (
                    ("ledger-db", "The ledger runs on PostgreSQL since March."),
                    ("backup-db", "Nightly backups of PostgreSQL go to the cold bucket."),
                    ("deploy-freeze", "Deploys are frozen on Fridays."),
                    ("pr-template", "Priya wants PR descriptions with a test plan."),
                    ("standup", "The Friday standup moved to 10:00."),
                )
            ]
        },
    ),
    ("search_nodes", {"query": "postgres"}),  # S1: ledger-db, backup-db
    ("open_nodes", {"names": ["backup-db"]}),  # read S1 #2
    ("search_nodes", {"query": "PostgreSQL"}),  # S2, near duplicate of S1
    ("search_nodes", {"query": "friday"}),  # S3: deploy-freeze, standup
    ("open_nodes", {"names": ["standup", "ledger-db"]}),  # read S3 #2, S2 #1 (closed)
    ("read_graph", {}),
    ("open_nodes", {"names": "not-a-list"}),  # the server's own argument error
    ("no_such_tool", {}),
]
"""One agent session with server-memory (searches are substring matches, in insertion
order)."""

RECALL_CALLS: list[Call] = [
    *(
        ("remember", {"content": text, "tags": ["ops"]})
        for text in (
            "The ledger runs on PostgreSQL since March.",
            "Nightly backups of PostgreSQL go to the cold bucket.",
            "Deploys are frozen on Fridays.",
            "The Friday standup moved to 10:00.",
        )
    ),
    ("recall", {"query": "postgresql", "k": 3}),  # S1: 1, 2
    ("recall", {"query": "PostgreSQL backups", "k": 3}),  # S2: 2, 1 (near duplicate)
    ("recall", {"query": "fridays", "k": 3}),  # S3: 3, 4
    ("list_memories", {"limit": 2}),
]
"""One agent session with agentrecall (PyPI; FastMCP 1.x answers, integer ids)."""

TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)?")


@dataclass
class Transcript:
    tools: list[str]
    answers: list[str]
    """Per call, ``CallToolResult.model_dump(mode="json")`` as JSON (or the JSON-RPC error)."""
    resources: list[str]
    """Resources and prompts, when the server has them."""


async def play(session: Any, calls: Sequence[Call]) -> Transcript:
    from mcp.shared.exceptions import MCPError

    tools = [json.dumps(t.model_dump(mode="json")) for t in (await session.list_tools()).tools]
    answers = []
    for name, arguments in calls:
        try:
            result = await session.call_tool(name, arguments)
        except MCPError as error:
            answers.append("error " + json.dumps(error.error.model_dump(mode="json")))
        else:
            answers.append(json.dumps(result.model_dump(mode="json")))
    resources = []
    capabilities = session.initialize_result.capabilities
    if capabilities.resources is not None:
        listed = await session.list_resources()
        resources.append(json.dumps(listed.model_dump(mode="json")))
        for resource in listed.resources:
            read = await session.read_resource(str(resource.uri))
            resources.append(json.dumps(read.model_dump(mode="json")))
        try:  # a JSON-RPC error of the server's own
            await session.read_resource("memory://no-such-thing")
        except MCPError as error:
            resources.append("error " + json.dumps(error.error.model_dump(mode="json")))
    if capabilities.prompts is not None:
        resources.append(json.dumps((await session.list_prompts()).model_dump(mode="json")))
    return Transcript(tools, answers, resources)


async def over_stdio(
    command: list[str], calls: Sequence[Call], env: dict[str, str], cwd: Path | None = None
) -> tuple[Transcript, str | None]:
    """The transcript of ``calls`` with the server started by ``command``, and the answer of
    memory_validate when the server has it."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    parameters = StdioServerParameters(
        command=command[0], args=command[1:], env=env, cwd=str(cwd) if cwd else None
    )
    streams = stdio_client(parameters, errlog=sys.stderr)  # not the default bound at import
    async with streams as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await _play_and_validate(session, calls)


async def _play_and_validate(session: Any, calls: Sequence[Call]) -> tuple[Transcript, str | None]:
    transcript = await play(session, calls)
    validated = None
    if any(VALIDATE_TOOL in tool for tool in transcript.tools):
        answer = await session.call_tool(VALIDATE_TOOL, {"id": "deploy-freeze", "useful": False})
        validated = answer.content[0].text
    return transcript, validated


def direct(name: str, workdir: Path, calls: Sequence[Call]) -> Transcript:
    """The calls made to the profile's server itself, with a fresh store in ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    launch = profile_launch(load_profile(shipped_profiles()[name]), workdir)
    env = {**os.environ, **launch.env}
    transcript, _ = asyncio.run(over_stdio(list(launch.command), calls, env, launch.cwd))
    return transcript


def proxy_command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "recallbench", "proxy", *arguments]


def events(url: str) -> tuple[list[Any], list[tuple[str, str, str | None, int | None]]]:
    """The logged queries and, per feedback event, (query text, kind, doc id, rank)."""
    with open_store(url) as store:
        queries = store.query_log()
        text = {q.query_id: q.text for q in queries}
        feedback = [(text[f.query_id], f.kind, f.doc_id, f.rank) for f in store.feedback()]
        assert {f.session_id for f in store.feedback() if f.kind != "validated_not_useful"} == {
            queries[0].session_id
        }
    return queries, feedback


MEMORY_EVENTS = [
    ("postgres", "read_after_search", "backup-db", 2),
    ("postgres", "re_search", None, None),
    ("postgres", "scroll_past", "ledger-db", 1),
    ("PostgreSQL", "scroll_past", "ledger-db", 1),
    ("PostgreSQL", "scroll_past", "backup-db", 2),
    ("friday", "read_after_search", "standup", 2),
    ("PostgreSQL", "read_after_search", "ledger-db", 1),
    ("friday", "validated_not_useful", "deploy-freeze", None),
    ("friday", "scroll_past", "deploy-freeze", 1),  # when the session ended
]
"""What the server-memory session implies (see recallbench.online._feedback)."""


@pytest.fixture(scope="module")
def memory_direct(installed_servers: Path, tmp_path_factory: pytest.TempPathFactory) -> Transcript:
    return direct("server-memory", tmp_path_factory.mktemp("direct"), MEMORY_CALLS)


def check_memory_session(
    through: Transcript, validated: str | None, straight: Transcript, url: str
) -> None:
    assert through.answers == straight.answers  # byte-identical, call by call
    assert through.resources == straight.resources
    assert straight.resources[-1].startswith("error ")
    assert through.tools[:-1] == straight.tools and VALIDATE_TOOL in through.tools[-1]
    assert '"is_error": true' in straight.answers[-2] or straight.answers[-2].startswith("error")
    assert validated is not None and validated.startswith("recorded: deploy-freeze was not useful")
    queries, feedback = events(url)
    assert [(q.text, q.results, q.tool) for q in queries] == [
        ("postgres", ("ledger-db", "backup-db"), "search_nodes"),
        ("PostgreSQL", ("ledger-db", "backup-db"), "search_nodes"),
        ("friday", ("deploy-freeze", "standup"), "search_nodes"),
    ]
    assert queries[2].texts == {
        "deploy-freeze": "Deploys are frozen on Fridays.",
        "standup": "The Friday standup moved to 10:00.",
    }
    assert all(q.latency_ms is not None and q.latency_ms > 0 for q in queries)
    assert len({q.session_id for q in queries}) == 1
    assert feedback == MEMORY_EVENTS
    with open_store(url) as store:
        [judgment] = store.judgments()
    assert (judgment.doc_id, judgment.grade, judgment.source) == ("deploy-freeze", 0, "validated")


def test_stdio_proxy_is_transparent_and_logs_the_session(
    memory_direct: Transcript, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    store_dir = tmp_path / "memory"
    command = proxy_command(
        "--profile", "server-memory", "--store-dir", str(store_dir), "--store", url,
        "--validate-tool",
    )  # fmt: skip
    through, validated = asyncio.run(over_stdio(command, MEMORY_CALLS, dict(os.environ)))
    check_memory_session(through, validated, memory_direct, url)
    assert "ledger-db" in (store_dir / "memory.jsonl").read_text()  # the store dir is kept


def test_streamable_http_proxy_gives_the_same_answers(
    memory_direct: Transcript, tmp_path: Path
) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    port = _free_port()
    command = proxy_command(
        "--profile", "server-memory", "--store", url, "--validate-tool", "--http", str(port)
    )
    token = "the-proxy-token"  # given in the environment, as the proxy's help suggests
    environment = {**os.environ, "RECALLBENCH_PROXY_TOKEN": token}

    async def scenario() -> tuple[Transcript, str | None, int]:
        process = await asyncio.create_subprocess_exec(*command, env=environment)
        try:
            await wait_for_listener(f"http://127.0.0.1:{port}/mcp", 60, process)
            async with (
                create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
                streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as streams,
                ClientSession(streams[0], streams[1]) as session,
            ):
                await session.initialize()
                through, validated = await _play_and_validate(session, MEMORY_CALLS)
        finally:
            process.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(process.wait(), 30)
        return through, validated, code

    through, validated, code = asyncio.run(scenario())
    assert code == 0
    check_memory_session(through, validated, memory_direct, url)


def test_pypi_server_through_the_proxy(installed_servers: Path, tmp_path: Path) -> None:
    """agentrecall stamps write times (created_at, updated_at) into its answers: two fresh
    stores differ there and only there, so those timestamps are masked before comparing."""
    straight = direct("agentrecall", tmp_path / "direct", RECALL_CALLS)
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    command = proxy_command("--profile", "agentrecall", "--store", url)
    through, validated = asyncio.run(over_stdio(command, RECALL_CALLS, dict(os.environ)))
    assert validated is None and through.tools == straight.tools
    assert through.resources == straight.resources and len(straight.resources) == 3
    masked = [TIMESTAMP.sub("<time>", answer) for answer in through.answers]
    assert masked == [TIMESTAMP.sub("<time>", answer) for answer in straight.answers]
    assert sum("<time>" in answer for answer in masked) == 8  # remember x4, recall x3, list
    queries, feedback = events(url)
    assert [(q.text, q.results) for q in queries] == [
        ("postgresql", ("1", "2")),
        ("PostgreSQL backups", ("2", "1")),
        ("fridays", ("3", "4")),
    ]
    assert queries[0].texts["1"] == "The ledger runs on PostgreSQL since March."
    assert feedback == [
        ("postgresql", "re_search", None, None),
        ("postgresql", "scroll_past", "1", 1),
        ("postgresql", "scroll_past", "2", 2),
        ("PostgreSQL backups", "scroll_past", "2", 1),
        ("PostgreSQL backups", "scroll_past", "1", 2),
        ("fridays", "scroll_past", "3", 1),
        ("fridays", "scroll_past", "4", 2),
    ]


def test_an_http_upstream_a_text_only_server_and_a_bare_command(tmp_path: Path) -> None:
    """A profile file whose server speaks Streamable HTTP and answers with one text block
    per hit (tests/example_mcp_server.py): hits are identified by their text. Then the same
    server started by a bare command (forward only): the answers equal the direct ones."""
    from recallbench.online._hits import text_id

    example = [sys.executable, str(Path(__file__).parent / "example_mcp_server.py")]
    profile = tmp_path / "notes.toml"
    profile.write_text(
        f'name = "notes"\n[server]\ncommand = {json.dumps([*example, "http", "{port}"])}\n'
        'transport = "streamable-http"\nurl = "http://127.0.0.1:{port}/mcp"\n'
        '[ingest]\ntool = "write_note"\nitem = { content = "{text}" }\n'
        '[search]\ntool = "search_notes"\narguments = { query = "{query}", limit = "{k}" }\n'
        '[results]\nsource = "text_blocks"\nmatch = "content"\n'
        'error_patterns = ["^# Search Failed"]\n'
    )
    calls: list[Call] = [
        ("write_note", {"content": "Deploys are frozen on Fridays."}),
        ("search_notes", {"query": "fridays extra"}),
        ("search_notes", {"query": "fail"}),  # an error in plain text: not a search
    ]
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    command = proxy_command("--profile", str(profile), "--store", url)
    asyncio.run(over_stdio(command, calls, dict(os.environ)))
    queries, feedback = events(url)
    shown = ("DEPLOYS ARE FROZEN ON FRIDAYS.", "an unrelated system note")
    assert [(q.text, q.results) for q in queries] == [
        ("fridays extra", tuple(text_id(text) for text in shown))
    ]
    assert set(queries[0].texts.values()) == set(shown)
    assert [kind for _, kind, _, _ in feedback] == ["scroll_past", "scroll_past"]

    bare = proxy_command("--store", url, "--", *example)
    through, _ = asyncio.run(over_stdio(bare, calls, dict(os.environ)))
    straight, _ = asyncio.run(over_stdio(example, calls, dict(os.environ)))
    assert through.answers == straight.answers and through.tools == straight.tools
    assert len(events(url)[0]) == 1  # nothing more logged


def test_logging_failures_never_fail_a_call(installed_servers: Path, tmp_path: Path) -> None:
    """A telemetry logger that raises on every call: the proxy still answers (a warning
    goes to standard error)."""
    from contextlib import AsyncExitStack

    import mcp_types as types

    from recallbench.online._proxy import Proxy
    from recallbench.online._proxy_sessions import Watch
    from recallbench.online._upstream import Upstream

    class Broken:
        def __getattr__(self, name: str) -> Any:
            def fail(*args: Any, **kwargs: Any) -> None:
                raise RuntimeError("the store is on fire")

            return fail

    profile = load_profile(shipped_profiles()["server-memory"])

    async def scenario() -> list[dict[str, Any]]:
        async with AsyncExitStack() as stack:
            upstream = await Upstream.connect(profile_launch(profile, tmp_path), stack)
            proxy = Proxy(upstream, Watch.of(profile, "server-memory"), Broken(), True)  # type: ignore[arg-type]
            ctx: Any = SimpleNamespace(request=None)
            answers = []
            validate = [
                (VALIDATE_TOOL, {"id": "backup-db", "useful": True}),
                (VALIDATE_TOOL, {"id": "never-shown", "useful": True}),
                (VALIDATE_TOOL, {"id": "backup-db"}),
            ]
            for name, arguments in [*MEMORY_CALLS[:3], *validate]:
                params = types.CallToolRequestParams(name=name, arguments=arguments)
                answers.append(await proxy._call_tool(ctx, params))
            proxy.finish()
            return answers

    answers = asyncio.run(scenario())
    assert "backup-db" in answers[1]["structuredContent"]["entities"][1]["name"]
    assert answers[3]["isError"] is False  # the call succeeds, and says it was not logged
    assert answers[3]["content"][0]["text"].startswith("not recorded: backup-db was useful")
    assert answers[4]["isError"] is True and "pass its query_id" in answers[4]["content"][0]["text"]
    assert answers[5]["isError"] is True and "needs id" in answers[5]["content"][0]["text"]


def test_cli_usage_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["proxy"])
    assert result.exit_code == 2 and "--profile NAME" in result.output
    result = runner.invoke(main, ["proxy", "--profile", "no-such-server"])
    assert result.exit_code == 2 and "no MCP profile 'no-such-server'" in result.output
    result = runner.invoke(main, ["proxy", "--store-dir", str(tmp_path), "--", "node", "x.js"])
    assert result.exit_code == 2 and "needs --profile" in result.output
    assert (
        "recallbench proxy --profile server-memory" in runner.invoke(main, ["proxy", "-h"]).output
    )


# --- the feedback rules on synthetic sequences ---------------------------------------------


def test_near_duplicates() -> None:
    assert is_near_duplicate("Postgres!", "postgres")  # same normalised text
    assert is_near_duplicate("postgres", "PostgreSQL")  # token-set ratio 88.9
    assert is_near_duplicate("where does Alice live", "alice live where")  # word order
    assert is_near_duplicate("postgres", "postgres ledger")  # a subset of the words
    assert not is_near_duplicate("postgres ledger", "friday deploys")
    assert not is_near_duplicate("postgres", "")


def test_re_search_window() -> None:
    first = Search("q1", "deploy freeze", ("a",), at=10.0)
    assert re_search(None, first) == []
    on_time = Search("q2", "deploy freezes", (), at=10.0 + RE_SEARCH_WINDOW)
    assert re_search(first, on_time) == [Feedback("re_search", "q1")]
    late = Search("q2", "deploy freeze", (), at=10.1 + RE_SEARCH_WINDOW)
    assert re_search(first, late) == []
    assert re_search(first, Search("q2", "office cat", (), at=11.0)) == []


def test_scroll_past_and_result_ids() -> None:
    search = Search("q", "x", ("a", "b", "c"), at=0.0)
    assert scroll_past(search, {"b"}) == [
        Feedback("scroll_past", "q", "a", 1),
        Feedback("scroll_past", "q", "c", 3),
    ]
    assert result_ids(["a", 7, None, "a", "", "b"]) == ("a", "7", "b")


def test_a_session() -> None:
    rules = SessionFeedback()
    assert rules.search(Search("q1", "postgres", ("a", "b", "c"), at=0.0)) == []
    assert rules.read(["b", "zzz", "b"]) == [Feedback("read_after_search", "q1", "b", 2)]
    assert rules.read(["b"]) == []  # once per search
    assert rules.search(Search("q2", "postgres!", ("c", "a"), at=30.0)) == [
        Feedback("re_search", "q1"),
        Feedback("scroll_past", "q1", "a", 1),
        Feedback("scroll_past", "q1", "c", 3),
    ]
    assert rules.latest_search_of("a") == "q2" and rules.latest_search_of("b") == "q1"
    assert rules.read(["a"]) == [Feedback("read_after_search", "q2", "a", 2)]
    assert rules.search(Search("q3", "fridays", (), at=31.0)) == [
        Feedback("scroll_past", "q2", "c", 1)
    ]
    assert rules.read(["c"]) == [Feedback("read_after_search", "q2", "c", 1)]  # closed: stands
    assert rules.end() == [] and rules.end() == []  # q3 showed nothing
    assert rules.latest_search_of("nothing") is None


def test_end_closes_the_last_search_once() -> None:
    rules = SessionFeedback()
    rules.search(Search("q1", "x", ("a", "b"), at=0.0))
    rules.read(["a"])
    assert rules.end() == [Feedback("scroll_past", "q1", "b", 2)]
    assert rules.end() == []


calls = st.lists(
    st.one_of(
        st.tuples(st.just("search"), st.lists(st.sampled_from("abcde"), max_size=4, unique=True)),
        st.tuples(st.just("read"), st.lists(st.sampled_from("abcdef"), max_size=3)),
    ),
    max_size=12,
)


@given(calls)
def test_every_shown_result_is_read_or_scrolled_past_once(sequence: list[Any]) -> None:
    rules = SessionFeedback()
    log: list[Feedback] = []
    shown: dict[str, tuple[str, ...]] = {}
    for number, (kind, ids) in enumerate(sequence):
        if kind == "search":
            query_id = f"q{number}"
            shown[query_id] = tuple(ids)
            log += rules.search(Search(query_id, f"query {number}", tuple(ids), at=number * 200.0))
        else:
            log += rules.read(ids)
    log += rules.end()
    for query_id, results in shown.items():
        mine = [event for event in log if event.query_id == query_id]
        closed = next((i for i, e in enumerate(mine) if e.kind == "scroll_past"), len(mine))
        read_before = {e.doc_id for e in mine[:closed] if e.kind == "read_after_search"}
        scrolled = [e.doc_id for e in mine if e.kind == "scroll_past"]
        assert len(scrolled) == len(set(scrolled))
        assert read_before.isdisjoint(scrolled) and read_before | set(scrolled) == set(results)
        for event in mine:
            if event.doc_id is not None:
                assert results[event.rank - 1] == event.doc_id  # type: ignore[operator]
    assert not any(e.kind == "re_search" for e in log)  # 200 s apart: never a re-search


def test_query_and_read_arguments() -> None:
    assert query_path({"query": "{query}", "k": "{k}"}) == ("query",)
    assert query_path({"search": {"text": "about {query}"}, "k": 5}) == ("search", "text")
    assert query_path({"k": "{k}"}) is None
    assert read_ids(["a", 2, None]) == ["a", "2"] and read_ids("a") == ["a"]


def test_a_proxied_session_becomes_a_dataset_that_runs(
    installed_servers: Path, tmp_path: Path
) -> None:
    """The whole online loop: an agent-like session through the proxy, its query log and
    feedback harvested into a golden dataset, and that dataset evaluated by `run`."""
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    command = proxy_command(
        "--profile", "server-memory", "--store-dir", str(tmp_path / "memory"), "--store", url,
        "--validate-tool",
    )  # fmt: skip
    asyncio.run(over_stdio(command, MEMORY_CALLS, dict(os.environ)))
    golden = tmp_path / "golden.json"
    harvested = CliRunner().invoke(main, ["harvest", "--store", url, "--out", str(golden)])
    assert harvested.exit_code == 0, harvested.output
    assert "3 logged queries, 3 unique, 3 sampled; 3 with evidence" in harvested.output
    data = json.loads(golden.read_text())
    grades = {q["text"]: data["qrels"][q["id"]] for q in data["queries"]}
    assert grades == {
        "postgres": {"backup-db": 2, "ledger-db": 1},  # read; shown and scrolled past
        "PostgreSQL": {"backup-db": 1, "ledger-db": 2},  # the late read counts
        "friday": {"deploy-freeze": 0, "standup": 2},  # validated not useful; read
    }
    texts = {d["id"]: d["text"] for d in data["documents"]}
    assert texts["standup"] == "The Friday standup moved to 10:00."
    out = tmp_path / "run"
    ran = CliRunner().invoke(
        main,
        ["run", "--dataset", str(golden), "--system", "builtin-lexical", "--no-store",
         "--out", str(out), "-q"],
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    report = json.loads((out / "report.json").read_text())
    assert report["counts"]["evaluated"] == 3
    assert report["dataset"]["name"] == "harvested" and report["means"]["mrr@10"] > 0


def test_a_long_session_forgets_searches_no_result_points_to() -> None:
    from recallbench.online import _feedback

    rules = SessionFeedback()
    for i in range(_feedback.PRUNE_AT + 10):
        rules.search(Search(f"q{i}", f"text {i}", (f"d{i % 3}",), float(i)))
    assert len(rules._read) < 20  # not 1,034: pruned to the searches still credited, since
    events = rules.read(["d0"])
    assert [(e.kind, e.doc_id) for e in events] == [("read_after_search", "d0")]
