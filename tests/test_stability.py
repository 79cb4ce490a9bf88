"""`run --repeat N`: each query asked N times, the first answer scored, the others compared."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console

from recallbench.cli import main
from recallbench.core import ConfigError, Dataset, Document, Query, Run
from recallbench.core._run import RepeatedResult
from recallbench.datasets import load_dataset
from recallbench.measures import parse_measures
from recallbench.render import render_markdown, render_terminal
from recallbench.report import build_report
from recallbench.runner import run_dataset
from recallbench.systems._python import PythonSystem
from recallbench.systems._replay import RecordingSystem, ReplaySystem, recording_path

DOCS = (
    Document(id="d1", text="alpha beta gamma"),
    Document(id="d2", text="alpha beta"),
    Document(id="d3", text="alpha"),
    Document(id="d4", text="delta"),
    Document(id="d5", text="epsilon"),
)
QUERIES = (
    Query(id="q1", text="alpha beta gamma"),
    Query(id="q2", text="alpha beta gamma swap"),
    Query(id="q3", text="delta"),
    Query(id="q4", text="alpha beta swap"),
    Query(id="q5", text="alpha fail"),
    Query(id="q6", text="alpha broken"),
    Query(id="q7", text="epsilon fail"),
)
DATASET = Dataset(
    name="stability",
    documents=DOCS,
    queries=QUERIES,
    qrels={
        "q1": {"d1": 1},
        "q2": {"d1": 1},
        "q3": {"d4": 1},
        "q4": {"d2": 1},
        "q5": {"d3": 1},
        "q6": {"d3": 1},
        "q7": {"d5": 1},
    },
)
MEASURES = parse_measures(["ndcg@2", "recall@2"])


def _words(text: str) -> set[str]:
    return set(text.split())


class Steady:
    """Deterministic: documents by shared words, ties by id."""

    def __init__(self) -> None:
        self.documents: list[dict[str, Any]] = []
        self.calls: Counter[str] = Counter()

    def ingest(self, documents: list[dict[str, Any]]) -> None:
        self.documents = documents

    def rank(self, text: str, k: int) -> list[tuple[str, float]]:
        scored = [(d["id"], float(len(_words(text) & _words(d["text"])))) for d in self.documents]
        return sorted((s for s in scored if s[1] > 0), key=lambda s: (-s[1], s[0]))[:k]

    def search(self, text: str, k: int) -> list[tuple[str, float]]:
        self.calls[text] += 1
        return self.rank(text, k)


class Wobbly(Steady):
    """A query with "swap" returns its top two reversed on every second call; "fail" fails
    on the second call only; "broken" always fails."""

    def search(self, text: str, k: int) -> list[tuple[str, float]]:
        self.calls[text] += 1
        call = self.calls[text]
        words = _words(text)
        if "broken" in words or ("fail" in words and call == 2):
            raise RuntimeError("the re-ranker timed out")
        hits = self.rank(text, k)
        if "swap" in words and call % 2 == 0:
            hits[:2] = hits[1::-1]
        return hits


class FirstFails(Steady):
    """Fails the first call of every query, then answers."""

    def search(self, text: str, k: int) -> list[tuple[str, float]]:
        self.calls[text] += 1
        if self.calls[text] == 1:
            raise RuntimeError("cold start")
        return self.rank(text, k)


def _run(target: str, repeat: int, progress: Any = None) -> Run:
    system = PythonSystem(f"test_stability:{target}")
    return asyncio.run(run_dataset(DATASET, system, k=3, progress=progress, repeat=repeat))


def test_a_deterministic_system_is_stable_without_warning() -> None:
    run = _run("Steady", 3)
    assert [r.query_id for r in run.repeats] == [q.id for q in QUERIES]
    assert all(len(r.rankings) == 2 and r.errors == () for r in run.repeats)
    report = build_report(DATASET, run, MEASURES)
    assert report.stability is not None
    assert report.stability.model_dump() == {
        "repeats": 3,
        "queries": 7,
        "stable": 7,
        "rate": 1.0,
        "changed": [],
        "failed_in_some": 0,
    }
    assert report.warnings == []


def test_a_changing_ranking_is_reported_with_its_queries() -> None:
    run = _run("Wobbly", 2)
    first = {r.query_id: [h.doc_id for h in r.hits] for r in run.results}
    assert first["q2"] == ["d1", "d2", "d3"]  # the first answer is the one kept and scored
    repeated = {r.query_id: r for r in run.repeats}
    assert repeated["q2"].rankings == (("d2", "d1", "d3"),)
    assert repeated["q5"].rankings == ((),)
    (error,) = repeated["q5"].errors  # a python: plugin's error names its frames
    assert error.startswith("RuntimeError: the re-ranker timed out (in the plugin at test_stab")

    stability = build_report(DATASET, run, MEASURES).stability
    assert stability is not None
    # q5, q7 fail on the second call only; q6 fails every time: neither is compared
    assert stability.model_dump() == {
        "repeats": 2,
        "queries": 4,
        "stable": 2,
        "rate": 0.5,
        "changed": ["q2", "q4"],
        "failed_in_some": 2,
    }


def test_a_third_answer_like_the_first_still_counts_as_changed() -> None:
    stability = build_report(DATASET, _run("Wobbly", 3), MEASURES).stability
    assert stability is not None
    assert stability.repeats == 3 and stability.changed == ["q2", "q4"]
    assert stability.queries == 4 and stability.rate == 0.5


def test_the_warning_and_the_renderings_name_the_changed_queries() -> None:
    report = build_report(DATASET, _run("Wobbly", 2), MEASURES)
    assert (
        "2 of 4 queries returned a different ranking on repetition (stability 50.0%): "
        "the measures describe one draw" in report.warnings
    )
    assert any("2 queries failed in some but not all" in w for w in report.warnings)
    console = Console(record=True, width=200)
    render_terminal(report, console)
    printed = console.export_text()
    assert (
        "stability over 2 runs: 50.0% (2 of 4 queries identical; changed: q2, q4); "
        "2 failed in some runs only" in printed
    )
    markdown = render_markdown(report)
    section = markdown.split("## Stability", 1)[1].split("\n## ", 1)[0]
    assert "2 of 4 queries (50.0%)" in section
    assert "- `q2` alpha beta gamma swap" in section
    assert "- `q4` alpha beta swap" in section
    assert "`q1`" not in section


def test_a_first_answer_that_fails_is_scored_and_counted_as_failed_in_some() -> None:
    run = _run("FirstFails", 2)
    assert all(result.failed for result in run.results)
    report = build_report(DATASET, run, MEASURES)
    assert report.counts.failed == len(QUERIES)
    assert report.stability is not None
    assert report.stability.failed_in_some == len(QUERIES)
    assert report.stability.queries == 0 and report.stability.rate is None
    assert "stability over 2 runs: –" in _terminal(report)


def _terminal(report: Any) -> str:
    console = Console(record=True, width=200)
    render_terminal(report, console)
    return console.export_text()


def test_repeat_one_keeps_the_run_file_as_it_was() -> None:
    run = _run("Wobbly", 1)
    assert run.repeats == ()
    assert "repeats" not in json.loads(run.model_dump_json())
    report = build_report(DATASET, run, MEASURES)
    assert report.stability is None
    assert "## Stability" not in render_markdown(report)
    assert "stability over" not in _terminal(report)


def test_repeats_survive_the_run_file() -> None:
    run = _run("Wobbly", 2)
    data = json.loads(run.model_dump_json())
    assert len(data["repeats"]) == len(QUERIES)
    assert Run.model_validate_json(run.model_dump_json()) == run


def test_errors_must_match_the_rankings() -> None:
    with pytest.raises(ValueError, match="one entry per ranking"):
        RepeatedResult(query_id="q", rankings=((), ()), errors=("boom",))


def test_progress_counts_queries_not_calls() -> None:
    seen: list[tuple[int, int]] = []
    _run("Steady", 3, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(i, len(QUERIES)) for i in range(1, len(QUERIES) + 1)]


def test_each_query_is_asked_repeat_times_in_a_row() -> None:
    system = PythonSystem("test_stability:Steady")
    asked: list[str] = []
    search = system.search

    async def spy(query: Query, k: int) -> Any:
        asked.append(query.id)
        return await search(query, k)

    system.search = spy  # type: ignore[method-assign]
    asyncio.run(run_dataset(DATASET, system, k=3, repeat=3))
    assert asked == [q.id for q in QUERIES for _ in range(3)]


def test_repeat_below_one_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="repeat must be at least 1"):
        _run("Steady", 0)


def test_recording_keeps_the_first_answer(tmp_path: Path) -> None:
    path = recording_path(tmp_path, "wobbly", DATASET)
    system = RecordingSystem(PythonSystem("test_stability:Wobbly"), path)
    live = asyncio.run(run_dataset(DATASET, system, k=3, repeat=2))
    lines = path.read_text().splitlines()
    assert len(lines) == 1 + len(QUERIES)  # the header, then one answer per query
    replayed = asyncio.run(run_dataset(DATASET, ReplaySystem("wobbly", path), k=3))
    assert [r.hits for r in replayed.results] == [r.hits for r in live.results]
    assert [r.query_id for r in replayed.results if r.failed] == ["q6"]


def test_cli_repeat_on_the_bundled_dataset(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["run", "--repeat", "2", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    queries = len(load_dataset("agent-memory-sample").queries)
    assert f"stability over 2 runs: 100.0% ({queries} of {queries} queries identical)" in (
        result.output
    )
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["stability"] == {
        "repeats": 2,
        "queries": queries,
        "stable": queries,
        "rate": 1.0,
        "changed": [],
        "failed_in_some": 0,
    }
    run = json.loads((tmp_path / "run.json").read_text())
    assert len(run["repeats"]) == queries
    assert "## Stability" in (tmp_path / "report.md").read_text()


def test_cli_repeat_reports_a_wobbly_python_system(tmp_path: Path) -> None:
    dataset = tmp_path / "stability.json"
    dataset.write_text(DATASET.model_dump_json())
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--dataset",
            str(dataset),
            "--system",
            "python:test_stability:Wobbly",
            "--k",
            "3",
            "-m",
            "ndcg@2",
            "--repeat",
            "2",
            "--record",
            str(tmp_path / "rec"),
            "--out",
            str(tmp_path / "out"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "changed: q2, q4" in result.output
    assert "2 of 4 queries returned a different ranking on repetition" in result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["stability"]["changed"] == ["q2", "q4"]


def test_cli_refuses_repeat_with_replay(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["run", "--repeat", "2", "--replay", str(tmp_path), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    assert "--repeat measures the live system; it cannot be combined with --replay" in (
        result.output
    )


def test_cli_rejects_repeat_zero(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["run", "--repeat", "0", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "--repeat" in result.output
