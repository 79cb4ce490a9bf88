"""``recallbench proxy --shadow B --interleave``: the agent is shown the team-draft
interleaving of the primary's and the candidate's rankings, in the primary's own answer
shape, and ``shadow_runs.interleaved`` says which team placed each shown memory; reads and
validations then credit that team. Then the outcome tool, and the pure parts: the
interleaved list, the answer rewriting for each shape, the fall-backs."""

from __future__ import annotations

import json
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest

from recallbench.online._hits import text_id
from recallbench.online._proxy import Proxy
from recallbench.online._proxy_sessions import OUTCOME_TOOL, VALIDATE_TOOL, Watch
from recallbench.online._shadow import Shadow
from recallbench.online._shadow_interleave import (
    NotInterleaved,
    as_primary_hit,
    interleave_answer,
    interleave_ids,
    rewrite_answer,
)
from recallbench.online._upstream import Upstream, profile_launch
from recallbench.stats._interleaving import Interleaving, team_draft
from recallbench.store import open_store
from recallbench.systems._profile import Profile, load_profile, shipped_profiles

NOTES = {
    "ledger-db": "The ledger runs on PostgreSQL since March.",
    "backup-db": "Nightly backups of PostgreSQL go to the cold bucket.",
    "replica-db": "The PostgreSQL replica lags by two seconds.",
    "standup": "The Friday standup moved to 10:00.",
    "deploy-freeze": "Deploys are frozen on Fridays.",
}
WRITE: tuple[str, dict[str, Any]] = (
    "create_entities",
    {
        "entities": [
            {"name": name, "entityType": "memory", "observations": [text]}
            for name, text in NOTES.items()
        ]
    },
)

REVERSED_SERVER = """
import anyio
from mcp.server import MCPServer

server = MCPServer("reversed-memory")
ENTITIES = []

@server.tool()
def create_entities(entities: list[dict]) -> str:
    ENTITIES.extend(entities)
    return f"created {len(entities)}"

@server.tool()
async def search_nodes(query: str) -> dict:
    if query == "slow":
        await anyio.sleep(2)
    found = [e for e in ENTITIES if query.lower() in json.dumps(e).lower()]
    return {"entities": found[::-1], "relations": []}

import json
server.run()
"""
"""A candidate with server-memory's tools and answer shape that ranks in reverse order."""


def memory_profile() -> Profile:
    return load_profile(shipped_profiles()["server-memory"])


def reversed_profile(tmp_path: Path) -> Profile:
    """server-memory's profile with the reversed server's command."""
    script = tmp_path / "reversed.py"
    script.write_text(REVERSED_SERVER)
    body = shipped_profiles()["server-memory"].read_text()
    path = tmp_path / "reversed.toml"
    path.write_text(
        'name = "reversed-memory"\n'
        f"[server]\ncommand = {json.dumps([sys.executable, str(script)])}\n\n"
        + body[body.index("[ingest]") :]
    )
    return load_profile(path)


async def agent_session(
    tmp_path: Path,
    calls: list[tuple[str, dict[str, Any]]],
    wait: float = 10.0,
) -> tuple[list[dict[str, Any]], Shadow, str]:
    """An MCP client's answers through an in-process proxy (server-memory, a reversed
    candidate, interleaving at 100%, memory_validate and the outcome tool); the shadow and
    the store's url."""
    from mcp import ClientSession
    from mcp.shared.memory import create_client_server_memory_streams

    from recallbench.telemetry import TelemetryLogger

    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    primary, candidate = memory_profile(), reversed_profile(tmp_path)
    answers: list[dict[str, Any]] = []
    async with AsyncExitStack() as stack:
        for name in ("primary", "candidate"):
            (tmp_path / name).mkdir(exist_ok=True)
        upstream = await Upstream.connect(profile_launch(primary, tmp_path / "primary"), stack)
        mirror = await Upstream.connect(profile_launch(candidate, tmp_path / "candidate"), stack)
        shadow = Shadow(
            mirror, primary, candidate, 100, open_store(url), interleave=True, wait=wait
        )
        proxy = Proxy(
            upstream,
            Watch.of(primary, primary.name),
            TelemetryLogger(url),
            validate_tool=True,
            shadow=shadow,
            outcome_tool=True,
            store_url=url,
        )
        server = proxy.server()
        try:
            async with (
                create_client_server_memory_streams() as (client_streams, server_streams),
                anyio.create_task_group() as group,
            ):
                group.start_soon(shadow.run)
                group.start_soon(
                    server.run, *server_streams, server.create_initialization_options()
                )
                async with ClientSession(*client_streams) as client:
                    await client.initialize()
                    tools = await client.list_tools()
                    assert [t.name for t in tools.tools][-2:] == [VALIDATE_TOOL, OUTCOME_TOOL]
                    for name, arguments in calls:
                        result = await client.call_tool(name, arguments)
                        answers.append(result.model_dump(mode="json", by_alias=True))
                    await anyio.sleep(2.5)  # a late candidate's answer arrives
                group.cancel_scope.cancel()
        finally:
            proxy.finish()
    return answers, shadow, url


