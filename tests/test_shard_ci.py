"""examples/ci/recallbench-sharded.yml, run here: its matrix jobs and merge job executed
step by step by a small local runner (artifacts are folders), and the merge compared with
the unsharded run byte for byte (the clock held still, as in test_merge)."""

from __future__ import annotations

import fnmatch
import glob
import os
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from recallbench.cli import main
from test_merge import files_of, history

WORKFLOW = Path(__file__).resolve().parents[1] / "examples" / "ci" / "recallbench-sharded.yml"
EXPRESSION = re.compile(r"\$\{\{\s*([\w.]+)\s*\}\}")
SET_UP = {"actions/checkout", "actions/setup-python"}
"""Actions a runner needs and this machine has: the checkout and its Python."""


class LocalRunner:
    """Runs a job's steps in ``workspace``: `recallbench ...` in this process (globs
    expanded as a shell would), `pip install` skipped (recallbench is installed), uploads
    and downloads as copies to and from ``artifacts``."""

    def __init__(self, workspace: Path, artifacts: Path) -> None:
        self.workspace, self.artifacts = workspace, artifacts
        self.commands: list[list[str]] = []

    def value(self, text: str, matrix: dict[str, Any]) -> str:
        def substitute(match: re.Match[str]) -> str:
            name = match[1]
            if name.startswith("matrix.") and name[7:] in matrix:
                return str(matrix[name[7:]])
            if name == "github.workspace":
                return str(self.workspace)
            raise AssertionError(f"the local runner has no value for {name}")

        return EXPRESSION.sub(substitute, text)

    def job(self, job: dict[str, Any], matrix: dict[str, Any] | None = None) -> None:
        matrix = matrix or {}
        env = {key: self.value(str(v), matrix) for key, v in job.get("env", {}).items()}
        for step in job["steps"]:
            if "uses" in step:
                self.action(step["uses"].split("@")[0], step.get("with", {}), matrix)
                continue
            command = self.value(step["run"], matrix).strip()
            if command.startswith("pip install"):
                continue
            self.recallbench(command, env)

    def action(self, name: str, given: dict[str, Any], matrix: dict[str, Any]) -> None:
        if name in SET_UP:
            return
        if name == "actions/upload-artifact":
            source = self.workspace / self.value(given["path"], matrix)
            shutil.copytree(source, self.artifacts / self.value(given["name"], matrix))
        elif name == "actions/download-artifact":
            target = self.workspace / self.value(given["path"], matrix)
            for artifact in sorted(self.artifacts.iterdir()):
                if fnmatch.fnmatch(artifact.name, given["pattern"]):
                    shutil.copytree(artifact, target / artifact.name)
        else:
            raise AssertionError(f"the local runner does not know the action {name}")

    def recallbench(self, command: str, env: dict[str, str]) -> None:
        words = shlex.split(command)
        assert words[0] == "recallbench", f"a step the local runner cannot run: {command}"
        argv = []
        for word in words[1:]:
            expanded = sorted(glob.glob(word, root_dir=self.workspace)) if "*" in word else []
            argv += expanded or [word]
        self.commands.append(argv)
        before = Path.cwd()
        os.chdir(self.workspace)
        try:
            result = CliRunner().invoke(main, argv, env=env)
        finally:
            os.chdir(before)
        assert result.exit_code == 0, f"{command}\n{result.output}"


def test_the_sharded_workflow_merges_into_the_unsharded_run(
    tmp_path: Path, frozen_clock: None
) -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    jobs = workflow["jobs"]
    shards = jobs["shard"]["strategy"]["matrix"]["shard"]
    assert shards == [1, 2, 3, 4]
    assert jobs["merge"]["needs"] == "shard"
    [sharded] = [s["run"] for s in jobs["shard"]["steps"] if "--shard" in s.get("run", "")]
    assert "--shard ${{ matrix.shard }}/4" in sharded

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    runner = LocalRunner(workspace, tmp_path / "artifacts")
    # the unsharded run first, into the folder the merge writes to (the history names it)
    words = shlex.split(runner.value(sharded, {"shard": 1}))
    at = words.index("--shard")
    unsharded = [*words[:at], *words[at + 2 :]]
    unsharded[unsharded.index("--out") + 1] = "out"
    whole_store = f"sqlite:///{tmp_path / 'whole.db'}"
    runner.recallbench(shlex.join(unsharded), {"RECALLBENCH_STORE": whole_store})
    whole = files_of(workspace / "out")
    shutil.move(workspace / "out", tmp_path / "whole")

    for shard in shards:
        runner.job(jobs["shard"], {"shard": shard})
    (workspace / ".recallbench").mkdir()
    runner.job(jobs["merge"])
    assert runner.commands[-1][:2] == ["merge", "out"]
    assert runner.commands[-1][2:] == [f"shards/recallbench-shard-{i}" for i in shards]

    merged = files_of(workspace / "out")
    assert "leaderboard.json" in whole
    assert sorted(merged) == sorted(whole)
    for name, content in whole.items():
        assert merged[name] == content, name
    entries = history(whole_store)
    assert len(entries) == 2
    assert history(f"sqlite:///{workspace / '.recallbench' / 'history.db'}") == entries


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    from test_merge import hold_clock

    hold_clock(monkeypatch.setattr)
