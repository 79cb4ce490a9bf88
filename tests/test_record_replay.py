"""Record a run, replay it without the system: same values, failures included."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

from click.testing import CliRunner

from recallbench.cli import main
from recallbench.core import Hit, Query
from recallbench.datasets import load_dataset
from recallbench.measures import parse_measures
from recallbench.report import build_report
from recallbench.runner import run_dataset
from recallbench.systems._builtin import BuiltinSystem
from recallbench.systems._replay import RecordingSystem, ReplaySystem, recording_path


def test_cli_replay_reproduces_the_recorded_report(tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["run", "--system", "builtin-lexical", "-m", "ndcg@10", "-m", "mrr@10"]
    recorded = runner.invoke(
        main, [*base, "--record", str(tmp_path / "rec"), "--out", str(tmp_path / "a")]
    )
    assert recorded.exit_code == 0, recorded.output
    replayed = runner.invoke(
        main, [*base, "--replay", str(tmp_path / "rec"), "--strict", "--out", str(tmp_path / "b")]
    )
    assert replayed.exit_code == 0, replayed.output
    a, b = (json.loads((tmp_path / x / "report.json").read_text()) for x in "ab")
    assert a["means"] == b["means"] and a["counts"] == b["counts"]
    assert [q["values"] for q in a["queries"]] == [q["values"] for q in b["queries"]]
    assert [q["returned"] for q in a["queries"]] == [q["returned"] for q in b["queries"]]
    assert b["system"]["settings"]["replayed_from"].endswith(".jsonl")


def test_strict_replay_refuses_missing_answers(tmp_path: Path) -> None:
    runner = CliRunner()
    rec = tmp_path / "rec"
    made = runner.invoke(
        main, ["run", "--system", "builtin-lexical", "--record", str(rec), "--out", str(tmp_path)]
    )
    assert made.exit_code == 0, made.output
    (recording,) = rec.glob("*/*.jsonl")
    lines = recording.read_text().splitlines()
    recording.write_text("\n".join(lines[:-3]) + "\n")  # the last 3 answers are lost
    base = ["run", "--system", "builtin-lexical", "--replay", str(rec)]
    missing = runner.invoke(main, [*base, "--strict", "--out", str(tmp_path)])
    assert missing.exit_code == 2 and "3 queries have no recorded answer" in missing.output
    lenient = runner.invoke(main, [*base, "--out", str(tmp_path / "o")])
    assert lenient.exit_code == 0
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["counts"]["failed"] == 3


def test_replay_of_a_missing_folder_or_recording_is_bad_input(tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["run", "--system", "builtin-lexical", "--out", str(tmp_path / "o"), "--replay"]
    nothing = runner.invoke(main, [*base, str(tmp_path / "nope")])
    assert nothing.exit_code == 2 and "no such folder" in nothing.output
    (tmp_path / "empty").mkdir()
    empty = runner.invoke(main, [*base, str(tmp_path / "empty")])
    assert empty.exit_code == 2 and "no recording of builtin-lexical" in empty.output
    assert not (tmp_path / "o" / "report.json").exists()


class Flaky(BuiltinSystem):
    def __init__(self) -> None:
        super().__init__(channels=("lexical",), name="flaky")

    async def search(self, query: Query, k: int) -> Sequence[Hit]:
        if query.id.endswith("7"):
            raise TimeoutError("no answer in time")
        return await super().search(query, k)


def test_recorded_failures_replay_as_failures(tmp_path: Path) -> None:
    dataset = load_dataset("agent-memory-sample")
    path = recording_path(tmp_path, "flaky", dataset)
    first = asyncio.run(run_dataset(dataset, RecordingSystem(Flaky(), path), k=10))
    second = asyncio.run(run_dataset(dataset, ReplaySystem("flaky", path), k=10))
    measures = parse_measures(["ndcg@10"])
    one, two = build_report(dataset, first, measures), build_report(dataset, second, measures)
    assert one.counts.failed == two.counts.failed > 0
    assert one.means == two.means


class Slow(BuiltinSystem):
    """Takes at least 5 ms a search, so that a replay reading a file is clearly faster."""

    def __init__(self) -> None:
        super().__init__(channels=("lexical",), name="slow")

    async def search(self, query: Query, k: int) -> Sequence[Hit]:
        await asyncio.sleep(0.005)
        return await super().search(query, k)


def test_replay_reports_the_recorded_latencies_and_says_it_replayed(tmp_path: Path) -> None:
    from recallbench.render import render_markdown

    dataset = load_dataset("agent-memory-sample")
    path = recording_path(tmp_path, "slow", dataset)
    live = asyncio.run(run_dataset(dataset, RecordingSystem(Slow(), path), k=10))
    replayed = asyncio.run(run_dataset(dataset, ReplaySystem("slow", path), k=10))
    recorded = {
        entry["query_id"]: entry["latency_ms"]
        for line in path.read_text().splitlines()[1:]
        if (entry := json.loads(line))
    }
    assert all(latency >= 5 for latency in recorded.values())
    assert {r.query_id: r.latency_ms for r in replayed.results} == recorded
    # the live run's own clock includes the wrapper; the recording is within it
    assert all(
        r.latency_ms is not None and r.latency_ms >= recorded[r.query_id] for r in live.results
    )
    assert live.spec.replayed_from is None and replayed.spec.replayed_from == str(path)
    report = build_report(dataset, replayed, parse_measures(["ndcg@10"]))
    assert report.latency_ms is not None and report.latency_ms.p50 >= 5
    assert f"replayed from `{path}`" in render_markdown(report)
    live_spec = build_report(dataset, live, parse_measures(["ndcg@10"])).model_dump(mode="json")
    assert "replayed_from" not in live_spec["system"]


def test_a_recording_without_latencies_replays_with_none(tmp_path: Path) -> None:
    dataset = load_dataset("agent-memory-sample")
    path = recording_path(tmp_path, "old", dataset)
    asyncio.run(run_dataset(dataset, RecordingSystem(Slow(), path), k=10))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for entry in lines[1:]:
        del entry["latency_ms"]
    path.write_text("\n".join(json.dumps(entry) for entry in lines) + "\n")
    replayed = asyncio.run(run_dataset(dataset, ReplaySystem("old", path), k=10))
    assert all(r.latency_ms is None for r in replayed.results)
    assert build_report(dataset, replayed, parse_measures(["ndcg@10"])).latency_ms is None


def test_a_profile_given_by_path_replays_by_path_and_by_name(tmp_path: Path) -> None:
    """Issue 32 item 6.2: --record keyed the recording by the profile's name and --replay
    looked it up by the path given, so a profile file never replayed."""
    from test_mcp_adapter_logic import notes_profile

    profile = notes_profile(tmp_path, "", "")  # name = "notes"
    dataset = tmp_path / "tiny.json"
    dataset.write_text(
        json.dumps(
            {
                "format": "recallbench.dataset/v1",
                "name": "tiny",
                "documents": [
                    {"id": "pg", "text": "The ledger runs on PostgreSQL."},
                    {"id": "fri", "text": "Deploys are frozen on Fridays."},
                ],
                "queries": [
                    {"id": "q1", "text": "postgresql ledger"},
                    {"id": "q2", "text": "fridays"},
                ],
                "qrels": {"q1": {"pg": 1}, "q2": {"fri": 1}},
            }
        )
    )
    runner = CliRunner()
    base = ["run", "--dataset", str(dataset), "-m", "mrr@10", "--no-store"]
    rec = tmp_path / "rec"
    made = runner.invoke(
        main, [*base, "--system", str(profile), "--record", str(rec), "--out", str(tmp_path / "a")]
    )
    assert made.exit_code == 0, made.output
    assert [p.parent.name for p in rec.glob("*/*.jsonl")] == ["notes"]
    live = json.loads((tmp_path / "a" / "report.json").read_text())
    for given, out in ((str(profile), "b"), ("notes", "c")):
        replayed = runner.invoke(
            main,
            [
                *base,
                "--system",
                given,
                "--replay",
                str(rec),
                "--strict",
                "--out",
                str(tmp_path / out),
            ],
        )
        assert replayed.exit_code == 0, replayed.output
        report = json.loads((tmp_path / out / "report.json").read_text())
        assert report["means"] == live["means"] and report["means"]["mrr@10"] == 1.0
        assert report["system"]["system"] == "notes"  # named as the live run was
    assert recording_path(rec, str(profile), load_dataset(str(dataset))) == recording_path(
        rec, "notes", load_dataset(str(dataset))
    )
