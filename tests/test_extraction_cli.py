"""`recallbench extract` end to end: LoCoMo with the baseline, a hand-made pair with known
scores, and bad input (exit 2, located, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner, Result

from conftest import shared_data
from recallbench.cli._extract import extract
from recallbench.extraction import GROUND_TRUTH_FORMAT, OUTPUT_FORMAT
from recallbench.schemas import load

TRUTH: dict[str, Any] = {
    "format": GROUND_TRUTH_FORMAT,
    "name": "hand-made",
    "documents": [
        {
            "id": "a",
            "text": "Alice approved the budget. Bob will send the report. Alice likes tea.",
            "events": [
                {
                    "description": "Alice approved the budget",
                    "category": "Decision",
                    "actor": "Alice",
                },
                {"description": "Bob will send the report", "category": "Commitment"},
            ],
            "entities": [{"name": "Alice Chen", "type": "PERSON", "mentions": ["Alice", "AC"]}],
            "observations": [{"text": "Alice likes tea"}],
        },
        {"id": "b", "text": "Carol booked the venue.", "events": [{"description": "x y"}]},
    ],
}
OUTPUT: dict[str, Any] = {
    "format": OUTPUT_FORMAT,
    "system": "hand",
    "documents": [
        {
            "id": "a",
            "events": [
                {"description": "alice APPROVED the budget.", "category": "decision"},
                {"description": "something else entirely"},
            ],
            "entities": [{"name": "Alice Chen", "type": "person", "mentions": ["Alice"]}],
            "observations": [{"text": "Alice likes tea!"}],
        }
    ],
}


def _invoke(*args: str | Path) -> Result:
    return CliRunner(env={"COLUMNS": "200"}).invoke(extract, [str(arg) for arg in args])


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _aggregates(report: dict[str, Any], rule: str) -> dict[str, dict[str, Any]]:
    (result,) = [r for r in report["results"] if r["rule"] == rule]
    return {a["measure"]: a for a in result["aggregates"]}


def test_baseline_on_locomo_conv30_is_reproducible(tmp_path: Path) -> None:
    locomo = shared_data("locomo", "locomo10.json")
    reports = []
    for name in ("one", "two"):
        out = tmp_path / name
        args = ["--ground-truth", f"locomo-events:{locomo}", "--conversation", "conv-30"]
        result = _invoke(*args, "--resamples", "200", "--out", out)
        assert result.exit_code == 0, result.output
        assert sorted(p.name for p in out.iterdir()) == ["extraction.json", "extraction.md"]
        report = json.loads((out / "extraction.json").read_text())
        assert report.pop("created_at")
        reports.append(report)
    assert reports[0] == reports[1]
    report = reports[0]
    assert report["format"] == "recallbench.extraction-report/v1"
    assert report["rules"] == ["exact", "lcs>=0.7", "fuzzy>=85"]
    assert report["ground_truth"]["documents"] == 19
    assert report["ground_truth"]["loader"]["name"] == "locomo-events"
    for rule in report["rules"]:
        assert f"rule: {rule}" in result.output
        assert f"## Rule: {rule}" in (tmp_path / "two" / "extraction.md").read_text()
        for side in ("precision", "coverage", "f1"):  # never recall alone
            observations = _aggregates(report, rule)[f"observation_{side}"]
            assert observations["units"] == 19 and observations["macro_interval"] is not None
            assert (
                f"| observation_{side} | 19 |" in (tmp_path / "two" / "extraction.md").read_text()
            )
    markdown = (tmp_path / "two" / "extraction.md").read_text()
    assert "Intervals resample the 19 documents" in markdown  # one conversation
    undefined = report["undefined"]["lcs>=0.7"]
    assert undefined["category_accuracy"] == "the ground truth gives no event categories"
    assert undefined["hop_accuracy"] == "the ground truth has no graph cases"
    assert "the ground truth gives no event categories" in result.output
    assert "loader changes:" in result.output


def test_known_scores_under_the_exact_rule(tmp_path: Path) -> None:
    truth = _write(tmp_path / "truth.json", TRUTH)
    output = _write(tmp_path / "output.json", OUTPUT)
    saved = tmp_path / "saved.json"
    result = _invoke(
        "--ground-truth", truth, "--output", output, "--rule", "exact",
        "--save-output", saved, "--out", tmp_path / "out",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "rule: exact" in result.output
    report = json.loads((tmp_path / "out" / "extraction.json").read_text())
    assert report["rules"] == ["exact"] and report["output"]["system"] == "hand"
    scores = _aggregates(report, "exact")
    # document a: 1 of 2 events matched; b: nothing extracted of 1 expected
    expected = {
        "event_precision": (1, 0.5, 0.5),  # (units, macro, micro); b's precision undefined
        "event_recall": (2, 0.25, 1 / 3),
        "event_f1": (2, 0.25, 2 / 5),
        "category_accuracy": (1, 1.0, 1.0),
        "entity_precision": (1, 1.0, 1.0),
        "entity_recall": (1, 1.0, 1.0),
        "type_accuracy": (1, 1.0, 1.0),
        "dedup_bcubed_f1": (1, 1.0, 1.0),
        "observation_coverage": (1, 1.0, 1.0),
    }
    for measure, (units, macro, micro) in expected.items():
        got = scores[measure]
        assert (got["units"], got["macro"], got["micro"]) == pytest.approx((units, macro, micro))
    # Alice's event is matched, but the expected actor is missing from the extraction
    assert scores["actor_accuracy"]["macro"] == 0.0
    assert scores["connection_recall"]["macro"] is None
    why = report["undefined"]["exact"]["connection_recall"]
    assert why == "the ground truth has no graph cases"
    assert "–" in result.output
    jsonschema.validate(json.loads(saved.read_text()), load("extraction-output.v1"))
    jsonschema.validate(TRUTH, load("extraction.v1"))


@pytest.mark.parametrize(
    ("truth", "output", "located"),
    [
        (
            {**TRUTH, "documents": [{"id": "a", "text": "t", "events": [{"description": 5}]}]},
            OUTPUT,
            "documents[0].events[0].description",
        ),
        (TRUTH, {**OUTPUT, "documents": [{"id": "a"}, {"id": "a"}]}, "documents[1].id"),
        (TRUTH, {**OUTPUT, "format": "recallbench.extraction/v1"}, "format"),
    ],
)
def test_bad_files_exit_2_located_and_write_nothing(
    tmp_path: Path, truth: Any, output: Any, located: str
) -> None:
    truth_file = _write(tmp_path / "truth.json", truth)
    output_file = _write(tmp_path / "output.json", output)
    out = tmp_path / "out"
    result = _invoke("--ground-truth", truth_file, "--output", output_file, "--out", out)
    assert result.exit_code == 2, result.output
    bad = truth_file if truth is not TRUTH else output_file
    assert str(bad) in result.output and located in result.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rule", "overlap>=3"], "unknown matching rule"),
        (["--extractor", "baseline"], "exclude each other"),
        (["--conversation", "conv-30"], "--conversation applies to"),
    ],
)
def test_bad_options_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    truth = _write(tmp_path / "truth.json", TRUTH)
    output = _write(tmp_path / "output.json", OUTPUT)
    out = tmp_path / "out"
    result = _invoke("--ground-truth", truth, "--output", output, *args, "--out", out)
    assert result.exit_code == 2 and message in result.output, result.output
    assert not out.exists()


def test_missing_and_unknown_ground_truth(tmp_path: Path) -> None:
    missing = _invoke("--ground-truth", tmp_path / "nope.json", "--out", tmp_path / "o")
    assert missing.exit_code == 2 and "nope.json" in missing.output
    unknown = _invoke("--ground-truth", "beir:data", "--out", tmp_path / "o")
    assert unknown.exit_code == 2 and "unknown format 'beir'" in unknown.output
    assert not (tmp_path / "o").exists()


def test_help_has_examples() -> None:
    result = _invoke("--help")
    assert result.exit_code == 0
    assert "Examples:" in result.output and "locomo-events:" in result.output


def test_gameable_rules_are_named_only_explicitly_and_marked(tmp_path: Path) -> None:
    help_text = " ".join(_invoke("--help").output.split())
    assert "Default: exact, lcs>=0.7, fuzzy>=85." in help_text
    assert "Gameable, kept only to compare with published numbers" in help_text
    out = tmp_path / "out"
    args = ["--ground-truth", "meeting-sample", "--rule", "fuzzy-set>=85", "--rule", "lcs>=0.7"]
    result = _invoke(*args, "--resamples", "50", "--out", out)
    assert result.exit_code == 0, result.output
    report = json.loads((out / "extraction.json").read_text())
    gameable, sound = report["results"]
    assert gameable["rule"] == "fuzzy-set>=85" and "token_set_ratio" in gameable["gameable"]
    assert sound["rule"] == "lcs>=0.7" and sound["gameable"] is None
    assert sound["name_rule"] == "exact+aliases"
    markdown = (out / "extraction.md").read_text()
    fuzzy_set, lcs = markdown.split("## Rule: lcs>=0.7")
    assert "**Gameable** (token_set_ratio" in fuzzy_set and "**Gameable**" not in lcs
    terminal = " ".join(result.output.split())
    assert terminal.count("gameable (token_set_ratio") == 1
    assert "Intervals resample the 10 documents" in terminal


def test_the_name_rule_option(tmp_path: Path) -> None:
    args = ["--ground-truth", "meeting-sample", "--rule", "exact", "--resamples", "50"]
    bad = _invoke(*args, "--name-rule", "token_set>=85", "--out", tmp_path / "bad")
    assert bad.exit_code == 2 and "unknown name rule 'token_set>=85'" in bad.output
    assert not (tmp_path / "bad").exists()
    good = _invoke(*args, "--name-rule", "fuzzy>=90", "--out", tmp_path / "good")
    assert good.exit_code == 0, good.output
    report = json.loads((tmp_path / "good" / "extraction.json").read_text())
    assert report["results"][0]["name_rule"].startswith("fuzzy>=90")
