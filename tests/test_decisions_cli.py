"""`recallbench decisions`: the baseline and python:/command: deciders scored on the bundled
fixture; faulty deciders and fixtures fail located, with nothing written."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from recallbench.cli._decisions import decisions
from recallbench.extraction import (
    Decider,
    baseline_decisions,
    bundled_decisions,
    resolve_decider,
    score_decisions,
)

DATA = Path(__file__).parent / "data" / "extract"
SYSTEMS = DATA / "systems.py"
COMMAND = DATA / "command.py"


def _invoke(out: Path, *args: str) -> Result:
    return CliRunner().invoke(decisions, [*args, "--out", str(out)])


def _report(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "decisions.json").read_text())
    return data


def _command(mode: str) -> str:
    return f"command:{shlex.quote(sys.executable)} {shlex.quote(str(COMMAND))} {mode}"


def test_the_baseline_is_scored_as_score_decisions_scores_it(tmp_path: Path) -> None:
    result = _invoke(tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "decisions.json",
        "decisions.md",
    ]
    report = _report(tmp_path / "out")
    fixture = bundled_decisions()
    expected = score_decisions(fixture, baseline_decisions(fixture), system="baseline")
    assert report["format"] == "recallbench.decisions-report/v1"
    assert report["scores"] == expected.model_dump(mode="json")
    assert report["fixture"]["name"] == "decisions-sample" and report["fixture"]["cases"] == 22
    assert report["decider"] == {"name": "baseline", "metadata": {}}
    assert len(report["decisions"]) == 22
    markdown = (tmp_path / "out" / "decisions.md").read_text()
    assert f"- accuracy (action): {expected.accuracy:.3f}" in markdown
    assert "| NOOP | 0 | 0 | 0 | 5 | 0 |" in markdown  # every duplicate found
    assert "baseline on decisions-sample: 22 cases" in result.output


def test_a_python_decider_that_always_adds(tmp_path: Path) -> None:
    result = _invoke(tmp_path / "out", "--decider", f"python:{SYSTEMS}:always_add")
    assert result.exit_code == 0, result.output
    scores = _report(tmp_path / "out")["scores"]
    assert scores["accuracy"] == pytest.approx(6 / 22)  # the six expected ADDs
    assert scores["confusion"]["UPDATE"] == {
        "ADD": 8,
        "UPDATE": 0,
        "DELETE": 0,
        "NOOP": 0,
        "MISSING": 0,
    }
    assert scores["per_action"]["ADD"]["recall"] == 1.0


def test_a_command_decider_answers_once_per_case(tmp_path: Path) -> None:
    result = _invoke(tmp_path / "out", "--decider", _command("decide"))
    assert result.exit_code == 0, result.output
    report = _report(tmp_path / "out")
    python = _invoke(tmp_path / "python", "--decider", f"python:{SYSTEMS}:first_memory")
    assert python.exit_code == 0, python.output
    assert report["decisions"] == _report(tmp_path / "python")["decisions"]
    assert report["decisions"]["exact-1"] == {"action": "NOOP", "target": "m1"}
    assert report["decisions"]["exact-2"] == {"action": "NOOP", "target": "m1"}
    scores = report["scores"]
    assert scores["per_kind"]["exact_duplicate"] == 1.0  # the action is right...
    assert scores["target_accuracy"] < scores["accuracy"]  # ...exact-2's memory is m2


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            f"python:{SYSTEMS}:decide_raises",
            "case 'exact-1': raised RuntimeError: no decision",
        ),
        (
            f"python:{SYSTEMS}:unknown_target",
            "case 'exact-1': target: UPDATE needs the id of a stored memory (m1), got 'm99'",
        ),
        (f"python:{SYSTEMS}:bad_action", "case 'exact-1': 1 problem"),
        (_command("fail"), "case 'exact-1': exited 1; stderr: 'the model file is missing'"),
        (_command("prose"), "case 'exact-1': its output is not JSON"),
    ],
)
def test_a_faulty_decider_fails_located_and_writes_nothing(
    tmp_path: Path, spec: str, expected: str
) -> None:
    result = _invoke(tmp_path / "out", "--decider", spec)
    assert result.exit_code == 3, result.output
    assert expected in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_an_unknown_action_is_named_with_its_path(tmp_path: Path) -> None:
    result = _invoke(tmp_path / "out", "--decider", f"python:{SYSTEMS}:bad_action")
    assert "action:" in result.output and "'ADD', 'UPDATE', 'DELETE' or 'NOOP'" in result.output


def test_a_hanging_decider_is_stopped(tmp_path: Path) -> None:
    result = _invoke(tmp_path / "out", "--decider", _command("hang"), "--timeout", "0.5")
    assert result.exit_code == 3, result.output
    assert "case 'exact-1': no answer within 0.5 s; the command was stopped" in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--decider", "oracle"], "unknown decider"),
        (["--decider", f"python:{SYSTEMS}:WholeCorpus"], "give a function"),
        (["--judge-cache", "x.jsonl"], "apply to --decider llm only"),
        (["--fixture", "no-such-fixture.json"], "no-such-fixture.json: 1 problem"),
    ],
)
def test_bad_input_is_exit_2(tmp_path: Path, args: list[str], expected: str) -> None:
    result = _invoke(tmp_path / "out", *args)
    assert result.exit_code == 2, result.output
    assert expected in result.output
    assert not (tmp_path / "out").exists()


def test_an_invalid_fixture_is_located(tmp_path: Path) -> None:
    fixture = tmp_path / "cases.json"
    case = {"id": "c", "kind": "k", "incoming": "x", "expected": {"action": "NOOP"}}
    fixture.write_text(json.dumps({"name": "f", "cases": [case]}), encoding="utf-8")
    result = _invoke(tmp_path / "out", "--fixture", str(fixture))
    assert result.exit_code == 2, result.output
    assert (
        "cases[0]" in result.output and "NOOP needs the id of an existing memory" in result.output
    )


def test_the_baseline_decider_fits_the_protocol() -> None:
    decider = resolve_decider("baseline")
    assert isinstance(decider, Decider)
    fixture = bundled_decisions()
    assert decider.decide(fixture.cases) == baseline_decisions(fixture)
