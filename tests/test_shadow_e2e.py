"""End to end: a scripted agent session (the official MCP SDK over stdio) through
``recallbench proxy --profile server-memory --shadow agentrecall --shadow-percent 100``,
two real memory servers, then the shadow test decided on the stored pairs with
``recallbench shadow status`` and ``graduate``.

The session writes 60 memories on 12 topics (five each, one of them the topic's decision,
written first to fifth), searches each topic twice and opens the decision after every
search. server-memory answers in insertion order (the decision at rank 1 to 5); agentrecall
ranks it first. So every search gives a shadow pair, the read is implicit feedback on both
lists, the reciprocal-rank differences are 0, 1/2, 2/3, 3/4 and 4/5, and the agent's answers
are those of a proxy without shadow, byte for byte. But the agent saw only the control's
list: its reads cannot favour the treatment, so the rule refuses rr on these pairs (the
decision waits for interleaved pairs or labels) and nothing graduates.

The test is started through the store with ``settle_seconds`` 0 (``shadow start`` keeps
its default, 300 s, for feedback to arrive, and has no option for it) and without the
latency guardrail (a Python and a Node server on a loaded test machine are not a latency
comparison); ``status`` and ``graduate`` are the CLI's.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from recallbench.store import open_store

Call = tuple[str, dict[str, Any]]
TOPICS = [
    "ledger", "backup", "deploy", "standup", "billing", "oncall",
    "invoice", "search", "cache", "release", "budget", "hiring",
]  # fmt: skip
NAME = "agentrecall-vs-memory"


def memories() -> list[tuple[str, str]]:
    """(name, text): per topic five notes, the decision (``TOPIC-key``) at place t % 5."""
    notes = []
    for t, topic in enumerate(TOPICS):
        for place in range(5):
            if place == t % 5:
                decision = f"The {topic} decision: its owner signs off every {topic} change."
                notes.append((f"{topic}-key", decision))
            else:
                notes.append((f"{topic}-{place}", f"A note that mentions {topic} in passing."))
    return notes


def script() -> list[Call]:
    entities = [{"name": n, "entityType": "memory", "observations": [x]} for n, x in memories()]
    calls: list[Call] = [("create_entities", {"entities": entities})]
    for _ in range(2):
        for topic in TOPICS:
            calls.append(("search_nodes", {"query": topic}))
            calls.append(("open_nodes", {"names": [f"{topic}-key"]}))
    return calls


async def agent(command: Sequence[str], calls: Sequence[Call], url: str, runs: int) -> list[str]:
    """The agent's answers as JSON; before hanging up, waits for ``runs`` shadow rows."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    parameters = StdioServerParameters(
        command=command[0], args=list(command[1:]), env=dict(os.environ)
    )
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(parameters, errlog=quiet) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            answers = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                answers.append(json.dumps(result.model_dump(mode="json")))
            deadline = time.monotonic() + 60
            while runs and time.monotonic() < deadline:
                with open_store(url) as store:
                    if store.count("shadow_runs") >= runs:
                        break
                await asyncio.sleep(0.2)
    return answers


def proxy(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "recallbench", "proxy", "--profile", "server-memory", *arguments]


def test_a_shadowed_session_yields_pairs_and_a_graduation(
    installed_servers: Path, tmp_path: Path
) -> None:
    from recallbench.cli._shadow import shadow
    from recallbench.online._shadow_rule import GraduationRule, parse_guardrail

    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    rule = GraduationRule(
        measure="rr",
        min_queries=20,
        guardrails=dict(parse_guardrail(g) for g in ("error_rate:+1pt", "empty_rate:+2pt")),
        settle_seconds=0,
    )
    data = rule.to_dict()
    with open_store(url) as store:
        store.start_shadow_test(
            NAME, "server-memory", "agentrecall", "rr", data, data["guardrails"], alpha=0.05
        )

    calls = script()
    searches = sum(name == "search_nodes" for name, _ in calls)
    shadowed = proxy(
        "--store", url, "--shadow", "agentrecall", "--shadow-percent", "100",
        "--shadow-store-dir", str(tmp_path / "candidate"),
    )  # fmt: skip
    answers = asyncio.run(agent(shadowed, calls, url, searches))
    plain = asyncio.run(agent(proxy("--store", f"{url}-plain"), calls, f"{url}-plain", 0))
    assert answers == plain  # what the agent sees is the primary's, byte for byte

    with open_store(url) as store:
        runs = store.shadow_runs()
        logged = store.query_log()
    # a pair for every search, with the query's id, session and both profiles
    assert len(runs) == len(logged) == searches
    assert [run["query_id"] for run in runs] == [entry.query_id for entry in logged]
    assert {(run["control"], run["treatment"]) for run in runs} == {
        ("server-memory", "agentrecall")
    }
    assert {run["session_id"] for run in runs} == {logged[0].session_id}
    text = {entry.query_id: entry.text for entry in logged}
    for run in runs:
        topic = text[run["query_id"]]
        key = f"{topic}-key"
        assert run["control_results"][TOPICS.index(topic) % 5] == key  # insertion order
        assert run["treatment_results"][0] == key  # agentrecall: the decision first
        assert set(run["control_results"]) == set(run["treatment_results"])  # same memories
        assert run["control_error"] is None and run["treatment_error"] is None
        assert run["interleaved"] is None  # the agent saw the primary's list

    runner = CliRunner()
    status = runner.invoke(shadow, ["status", NAME, "--format", "json", "--store", url])
    assert status.exit_code == 0, status.output
    now = json.loads(status.output)["now"]
    # without interleaving the agent read what the control showed: rr from its reads is no
    # evidence about the treatment, so the rule refuses to decide on it and says why
    assert now["decision"] == "continue" and "--interleave" in now["reason"]
    assert now["pairs"] == searches and now["not_interleaved"] == searches
    assert now["units"] == now["n"] == 0
    refused = runner.invoke(shadow, ["graduate", NAME, "--store", url, "--actor", "e2e"])
    assert refused.exit_code != 0, refused.output
    with open_store(url) as store:
        assert [d.decision for d in store.shadow_decisions(NAME)] == ["start"]
