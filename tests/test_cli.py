"""End to end through the command line: run, reports, schemas, dataset commands."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.datasets import load_dataset
from recallbench.schemas import FORMATS, load, render


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("out")
    result = CliRunner().invoke(main, ["run", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out, result.output


def _sample_measures() -> list[str]:
    named = load_dataset("agent-memory-sample").metadata["default_measures"]
    assert isinstance(named, list)
    return [str(name) for name in named]


def test_run_prints_the_table_and_writes_four_files(demo: tuple[Path, str]) -> None:
    out, printed = demo
    written = sorted(p.name for p in out.iterdir())
    assert written == ["report.html", "report.json", "report.md", "run.json"]
    for measure in _sample_measures():  # the dataset names its own defaults
        assert measure in printed
    assert "builtin on agent-memory-sample" in printed


@pytest.mark.parametrize(("stem", "file"), [("run.v1", "run.json"), ("report.v1", "report.json")])
def test_outputs_follow_their_shipped_schema(demo: tuple[Path, str], stem: str, file: str) -> None:
    document = json.loads((demo[0] / file).read_text())
    jsonschema.validate(document, load(stem))


def test_bundled_dataset_follows_its_schema() -> None:
    from recallbench.datasets import bundled_path

    jsonschema.validate(
        json.loads(bundled_path("agent-memory-sample").read_text()), load("dataset.v1")
    )


@pytest.mark.parametrize("stem", list(FORMATS))
def test_shipped_schemas_are_generated_from_the_models(stem: str) -> None:
    assert json.loads(render(stem)) == load(stem), "run `make schemas`"


def test_report_json_holds_everything_needed(demo: tuple[Path, str]) -> None:
    report = json.loads((demo[0] / "report.json").read_text())
    dataset = load_dataset("agent-memory-sample")
    assert report["format"] == "recallbench.report/v1"
    assert report["dataset"]["sha256"] == dataset.sha256
    assert set(report["means"]) == set(_sample_measures())
    assert len(report["queries"]) == len(dataset.queries)
    counts = report["counts"]
    assert counts["evaluated"] + counts["no_relevant"] == counts["queries"]
    assert {"p50", "p95", "p99", "max"} <= set(report["latency_ms"])
    assert report["rules"]["queries_without_relevant_documents"].startswith("left out")
    assert all(m["definition"] for m in report["measures"])
    assert {g["name"] for g in report["breakdowns"]["category"]} >= {"semantic", "causal"}
    assert len(report["worst_queries"]) == 10
    # the means are the means of the per-query values that are present
    for measure in _sample_measures()[:2]:  # ranking measures: the mean of every included query
        values = [q["values"][measure] for q in report["queries"] if q["included"]]
        assert report["means"][measure] == pytest.approx(sum(values) / len(values), abs=1e-15)


def test_report_md_has_breakdowns_and_worst_queries(demo: tuple[Path, str]) -> None:
    text = (demo[0] / "report.md").read_text()
    for heading in (
        "## Summary",
        "## By category",
        "## By intent",
        "## The 10 worst queries",
        "## Rules",
        "## Measures",
    ):
        assert heading in text
    assert "- expected: " in text and "- returned: " in text


def test_run_accepts_measures_and_rejects_unknown_ones(tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(
        main, ["run", "-m", "ndcg_exp@10", "-m", "map", "--k", "10", "--out", str(tmp_path / "a")]
    )
    assert ok.exit_code == 0, ok.output
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    assert list(report["means"]) == ["ndcg_exp@10", "map"]
    bad = runner.invoke(main, ["run", "-m", "ndcg@x", "--out", str(tmp_path / "b")])
    assert bad.exit_code == 2 and "positive integer" in bad.output
    assert "Traceback" not in bad.output and not (tmp_path / "b").exists()


def test_unknown_dataset_and_system_exit_2(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(main, ["run", "--dataset", "nope", "--out", str(tmp_path)])
    assert missing.exit_code == 2 and "bundled: agent-memory-sample" in missing.output
    system = runner.invoke(main, ["run", "--system", "nope", "--out", str(tmp_path)])
    assert system.exit_code == 2 and "builtin-hybrid, builtin-lexical" in system.output
    assert "python:MODULE:FACTORY" in system.output


def test_datasets_show_and_list() -> None:
    runner = CliRunner()
    shown = runner.invoke(main, ["datasets", "show", "agent-memory-sample"])
    assert shown.exit_code == 0, shown.output
    for word in ("grade", "category", "intent", "tier", "semantic", "constitutional"):
        assert word in shown.output
    assert runner.invoke(main, ["datasets", "list"]).output.split() == ["agent-memory-sample"]


def test_help_shows_examples() -> None:
    for command in (["--help"], ["run", "--help"], ["datasets", "--help"]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 0 and "Examples:" in result.output


def test_several_systems_make_a_leaderboard(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--system",
            "builtin-lexical",
            "--system",
            "builtin-hybrid",
            "-m",
            "mrr@10",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "leaderboard on agent-memory-sample" in result.output
    board = json.loads((tmp_path / "leaderboard.json").read_text())
    names = [entry["system"] for entry in board["systems"]]
    assert sorted(names) == ["builtin-hybrid", "builtin-lexical"]
    means = [entry["means"]["mrr@10"] for entry in board["systems"]]
    assert means == sorted(means, reverse=True)  # best first
    for name in names:
        assert (tmp_path / name / "report.json").is_file()
    assert "| builtin-" in (tmp_path / "leaderboard.md").read_text()
