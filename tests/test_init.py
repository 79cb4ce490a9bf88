"""`recallbench init`: the starter files are valid (the configuration loads, the dataset
validates, the workflow runs `recallbench run` and `recallbench gate`), a run and a gate
on them pass, existing files are refused (each named, nothing written) unless --force."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.datasets import load_dataset
from recallbench.gates import load_config

FILES = ("recallbench.toml", "golden.json", ".github/workflows/recallbench.yml")


def _invoke(*arguments: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(arguments))
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


def test_the_starter_files_are_valid(tmp_path: Path) -> None:
    code, output = _invoke("init", str(tmp_path))
    assert code == 0, output
    for name in FILES:
        assert f"wrote {tmp_path / name}" in output
    assert "recallbench run --out out" in output and "recallbench gate out" in output
    config = load_config(tmp_path / "recallbench.toml").config
    assert config.datasets == ["golden.json"] and config.gates.measures
    dataset = load_dataset(str(tmp_path / "golden.json"))
    assert len(dataset.documents) >= 5 and set(dataset.qrels) == {q.id for q in dataset.queries}
    workflow = yaml.safe_load((tmp_path / FILES[2]).read_text())
    steps = [step.get("run", "") for step in workflow["jobs"]["recallbench"]["steps"]]
    assert any(s.startswith("recallbench run") for s in steps)
    assert any(s.startswith("recallbench gate") for s in steps)


def test_a_run_and_a_gate_on_the_starter_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _invoke("init")[0] == 0
    code, output = _invoke("run", "--system", "builtin-lexical", "--out", "out", "--quiet")
    assert code == 0, output
    code, output = _invoke("gate", "out")
    assert code == 0, output
    assert "0 fail" in output


def test_existing_files_are_refused_each_named_and_nothing_written(tmp_path: Path) -> None:
    (tmp_path / "recallbench.toml").write_text("# mine\n")
    (tmp_path / "golden.json").write_text("{}\n")
    code, output = _invoke("init", str(tmp_path))
    assert code == 2
    assert str(tmp_path / "recallbench.toml") in output and str(tmp_path / "golden.json") in output
    assert "--force" in output
    assert (tmp_path / "recallbench.toml").read_text() == "# mine\n"
    assert not (tmp_path / ".github").exists()
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


def test_force_replaces_them(tmp_path: Path) -> None:
    (tmp_path / "recallbench.toml").write_text("# mine\n")
    code, output = _invoke("init", "--force", str(tmp_path))
    assert code == 0, output
    assert load_config(tmp_path / "recallbench.toml").config.datasets == ["golden.json"]
    assert all((tmp_path / name).is_file() for name in FILES)


def test_a_folder_that_is_a_file_is_bad_input(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    code, _ = _invoke("init", str(target))
    assert code == 2
