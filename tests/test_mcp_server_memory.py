"""The MCP adapter against the real @modelcontextprotocol/server-memory (npm), over stdio:
handshake, ingestion, search, result mapping, a server killed mid-run."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.core import Dataset, Document, Query
from recallbench.measures import parse_measures
from recallbench.report import build_report
from recallbench.runner import run_dataset
from recallbench.systems import create_system
from recallbench.systems._mcp import MCPSystem, fill, select
from recallbench.systems._profile import load_profile, shipped_profiles

TINY = Dataset(
    name="tiny",
    documents=(
        Document(id="pg", text="The ledger runs on PostgreSQL since March."),
        Document(id="fri", text="Deploys are frozen on Fridays."),
        Document(id="pr", text="Priya wants PR descriptions with a test plan."),
    ),
    queries=(
        Query(id="q1", text="postgresql"),
        Query(id="q2", text="frozen on fridays"),
        Query(id="q3", text="the office cat"),
        Query(id="q4", text="test plan"),
    ),
    qrels={"q1": {"pg": 3}, "q2": {"fri": 2}, "q3": {"pr": 1}, "q4": {"pr": 3}},
)


def test_templates_and_selectors() -> None:
    assert fill({"q": "{query}", "k": "{k}", "t": "top {k}"}, {"query": "x", "k": 5}) == {
        "q": "x",
        "k": 5,
        "t": "top 5",
    }
    assert select({"a": {"b": [1]}}, "a.b") == [1]
    assert select([1], "") == [1]


@pytest.mark.parametrize(
    "name", ["server-memory", "mcp-memory-libsql", "agentrecall", "basic-memory"]
)
def test_real_servers_are_evaluated(installed_servers: Path, name: str) -> None:
    run = asyncio.run(run_dataset(TINY, create_system(name), k=10))
    by_id = {r.query_id: r for r in run.results}
    assert all(result.error is None for result in run.results)
    for query, expected in (("q1", "pg"), ("q2", "fri"), ("q4", "pr")):
        assert by_id[query].hits[0].doc_id == expected, (name, query, by_id[query].hits)
    ranked = run.spec.settings["ranked"]
    assert all((h.score is not None) == ranked for r in run.results for h in r.hits)
    assert all(h.channels == ("mcp",) for r in run.results for h in r.hits)
    if name in ("server-memory", "mcp-memory-libsql"):  # substring / LIKE: no match at all
        assert by_id["q3"].hits == ()
        report = build_report(TINY, run, parse_measures(["mrr@10"]))
        assert report.means["mrr@10"] == pytest.approx(3 / 4)


def test_cli_run_and_check_on_the_bundled_dataset(installed_servers: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["run", "--system", "server-memory", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["counts"]["queries"] == 120 and report["counts"]["failed"] == 0
    assert "no scores" in (tmp_path / "report.md").read_text()
    check = runner.invoke(main, ["systems", "check", "server-memory"])
    assert check.exit_code == 0 and "FAIL" not in check.output, check.output


def test_a_server_killed_mid_run_is_restarted_and_the_run_completes(
    installed_servers: Path, tmp_path: Path
) -> None:
    shipped = load_profile(shipped_profiles()["server-memory"])
    # the same server behind a shell that records its pid, with a short call timeout
    command = ["sh", "-c", "echo $$ > {workdir}/pid; exec " + " ".join(shipped.server.command)]
    profile = shipped.model_copy(
        update={
            "server": shipped.server.model_copy(update={"command": command, "call_timeout": 5.0}),
        }
    )
    system = MCPSystem(profile, keep=True)
    killed: list[int] = []

    def kill_after_two(done: int, total: int) -> None:
        if done == 2 and system._workdir is not None:
            pid = int((system._workdir / "pid").read_text())
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    run = asyncio.run(run_dataset(TINY, system, k=10, progress=kill_after_two))
    assert killed
    errors = [r.error for r in run.results]
    # the query that meets the dead server fails; the server is restarted with its corpus
    # and the next query is answered again
    assert errors[:2] == [None, None] and errors[2] is not None and errors[3] is None, errors
    assert run.spec.restarts == 1
    report = build_report(TINY, run, parse_measures(["mrr@10"]))
    assert report.counts.failed == 1 and report.counts.evaluated == 4


def test_a_recorded_server_run_replays_without_the_server(
    installed_servers: Path, tmp_path: Path
) -> None:
    from recallbench.systems._replay import RecordingSystem, ReplaySystem, recording_path

    path = recording_path(tmp_path, "server-memory", TINY)
    live = asyncio.run(run_dataset(TINY, RecordingSystem(create_system("server-memory"), path)))
    replay = ReplaySystem("server-memory", path)
    assert replay.missing(TINY.queries) == []
    again = asyncio.run(run_dataset(TINY, replay))
    measures = parse_measures(["mrr@10", "recall@10"])
    assert build_report(TINY, live, measures).means == build_report(TINY, again, measures).means
    assert again.spec.settings["ranked"] is False  # the recorded system's settings


def test_a_server_that_cannot_start_says_why(tmp_path: Path) -> None:
    profile = tmp_path / "broken.toml"
    profile.write_text(
        'name = "broken"\n[server]\ncommand = ["node", "-e", '
        "\"process.stderr.write('missing API key'); process.exit(3)\"]\n"
        '[ingest]\ntool = "add"\nitem = { text = "{text}" }\n'
        '[search]\ntool = "find"\narguments = { q = "{query}" }\n'
    )
    result = CliRunner().invoke(
        main, ["run", "--system", str(profile), "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 3, result.output  # the system under test failed
    assert "broken: server failed to start" in result.output
    assert "missing API key" in result.output
    assert not (tmp_path / "out").exists()


def test_profile_mistakes_are_named(tmp_path: Path) -> None:
    profile = tmp_path / "typo.toml"
    profile.write_text(
        'name = "t"\ncolour = 1\n[server]\ncommand = []\n'
        '[ingest]\ntool = "a"\nitem = {}\n[search]\ntool = "b"\narguments = {}\n'
    )
    result = CliRunner().invoke(main, ["systems", "check", str(profile)])
    assert result.exit_code == 2
    assert "colour: unknown field" in result.output
    assert "server: a stdio server needs a command" in result.output


def test_each_run_gets_a_fresh_store_removed_unless_kept(
    installed_servers: Path, tmp_path: Path
) -> None:
    import shutil

    runner = CliRunner()
    kept = runner.invoke(
        main,
        [
            "run",
            "--system",
            "server-memory",
            "--keep",
            "-m",
            "mrr@10",
            "--out",
            str(tmp_path / "a"),
        ],
    )
    assert kept.exit_code == 0, kept.output
    store = Path(
        json.loads((tmp_path / "a" / "report.json").read_text())["system"]["settings"]["kept_store"]
    )
    assert (store / "memory.jsonl").is_file()  # the server's own file, with our 104 memories
    assert len((store / "memory.jsonl").read_text().splitlines()) == 104
    shutil.rmtree(store)
    plain = runner.invoke(
        main, ["run", "--system", "server-memory", "-m", "mrr@10", "--out", str(tmp_path / "b")]
    )
    assert plain.exit_code == 0
    settings = json.loads((tmp_path / "b" / "report.json").read_text())["system"]["settings"]
    assert "kept_store" not in settings


def test_leaderboard_record_and_strict_replay_from_the_command_line(
    installed_servers: Path, tmp_path: Path
) -> None:
    runner = CliRunner()
    base = ["run", "--system", "server-memory", "--system", "builtin-hybrid", "-m", "mrr@10"]
    live = runner.invoke(
        main, [*base, "--record", str(tmp_path / "rec"), "--out", str(tmp_path / "live")]
    )
    assert live.exit_code == 0, live.output
    assert "leaderboard on agent-memory-sample" in live.output
    replay = runner.invoke(
        main,
        [*base, "--replay", str(tmp_path / "rec"), "--strict", "--out", str(tmp_path / "replay")],
    )
    assert replay.exit_code == 0, replay.output
    boards = [
        json.loads((tmp_path / x / "leaderboard.json").read_text()) for x in ("live", "replay")
    ]
    assert [(s["system"], s["means"]) for s in boards[0]["systems"]] == [
        (s["system"], s["means"]) for s in boards[1]["systems"]
    ]
