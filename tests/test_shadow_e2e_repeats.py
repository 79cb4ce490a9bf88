"""End to end with repeats (issue 29, Deliver 7): a scripted agent session through
``recallbench proxy --interleave`` in which a share of the searches (0%, 30%, 60%) repeat an
earlier text, respelled. Two equal systems (server-memory shadowing server-memory): the
live session, and 200 seeded replays of the agent's reads over the pairs it produced,
neither graduate nor roll back beyond alpha. A clearly better candidate (agentrecall ranks
the topic's decision first) graduates. Real servers over stdio, the real CLI."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from recallbench.online._shadow_decide import decide, decide_test
from recallbench.online._shadow_rule import GraduationRule
from recallbench.online._shadow_score import score_pairs
from recallbench.store import FeedbackEvent, open_store
from test_shadow_e2e import agent, proxy

TOPICS = [f"topic{n:02d}" for n in range(40)]
RULE = GraduationRule(
    measure="interleaving",
    interleaved=True,
    unit="query",  # one session: its 40 topics are the units (session units would be one)
    min_queries=20,
    settle_seconds=0,
    guardrails={},
)


def notes() -> list[tuple[str, str]]:
    """Five notes per topic, its decision at place t % 5: server-memory returns them in
    insertion order, agentrecall (bm25) ranks the decision, which names the topic twice,
    first."""
    found = []
    for t, topic in enumerate(TOPICS):
        for place in range(5):
            if place == t % 5:
                text = f"The {topic} decision: its owner signs off every {topic} change."
                found.append((f"{topic}-key", text))
            else:
                found.append((f"{topic}-{place}", f"A note that mentions {topic} in passing."))
    return found


def script(repeat_share: float, seed: int) -> list[tuple[str, dict[str, Any]]]:
    """Every topic searched once, plus repeats of earlier topics (respelled in upper case)
    making ``repeat_share`` of the searches; after each search the agent opens the topic's
    decision."""
    rng = random.Random(seed)
    entities = [{"name": n, "entityType": "memory", "observations": [x]} for n, x in notes()]
    calls: list[tuple[str, dict[str, Any]]] = [("create_entities", {"entities": entities})]
    repeats = round(len(TOPICS) * repeat_share / (1 - repeat_share))
    order = [(topic, False) for topic in TOPICS]
    for _ in range(repeats):
        at = rng.randrange(1, len(order) + 1)
        earlier = [topic for topic, _ in order[:at]]
        order.insert(at, (rng.choice(earlier), True))
    for topic, again in order:
        # respelled in upper case (server-memory's substring search ignores case)
        calls.append(("search_nodes", {"query": topic.upper() if again else topic}))
        calls.append(("open_nodes", {"names": [f"{topic}-key"]}))
    return calls


def twin(tmp_path: Path, home: Path) -> str:
    """server-memory under another name (its installed copy): an equal system for the
    candidate's side."""
    from recallbench.systems._profile import shipped_profiles

    lines = shipped_profiles()["server-memory"].read_text().splitlines()
    installed = str(home / "servers" / "server-memory")
    kept = [
        line.replace("{install}", installed).replace('"server-memory"', '"server-memory-twin"')
        for line in lines
        if not line.startswith(("[install]", "npm ="))
    ]
    path = tmp_path / "twin.toml"
    path.write_text("\n".join(kept) + "\n")
    return str(path)


def session(tmp_path: Path, candidate: str, share: float) -> tuple[str, int]:
    url = f"sqlite:///{tmp_path / f'{Path(candidate).stem}-{share}.db'}"
    name = "server-memory-twin" if candidate.endswith(".toml") else candidate
    data = RULE.to_dict()
    with open_store(url) as store:
        store.start_shadow_test("t", "server-memory", name, RULE.measure, data, {})
    calls = script(share, seed=int(share * 100))
    searches = sum(name == "search_nodes" for name, _ in calls)
    command = proxy(
        "--store", url, "--shadow", candidate, "--shadow-percent", "100", "--interleave",
        "--interleave-wait", "5", "--shadow-store-dir", str(tmp_path / f"{name}-{share}"),
    )  # fmt: skip
    asyncio.run(agent(command, calls, url, searches))
    return url, searches


def replays(url: str, count: int) -> dict[str, int]:
    """The rule on the session's pairs with the agent's reads drawn again: each search, a
    shown memory read at random (seeded), as an agent with no preference for either team."""
    with open_store(url) as store:
        rows = store.shadow_runs()
        keys = {entry.query_id: entry.text for entry in store.query_log()}
    from recallbench.core._query_key import query_key

    keys = {query_id: query_key(text) for query_id, text in keys.items()}
    counts = {"graduate": 0, "rollback": 0, "continue": 0}
    for seed in range(count):
        rng = random.Random(seed)
        events = [
            FeedbackEvent(row["query_id"], "read_after_search", row["created_at"], doc_id=doc)
            for row in rows
            if row["interleaved"]
            for doc in [rng.choice([doc for doc, _ in row["interleaved"]])]
        ]
        decision = decide(RULE, rows, score_pairs(rows, events), keys=keys)
        counts[decision.decision] += 1
    return counts


@pytest.mark.parametrize("share", [0.0, 0.3, 0.6])
def test_equal_systems_with_repeats_neither_graduate_nor_roll_back(
    installed_servers: Path, tmp_path: Path, share: float
) -> None:
    url, searches = session(tmp_path, twin(tmp_path, installed_servers), share)
    with open_store(url) as store:
        test = store.shadow_test("t")
        assert test is not None
        live = decide_test(store, test)
        rows = store.shadow_runs()
    assert len(rows) == searches and all(row["interleaved"] for row in rows)
    assert live.units == len(TOPICS) and live.repeats == searches - len(TOPICS)
    # the live decision is one draw (the interleaving's coins are seeded by random query
    # ids): the rate over replays of the reads is what the rule promises, checked below
    counts = replays(url, 200)
    # alpha 0.05 of 200 is 10 expected at most; P(Binomial(200, 0.05) > 19) < 0.003
    assert counts["graduate"] + counts["rollback"] <= 19, counts


def test_a_clearly_better_candidate_graduates_despite_repeats(
    installed_servers: Path, tmp_path: Path
) -> None:
    url, searches = session(tmp_path, "agentrecall", 0.3)
    with open_store(url) as store:
        test = store.shadow_test("t")
        assert test is not None
        decision = decide_test(store, test)
    assert decision.units == len(TOPICS) and decision.repeats == searches - len(TOPICS)
    assert decision.decision == "graduate", decision.reason
    # the betting interval's ends are the last rejected grid means (conservative by one
    # grid step): with the null rejected its lower end is 0 at the least, and the p-value
    # says the null was rejected
    assert decision.interval is not None and decision.interval[0] >= 0
    assert decision.pvalue is not None and decision.pvalue <= 0.05
