"""`recallbench compare` and `recallbench power` end to end, on real runs of the bundled dataset."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.measures import DEFAULT_MEASURES
from recallbench.schemas import load

MEASURES = ["-m", "ndcg@10", "-m", "recall@10", "-m", "mrr@10"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    # the built-in default measures, not the bundled dataset's own (its agent-memory ones)
    defaults = [arg for m in DEFAULT_MEASURES for arg in ("-m", m)]
    systems = ["--system", "builtin-lexical", "--system", "builtin-hybrid"]
    result = CliRunner().invoke(main, ["run", *systems, "--out", str(out), *defaults])
    assert result.exit_code == 0, result.output
    return out


def _compare(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["compare", *args])
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def compared(runs: Path) -> tuple[str, dict, str]:  # type: ignore[type-arg]
    out = runs / "comparison"
    code, printed = _compare(
        str(runs / "builtin-lexical"), str(runs / "builtin-hybrid"), *MEASURES, "--out", str(out)
    )
    assert code == 0, printed
    document = json.loads((out / "comparison.json").read_text())
    return printed, document, (out / "comparison.md").read_text()


def test_terminal_table_names_methods_and_verdicts(compared: tuple[str, dict, str]) -> None:  # type: ignore[type-arg]
    printed = " ".join(compared[0].split())  # the terminal wraps lines
    assert "builtin-hybrid vs builtin-lexical" in printed
    for column in ("98.33% CI", "p rand.", "p t", "p W", "d_z", "W/T/L", "MDE"):  # 1 - 0.05/3
        assert column in printed
    assert "paired bootstrap (bca, 10,000 resamples, seed 0)" in printed
    assert "Holm-Bonferroni-adjusted" in printed
    assert "rank differences" in printed and "by category" in printed


def test_comparison_json_is_consistent_with_the_reports(
    runs: Path,
    compared: tuple[str, dict, str],  # type: ignore[type-arg]
) -> None:
    _, document, _ = compared
    jsonschema.validate(document, load("comparison.v2"))
    base = json.loads((runs / "builtin-lexical" / "report.json").read_text())
    other = json.loads((runs / "builtin-hybrid" / "report.json").read_text())
    assert document["baseline"] == "builtin-lexical"
    assert [row["measure"] for row in document["comparisons"]] == ["ndcg@10", "recall@10", "mrr@10"]
    for row in document["comparisons"]:
        measure = row["measure"]
        assert row["n"] == base["counts"]["evaluated"]
        assert row["mean_baseline"] == pytest.approx(base["means"][measure], abs=1e-12)
        assert row["mean_system"] == pytest.approx(other["means"][measure], abs=1e-12)
        assert row["delta"] == pytest.approx(row["mean_system"] - row["mean_baseline"], abs=1e-12)
        assert row["ci"]["low"] <= row["delta"] <= row["ci"]["high"]
        assert row["wins"] + row["ties"] + row["losses"] == row["n"]
        assert row["p_adjusted"]["randomisation"] >= row["p_randomisation"]
        expected = "better" if row["p_adjusted"]["randomisation"] < 0.05 else None
        if expected:
            assert row["verdict"] == ("better" if row["delta"] > 0 else "worse")
        else:
            assert row["verdict"] == "no significant difference"
    categories = {row["group"] for row in document["breakdowns"] if row["grouping"] == "category"}
    assert categories == {q["category"] for q in base["queries"] if q["category"]}
    diff = document["rank_differences"][0]
    assert sum(diff["classes"].values()) == diff["queries"] == len(base["queries"])


def test_markdown_has_every_part(compared: tuple[str, dict, str]) -> None:  # type: ignore[type-arg]
    _, _, markdown = compared
    for heading in (
        "## builtin-hybrid vs builtin-lexical",
        "## By category",
        "## By intent",
        "## Rank differences",
        "## Methods",
    ):
        assert heading in markdown
    assert "| ndcg@10 | 111 |" in markdown


def test_runs_and_reports_give_the_same_statistics(
    runs: Path,
    compared: tuple[str, dict, str],  # type: ignore[type-arg]
) -> None:
    out = runs / "from-runs"
    code, printed = _compare(
        str(runs / "builtin-lexical" / "run.json"),
        str(runs / "builtin-hybrid" / "run.json"),
        *MEASURES,
        "--out",
        str(out),
        "-q",
    )
    assert code == 0, printed
    from_runs = json.loads((out / "comparison.json").read_text())
    keys = ("n", "delta", "p_randomisation", "p_t", "p_wilcoxon", "wins", "ties", "losses")
    for mine, theirs in zip(from_runs["comparisons"], compared[1]["comparisons"], strict=True):
        assert {k: mine[k] for k in keys} == pytest.approx({k: theirs[k] for k in keys})
        assert mine["ci"] == pytest.approx(theirs["ci"])


def test_a_system_against_itself_is_identical_and_not_significant(runs: Path) -> None:
    folder = str(runs / "builtin-lexical")
    out = runs / "self"
    code, printed = _compare(folder, folder, *MEASURES, "--out", str(out), "-q")
    assert code == 0, printed
    document = json.loads((out / "comparison.json").read_text())
    for row in document["comparisons"]:
        assert (row["delta"], row["p_randomisation"], row["losses"]) == (0.0, 1.0, 0)
        assert row["verdict"] == "no significant difference"
    classes = document["rank_differences"][0]["classes"]
    assert classes["identical"] == document["queries"]["paired"]


def test_baseline_by_name_and_unknown_baseline(runs: Path) -> None:
    args = [str(runs / "builtin-lexical"), str(runs / "builtin-hybrid"), *MEASURES]
    code, printed = _compare(*args, "--baseline", "builtin-hybrid")
    assert code == 0, printed
    assert "builtin-lexical vs builtin-hybrid" in printed
    code, printed = _compare(*args, "--baseline", "nope")
    assert code == 2
    assert "--baseline 'nope' matches no input" in printed
    assert "Traceback" not in printed


def _run_without(runs: Path, tmp_path: Path, query_id: str) -> Path:
    run = json.loads((runs / "builtin-hybrid" / "run.json").read_text())
    run["results"] = [r for r in run["results"] if r["query_id"] != query_id]
    path = tmp_path / "partial-run.json"
    path.write_text(json.dumps(run))
    return path


def test_queries_missing_from_one_run_are_an_error_unless_a_flag_says(
    runs: Path, tmp_path: Path
) -> None:
    partial = _run_without(runs, tmp_path, "q001")
    base = str(runs / "builtin-lexical" / "run.json")
    out = tmp_path / "cmp"
    code, printed = _compare(base, str(partial), *MEASURES, "--out", str(out))
    assert code == 2
    assert "1 queries are in some runs and not in others" in printed
    assert "builtin-hybrid lacks 1" in printed and "q001" in printed
    assert "--missing drop" in printed
    assert not out.exists()  # nothing written on an error
    code, printed = _compare(base, str(partial), *MEASURES, "--missing", "drop", "--out", str(out))
    assert code == 0, printed
    dropped = json.loads((out / "comparison.json").read_text())["queries"]
    assert (dropped["paired"], dropped["dropped"]) == (119, ["q001"])
    code, printed = _compare(base, str(partial), *MEASURES, "--missing", "zero", "--out", str(out))
    assert code == 0, printed
    zeroed = json.loads((out / "comparison.json").read_text())["queries"]
    assert (zeroed["paired"], zeroed["dropped"]) == (120, [])


def test_reports_of_different_datasets_are_refused(runs: Path, tmp_path: Path) -> None:
    report = json.loads((runs / "builtin-hybrid" / "report.json").read_text())
    report["dataset"]["sha256"] = "0" * 64
    other = tmp_path / "report.json"
    other.write_text(json.dumps(report))
    code, printed = _compare(str(runs / "builtin-lexical"), str(other))
    assert code == 2
    assert "not the same dataset" in printed


def test_bad_inputs_exit_2_with_a_located_message(runs: Path, tmp_path: Path) -> None:
    code, printed = _compare(str(runs / "builtin-lexical"))
    assert code == 2 and "at least two" in printed
    stray = tmp_path / "other.json"
    stray.write_text('{"format": "something/v1"}')
    code, printed = _compare(str(runs / "builtin-lexical"), str(stray))
    assert code == 2 and "not a recallbench report or run" in printed
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": ')
    code, printed = _compare(str(runs / "builtin-lexical"), str(broken))
    assert code == 2 and f"{broken}:1:" in printed
    code, printed = _compare(
        str(runs / "builtin-lexical"), str(runs / "builtin-hybrid"), "-m", "P@7"
    )
    assert code == 2 and "measure P@7: no per-query values" in printed


def test_run_made_elsewhere_needs_its_dataset(runs: Path, tmp_path: Path) -> None:
    run = json.loads((runs / "builtin-hybrid" / "run.json").read_text())
    run["spec"]["dataset"]["name"] = "elsewhere"
    moved = tmp_path / "run.json"
    moved.write_text(json.dumps(run))
    code, printed = _compare(str(runs / "builtin-lexical" / "run.json"), str(moved))
    assert code == 2
    assert "needs --dataset" in printed


def test_power_gives_queries_needed_and_detectable_effect() -> None:
    result = CliRunner().invoke(main, ["power", "--delta", "0.05", "--sd", "0.15"])
    assert result.exit_code == 0, result.output
    printed = " ".join(result.output.split())  # the terminal wraps lines
    assert "73 queries for the paired randomisation test" in printed
    assert "0.7967 at 72" in printed and "normal approximation says 71" in printed
    result = CliRunner().invoke(main, ["power", "--queries", "73", "--sd", "0.15"])
    assert result.exit_code == 0, result.output
    assert "73 queries detect a mean difference of 0.049" in result.output
    result = CliRunner().invoke(main, ["power", "--sd", "0.15"])
    assert result.exit_code == 2 and "give either --delta" in result.output


def test_compare_help_shows_examples() -> None:
    result = CliRunner().invoke(main, ["compare", "--help"])
    assert result.exit_code == 0
    assert "recallbench compare out/builtin-lexical out/builtin-hybrid" in result.output


def test_folder_without_outputs_is_refused(tmp_path: Path, runs: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    shutil.copy(runs / "builtin-lexical" / "report.md", empty / "report.md")
    code, printed = _compare(str(runs / "builtin-lexical"), str(empty))
    assert code == 2 and "a folder without report.json or run.json" in printed


def test_a_measure_with_its_own_population_compares_only_its_queries(runs: Path) -> None:
    """false_surface counts the questions without a relevant memory (lower is better): its
    n is theirs, and groups without such questions have no row rather than an error."""
    out = runs / "abstention"
    code, printed = _compare(
        str(runs / "builtin-lexical" / "run.json"),
        str(runs / "builtin-hybrid" / "run.json"),
        "-m",
        "false_surface",
        "-m",
        "ndcg@10",
        "--out",
        str(out),
    )
    assert code == 0, printed
    document = json.loads((out / "comparison.json").read_text())
    report = json.loads((runs / "builtin-lexical" / "report.json").read_text())
    unanswerable = [q for q in report["queries"] if q["status"] == "no_relevant"]
    surface = document["comparisons"][0]
    assert surface["measure"] == "false_surface" and surface["n"] == len(unanswerable)
    assert surface["ties"] + surface["wins"] + surface["losses"] == len(unanswerable)
    groups = {r["group"] for r in document["breakdowns"] if r["measure"] == "false_surface"}
    assert groups == {q["category"] for q in unanswerable} | {
        q["intent"] for q in unanswerable if q["intent"]
    }
    if surface["ties"] == surface["n"]:
        # the sentence may wrap at the terminal's width
        assert f"false_surface (the same on all {surface['n']} queries)" in " ".join(
            printed.split()
        )


def test_comparison_md_says_what_changed_per_query(compared: tuple[str, dict, str]) -> None:  # type: ignore[type-arg]
    """`compare --out` writes comparison.md with the queries that got worse and better."""
    _, document, markdown = compared
    assert "## What changed: builtin-hybrid vs builtin-lexical" in markdown
    n = document["comparisons"][0]["n"]
    assert f"- ndcg@10: of {n} paired queries, " in markdown
