"""Units (one haystack per question) on one server emptied between them, when the profile
says how ([reset]: a tool, or files), with the same results as a server per unit; a new
server when emptying fails, the server broke, or the store is to be kept."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from recallbench.core import Dataset, Document, Query, Run
from recallbench.runner import run_dataset
from recallbench.systems._mcp import MCPSystem, profile_settings
from recallbench.systems._profile import Profile, Reset, load_profile, shipped_profiles

DOCS = (
    Document(id="pg", text="the ledger runs on postgresql"),
    Document(id="fri", text="deploys are frozen on fridays"),
    Document(id="cat", text="the office cat is named pixel"),
    Document(id="pool", text="the connection pool holds 20 postgresql connections"),
)
DATA = Dataset(
    name="units",
    documents=DOCS,
    # "pg" is in two units: a store not emptied would return it twice or in both
    units={"u1": ("pg", "fri"), "u2": ("cat", "pg", "pool"), "u3": ("fri",)},
    queries=(
        Query(id="q1", text="postgresql", unit="u1"),
        Query(id="q2", text="postgresql", unit="u2"),
        Query(id="q3", text="cat", unit="u2"),
        Query(id="q4", text="postgresql", unit="u3"),
        Query(id="q5", text="fridays", unit="u3"),
    ),
    qrels={"q1": {"pg": 1}},
)


def server_memory(reset: Reset | None) -> Profile:
    profile = load_profile(shipped_profiles()["server-memory"])
    return profile.model_copy(update={"reset": reset})


def counted_run(
    profile: Profile, monkeypatch: pytest.MonkeyPatch, **options: Any
) -> tuple[Run, int]:
    """The run, and how many times a server was started."""
    starts: list[int] = []
    connect = MCPSystem._connect_stdio

    async def counting(self: MCPSystem, *args: Any) -> set[str]:
        starts.append(1)
        return await connect(self, *args)

    monkeypatch.setattr(MCPSystem, "_connect_stdio", counting)
    system = MCPSystem(profile)
    for name, value in options.items():
        setattr(system, name, value)
    return asyncio.run(run_dataset(DATA, system, k=10)), len(starts)


def results(run: Run) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json", exclude={"latency_ms"}) for r in run.results]


@pytest.mark.parametrize(
    "reset",
    [
        Reset(files=["memory.jsonl"]),
        Reset(tool="delete_entities", arguments={"entityNames": "{ids}"}),
    ],
    ids=["files", "tool"],
)
def test_one_server_emptied_between_units_answers_as_a_server_per_unit(
    installed_servers: Path, monkeypatch: pytest.MonkeyPatch, reset: Reset
) -> None:
    fresh, fresh_starts = counted_run(server_memory(None), monkeypatch)
    reused, reused_starts = counted_run(server_memory(reset), monkeypatch)
    assert (fresh_starts, reused_starts) == (3, 1)
    assert results(reused) == results(fresh)
    assert [[h.doc_id for h in r.hits] for r in reused.results] == [
        ["pg"],
        ["pg", "pool"],
        ["cat"],
        [],
        ["fri"],
    ]


def test_the_shipped_server_memory_profile_empties_its_file(installed_servers: Path) -> None:
    profile = load_profile(shipped_profiles()["server-memory"])
    assert profile.reset == Reset(files=["memory.jsonl"])
    assert load_profile(shipped_profiles()["basic-memory"]).reset is not None


def test_a_reset_that_fails_falls_back_to_a_new_server(
    installed_servers: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = Reset(tool="delete_entities", arguments={"wrong": "{ids}"})  # refused by the server
    run, starts = counted_run(server_memory(bad), monkeypatch)
    fresh, _ = counted_run(server_memory(None), monkeypatch)
    assert starts == 3 and results(run) == results(fresh)


def test_a_kept_store_is_never_emptied(
    installed_servers: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, starts = counted_run(server_memory(Reset(files=["memory.jsonl"])), monkeypatch, keep=True)
    assert starts == 3


def test_a_reset_needs_a_tool_or_files() -> None:
    with pytest.raises(ValueError, match="a tool or files"):
        Reset()


def test_settings_of_a_profile_without_the_new_keys_are_as_before() -> None:
    profile = load_profile(shipped_profiles()["mcp-memory-libsql"])
    settings = profile_settings(profile)
    assert "reset" not in settings and "concurrency" not in settings["server"]
    with_reset = profile_settings(server_memory(Reset(files=["x"])))
    assert with_reset["reset"]["files"] == ["x"]


def test_basic_memory_is_emptied_by_its_delete_tool_between_units(
    installed_servers: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped [reset] of basic-memory (delete the notes folder) leaves nothing of a
    unit for the next: one server start for three units, and the hits a server per unit
    gives (the same lists as server-memory's above; checked side by side once, 1 start
    against 3, in 13 s against 35 s)."""
    profile = load_profile(shipped_profiles()["basic-memory"])
    run, starts = counted_run(profile, monkeypatch)
    assert starts == 1
    assert [r.error for r in run.results] == [None] * 5
    assert [[h.doc_id for h in r.hits] for r in run.results] == [
        ["pg"],
        ["pg", "pool"],
        ["cat"],
        [],
        ["fri"],
    ]
