"""`recallbench gate` on an extraction report: [gates.extraction] thresholds under a chosen
rule and statistic, undefined measures, unknown measures and rules, and the CI outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from conftest import markdown_shown
from recallbench.cli import main


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled meeting corpus scored with the built-in baseline under two rules."""
    out = tmp_path_factory.mktemp("extract")
    result = CliRunner().invoke(
        main,
        [
            "extract",
            "--ground-truth",
            "meeting-sample",
            "--rule",
            "exact",
            "--rule",
            "jaccard>=0.5",
            "--resamples",
            "200",
            "--out",
            str(out),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    return out


def _aggregate(report_dir: Path, rule: str, measure: str) -> dict[str, object]:
    report = json.loads((report_dir / "extraction.json").read_text())
    scores = next(s for s in report["results"] if s["rule"] == rule)
    return next(a for a in scores["aggregates"] if a["measure"] == measure)


def _gate(report: Path, config: str, tmp_path: Path, *args: str) -> Result:
    """The gate's result; its Markdown verdict (the table, unwrapped) in ``tmp_path/gate.md``."""
    path = tmp_path / "recallbench.toml"
    path.write_text(config)
    summary = ["--summary-md", str(tmp_path / "gate.md")] if "--accept" not in args else []
    return CliRunner().invoke(main, ["gate", str(report), "--config", str(path), *summary, *args])


def test_thresholds_around_the_measured_value_pass_and_fail(
    report_dir: Path, tmp_path: Path
) -> None:
    recall = _aggregate(report_dir, "jaccard>=0.5", "event_recall")["macro"]
    assert isinstance(recall, float) and 0 < recall < 1
    below = (
        f'[gates.extraction]\nrule = "jaccard >= 0.5"\n'
        f"[gates.extraction.measures.event_recall]\nmin = {recall - 0.01}\n"
    )
    passed = _gate(report_dir, below, tmp_path, "--junit", str(tmp_path / "g.xml"))
    assert passed.exit_code == 0, passed.output
    assert f"event_recall [jaccard>=0.5] = {recall:.4f}" in markdown_shown(tmp_path / "gate.md")
    assert 'failures="0"' in (tmp_path / "g.xml").read_text()
    above = below.replace(f"min = {recall - 0.01}", f"min = {recall + 0.01}")
    failed = _gate(report_dir / "extraction.json", above, tmp_path)
    assert failed.exit_code == 1 and "< minimum" in markdown_shown(tmp_path / "gate.md")


def test_the_lower_bound_statistic_is_stricter_than_the_mean(
    report_dir: Path, tmp_path: Path
) -> None:
    aggregate = _aggregate(report_dir, "exact", "entity_f1")
    mean, interval = aggregate["macro"], aggregate["macro_interval"]
    assert isinstance(mean, float) and isinstance(interval, list) and interval[0] < mean
    bar = (interval[0] + mean) / 2
    config = f"[gates.extraction.measures.entity_f1]\nmin = {bar}\n"
    assert _gate(report_dir, config, tmp_path).exit_code == 0
    lower_config = '[gates.extraction]\nstatistic = "lower"\n' + config
    lower = _gate(report_dir, lower_config, tmp_path)
    assert lower.exit_code == 1, lower.output
    assert "entity_f1 (lower) [exact]" in markdown_shown(tmp_path / "gate.md")


def test_connection_fpr_is_lower_is_better_and_a_missing_rule_fails(
    report_dir: Path, tmp_path: Path
) -> None:
    fpr = _aggregate(report_dir, "exact", "connection_fpr")["macro"]
    assert isinstance(fpr, float)
    ok = _gate(report_dir, f"[gates.extraction.measures.connection_fpr]\nmax = {fpr}\n", tmp_path)
    assert ok.exit_code == 0, ok.output
    missing = (
        '[gates.extraction]\nrule = "fuzzy>=90"\n[gates.extraction.measures.event_f1]\nmin = 0\n'
    )
    result = _gate(report_dir, missing, tmp_path)
    assert result.exit_code == 1
    assert "no scores under rule fuzzy>=90" in markdown_shown(tmp_path / "gate.md")


def test_an_undefined_measure_fails_a_blocking_threshold_with_the_reason(tmp_path: Path) -> None:
    gold = {
        "format": "recallbench.extraction/v1",
        "name": "no-entities",
        "documents": [
            {
                "id": "d1",
                "text": "Alice: I moved to Lisbon.",
                "events": [{"description": "Alice moved to Lisbon"}],
            }
        ],
    }
    (tmp_path / "gold.json").write_text(json.dumps(gold))
    out = tmp_path / "out"
    made = CliRunner().invoke(
        main, ["extract", "--ground-truth", str(tmp_path / "gold.json"), "--out", str(out), "-q"]
    )
    assert made.exit_code == 0, made.output
    result = _gate(out, "[gates.extraction.measures.entity_precision]\nmin = 0.5\n", tmp_path)
    assert result.exit_code == 1
    assert "the ground truth annotates no entities" in markdown_shown(tmp_path / "gate.md")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("[gates.extraction.measures.event_fscore]\nmin = 0.5\n", "unknown extraction measure"),
        ('[gates.extraction]\nrule = "overlap>=2"\n', "gates.extraction.rule"),
        ('[gates.extraction]\nstatistic = "median"\n', "gates.extraction.statistic"),
    ],
)
def test_bad_extraction_gates_exit_2_naming_the_key(
    report_dir: Path, tmp_path: Path, config: str, message: str
) -> None:
    result = _gate(report_dir, config, tmp_path)
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output


def test_retrieval_only_options_are_refused(report_dir: Path, tmp_path: Path) -> None:
    result = _gate(report_dir, "", tmp_path, "--accept")
    assert result.exit_code == 2 and "retrieval reports" in result.output