def entity_names(answer: dict[str, Any]) -> list[str]:
    return [entity["name"] for entity in answer["structuredContent"]["entities"]]


def test_the_agent_sees_the_interleaving_and_its_reads_credit_the_team(
    installed_servers: Path, tmp_path: Path
) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        WRITE,
        ("search_nodes", {"query": "postgresql"}),  # 3 hits, reversed by the candidate
        ("open_nodes", {"names": ["replica-db"]}),
        ("search_nodes", {"query": "friday"}),
        (VALIDATE_TOOL, {"id": "deploy-freeze", "useful": True}),
        ("search_nodes", {"query": "slow"}),  # the candidate takes 2 s: too late
        (OUTCOME_TOOL, {"success": True, "outcome": 0.75, "note": "found the replica"}),
        (OUTCOME_TOOL, {"outcome": "high"}),
    ]
    answers, shadow, url = anyio.run(agent_session, tmp_path, calls, 0.5)
    with open_store(url) as store:
        runs = {run["query_id"]: run for run in store.shadow_runs()}
        logged = store.query_log()
        feedback = store.feedback()
        outcomes = store.session_outcomes()
    texts = [entry.text for entry in logged]
    assert texts == ["postgresql", "friday", "slow"]
    postgres, friday, slow = (runs[entry.query_id] for entry in logged)

    # what the agent saw: the team draft of both rankings, in server-memory's shape
    control = ["ledger-db", "backup-db", "replica-db"]
    assert postgres["control_results"] == tuple(control)
    assert postgres["treatment_results"] == tuple(reversed(control))
    shown = [doc_id for doc_id, _ in postgres["interleaved"]]
    assert entity_names(answers[1]) == shown != control  # reversed lists never keep A's order
    expected_shown = interleave_ids(control, control[::-1], postgres["query_id"])
    assert postgres["interleaved"] == expected_shown.shown
    drafted = team_draft(control, control[::-1], postgres["query_id"])
    assert postgres["interleaved"] == tuple(zip(drafted.items, drafted.teams, strict=True))
    assert postgres["interleaved_credited"] == 3  # equal lengths: all of it is credited
    structured = answers[1]["structuredContent"]
    assert answers[1]["content"][0]["text"] == json.dumps(structured, indent=2)
    assert structured["relations"] == []
    assert logged[0].results == tuple(shown)  # the log holds what was shown
    assert postgres["session_id"] == logged[0].session_id
    assert (postgres["control"], postgres["treatment"]) == ("server-memory", "reversed-memory")

    # the read and the validation credit the team that placed the memory
    read = [e for e in feedback if e.kind == "read_after_search" and e.doc_id == "replica-db"]
    assert [e.query_id for e in read] == [postgres["query_id"]]
    teams = dict(postgres["interleaved"])
    clicked = Interleaving(tuple(shown), tuple(teams[d] for d in shown))
    expected = (1, 0) if teams["replica-db"] == "control" else (0, 1)
    assert clicked.credit(["replica-db"]) == expected
    validated = [e for e in feedback if e.kind == "validated_useful"]
    assert [(e.query_id, e.doc_id) for e in validated] == [(friday["query_id"], "deploy-freeze")]
    assert "deploy-freeze" in dict(friday["interleaved"])

    # the late candidate: the agent got the primary's answer, the pair is still stored
    assert slow["interleaved"] is None and slow["treatment_latency_ms"] > 1000
    assert shadow.stats.interleaved == 2
    assert dict(shadow.stats.not_interleaved) == {"late candidate": 1}
    assert "2 interleaved, primary's answer shown for 1 late candidate" in shadow.stats.line()

    # the outcome tool: recorded for this session, a malformed call refused
    assert (
        answers[6]["isError"] is False
        and "recorded for session" in answers[6]["content"][0]["text"]
    )
    assert answers[7]["isError"] is True and "finite number" in answers[7]["content"][0]["text"]
    assert [(o.session_id, o.success, o.outcome, o.note, o.source) for o in outcomes] == [
        (logged[0].session_id, True, 0.75, "found the replica", "proxy")
    ]


# --- the parts alone --------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(40))
def test_the_interleaved_list_is_a_fair_team_draft(seed: int) -> None:
    control = [f"d{i}" for i in range(6)]
    treatment = [f"d{i}" for i in (5, 3, 7, 8, 1)]
    shown = interleave_ids(control, treatment, f"query {seed}")
    ids = list(shown.items)
    assert len(ids) == len(set(ids)) == max(len(control), len(treatment))
    assert shown == interleave_ids(control, treatment, f"query {seed}")  # seeded by the id
    # the credited part is the team draft of both lists cut to the depth both reach (5)
    credited = shown.credited
    assert credited is not None
    drafted = team_draft(control[:5], treatment, f"query {seed}", limit=len(ids))
    assert shown.shown[:credited] == drafted.shown
    for prefix in range(1, credited + 1):  # team draft: teams differ by at most one
        teams = shown.teams[:prefix]
        assert abs(teams.count("control") - teams.count("treatment")) <= 1
    for doc_id, team in shown.shown:  # each shown item comes from its team's list
        assert doc_id in (control if team == "control" else treatment)
    assert "d5" not in shown.items[credited:] or control.index("d5") >= 5


@pytest.mark.parametrize("seed", range(20))
def test_equal_lengths_are_the_papers_team_draft(seed: int) -> None:
    control, treatment = [f"a{i}" for i in range(5)], ["a2", "b1", "a0", "b3", "b4"]
    shown = interleave_ids(control, treatment, f"q{seed}")
    drafted = team_draft(control, treatment, f"q{seed}", limit=5)
    assert shown.shown == drafted.shown and shown.credited == len(shown.items) == 5


def test_a_longer_lists_rest_is_shown_but_credits_no_one() -> None:
    shown = interleave_ids(["a", "b", "c", "d"], ["a"], "q")
    assert list(shown.items) == ["a", "b", "c", "d"]
    assert shown.credited == 1 and shown.teams[1:] == ("control",) * 3
    assert shown.credit(["b", "c", "d"]) == (0, 0)  # below the depth both lists reach
    control_first = interleave_ids(["a", "b", "c", "d"], ["x", "y"], "q")
    credited = control_first.credited
    assert credited is not None and credited in (3, 4)  # the draft stops when one is used up
    assert set(control_first.items) == {"a", "b", "x", "y"}  # the rest by rank: y before c
    assert control_first.credit(["c", "d"]) == (0, 0)
    assert interleave_ids(["a", "b", "c", "d"], ["x", "y"], "q4").items[:2] in (
        ("a", "x"),
        ("x", "a"),
    )
    nothing = interleave_ids([], ["x", "y"], "q")
    assert nothing.shown == (("x", "treatment"), ("y", "treatment")) and nothing.credited == 0
    assert interleave_ids([], [], "q").shown == ()


MEMORY_ANSWER: dict[str, Any] = {
    "structuredContent": {
        "entities": [
            {"name": "a", "entityType": "memory", "observations": ["alpha é"]},
            {"name": "b", "entityType": "memory", "observations": ["beta"]},
        ],
        "relations": [{"from": "a", "to": "b", "relationType": "cites"}],
    }
}
MEMORY_ANSWER["content"] = [
    {
        "type": "text",
        "text": json.dumps(MEMORY_ANSWER["structuredContent"], indent=2, ensure_ascii=False),
    }
]


def test_server_memory_answers_are_rewritten_in_their_own_formatting() -> None:
    memory = memory_profile()
    entities = MEMORY_ANSWER["structuredContent"]["entities"]
    new = {"name": "c", "entityType": "memory", "observations": ["gamma"]}
    rewritten = rewrite_answer(memory, MEMORY_ANSWER, [entities[1], new, entities[0]])
    assert rewritten is not None
    structured = rewritten["structuredContent"]
    assert [e["name"] for e in structured["entities"]] == ["b", "c", "a"]
    assert structured["relations"] == MEMORY_ANSWER["structuredContent"]["relations"]
    assert rewritten["content"][0]["text"] == json.dumps(structured, indent=2, ensure_ascii=False)
    assert [e["name"] for e in MEMORY_ANSWER["structuredContent"]["entities"]] == ["a", "b"]
    # a formatting not recognised: not rewritten
    odd = {**MEMORY_ANSWER, "content": [{"type": "text", "text": json.dumps(
        MEMORY_ANSWER["structuredContent"], indent=3)}]}  # fmt: skip
    assert rewrite_answer(memory, odd, entities) is None
    # a text block that is not the structured content: not rewritten
    summary = {**MEMORY_ANSWER, "content": [{"type": "text", "text": "2 entities"}]}
    assert rewrite_answer(memory, summary, entities) is None


def test_one_block_per_hit_answers_are_rewritten_block_by_block() -> None:
    recall = load_profile(shipped_profiles()["agentrecall"])
    hits = [{"id": 1, "content": "alpha", "metadata": {"doc_id": "a"}}, {"id": 2, "content": "b"}]
    answer = {
        "content": [{"type": "text", "text": json.dumps(hit, indent=2)} for hit in hits],
        "structuredContent": {"result": hits},
        "isError": False,
    }
    rewritten = rewrite_answer(recall, answer, hits[::-1])
    assert rewritten is not None
    assert rewritten["structuredContent"] == {"result": hits[::-1]}
    assert [json.loads(b["text"]) for b in rewritten["content"]] == hits[::-1]
    assert rewritten["isError"] is False


def test_text_block_answers_and_candidate_hits_in_the_primary_shape(tmp_path: Path) -> None:
    profile = tmp_path / "notes.toml"
    profile.write_text(
        'name = "notes"\n[server]\ncommand = ["true"]\n'
        '[ingest]\ntool = "write_note"\nitem = { content = "{text}" }\n'
        '[search]\ntool = "search_notes"\narguments = { query = "{query}" }\n'
        '[results]\nsource = "text_blocks"\nmatch = "content"\n'
    )
    notes = load_profile(profile)
    answer = {"content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}
    rewritten = rewrite_answer(notes, answer, [{"text": "two"}, {"text": "three"}])
    assert rewritten == {"content": [{"type": "text", "text": t} for t in ("two", "three")]}
    with_structure = {**answer, "structuredContent": {"result": ["one", "two"]}}
    assert rewrite_answer(notes, with_structure, [{"text": "two"}]) is None

    memory = memory_profile()
    assert as_primary_hit(memory, "text:1", "some text") == {
        "name": "text:1",
        "entityType": "memory",
        "observations": ["some text"],
    }
    assert as_primary_hit(notes, "text:1", "some text") == {"text": "some text"}
    # a text-only candidate behind server-memory: its hits become entities named by text
    shown, interleaved = interleave_answer(memory, notes, MEMORY_ANSWER, answer, "q")
    names = entity_names(shown)  # one pick each: the top of each list
    assert sorted(names) == sorted(["a", text_id("one")])
    assert list(interleaved.items) == names


def test_what_cannot_be_interleaved_falls_back_with_a_reason() -> None:
    memory = memory_profile()
    same = interleave_answer(memory, memory, MEMORY_ANSWER, MEMORY_ANSWER, "q")
    assert same[0] is MEMORY_ANSWER  # the same order: the primary's very answer
    cases = [
        (MEMORY_ANSWER, None, "candidate failed"),
        (MEMORY_ANSWER, {"content": [], "isError": True}, "candidate answer not a readable"),
        ({"content": [], "isError": True}, MEMORY_ANSWER, "primary answer not a readable"),
    ]
    for primary_answer, candidate_answer, reason in cases:
        with pytest.raises(NotInterleaved, match=reason):
            interleave_answer(memory, memory, primary_answer, candidate_answer, "q")
    nameless = {
        "structuredContent": {"entities": [{"entityType": "memory", "observations": ["x"]}]},
        "content": [],
    }
    with pytest.raises(NotInterleaved, match="primary hit without an id"):
        interleave_answer(memory, memory, nameless, MEMORY_ANSWER, "q")
