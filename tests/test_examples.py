"""The examples/ folder, run the way docs/systems/*.md tell users to: the golden dataset
validates, and ``recallbench run --dataset examples/golden.json --system ...`` writes a
report for each kind of system: an MCP server recallbench does not ship (agent-logbook
from PyPI, over stdio, installed as `make test`'s ``servers`` target installs it), an
HTTP service the profile starts, a ``python:`` retriever and a ``command:`` retriever. The
CI example's configuration is run and gated as its workflow does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
RECALLBENCH = str(Path(sys.executable).parent / "recallbench")


def recallbench(*args: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [RECALLBENCH, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
        check=False,
    )


def report(out: Path) -> dict[str, float]:
    """The means of report.json, by measure; the run had no failed query."""
    data = json.loads((out / "report.json").read_text())
    assert data["counts"]["failed"] == 0
    return {name: float(mean) for name, mean in data["means"].items()}


def assert_ranked_well(result: subprocess.CompletedProcess[str], out: Path) -> None:
    assert result.returncode == 0, result.stderr
    means = report(out)
    assert set(means) == {"ndcg@5", "mrr@5", "recall@5"}  # the dataset's default measures
    assert means["recall@5"] >= 0.8 and means["mrr@5"] >= 0.5
    assert (out / "report.md").is_file() and (out / "run.json").is_file()


@pytest.fixture(scope="module")
def example_servers() -> Path:
    """RECALLBENCH_HOME with the example MCP server installed from PyPI (as ``make
    servers`` installs it; the same folder and lock as the installed_servers fixture)."""
    import fcntl

    from recallbench.systems._install import install
    from recallbench.systems._profile import load_profile

    home = ROOT / ".cache" / "recallbench-home"
    home.mkdir(parents=True, exist_ok=True)
    os.environ["RECALLBENCH_HOME"] = str(home)
    with (home.parent / "install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        install(load_profile(EXAMPLES / "mcp" / "agent-logbook.toml"))
    return home


def test_the_golden_dataset_validates() -> None:
    result = recallbench("datasets", "validate", "examples/golden.json")
    assert result.returncode == 0, result.stderr
    assert "ok: golden-example 1.0.0: 8 documents, 6 queries" in result.stdout
    data = json.loads((EXAMPLES / "golden.json").read_text())
    grades = {g for judged in data["qrels"].values() for g in judged.values()}
    assert grades == {0, 2, 3} and all(q["category"] and q["intent"] for q in data["queries"])


def test_mcp_example_agent_logbook_over_stdio(example_servers: Path, tmp_path: Path) -> None:
    """Its package declares mcp>=1.2.0 and imports FastMCP from 1.x: the install gave its
    environment mcp 1.x, which the server needs to start at all."""
    venv = example_servers / "servers" / "agent-logbook" / "venv"
    probe = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import mcp.server.fastmcp, importlib.metadata as m;"
         "print(m.version('mcp'))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert probe.stdout.startswith("1.")
    out = tmp_path / "out"
    result = recallbench(
        "run", "--dataset", "examples/golden.json", "--system", "examples/mcp/agent-logbook.toml",
        "--out", str(out), "--no-store",
    )  # fmt: skip
    assert_ranked_well(result, out)


def test_http_example_service_started_by_its_profile(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = recallbench(
        "run", "--dataset", "examples/golden.json", "--system", "examples/http/bm25.toml",
        "--out", str(out), "--no-store",
    )  # fmt: skip
    assert_ranked_well(result, out)
    check = recallbench("systems", "check", "examples/http/bm25.toml")
    assert check.returncode == 0 and "FAIL" not in check.stdout, check.stdout + check.stderr


def test_python_example_named_from_its_folder(tmp_path: Path) -> None:
    """Run from examples/python, the module is importable as it is (no PYTHONPATH)."""
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [RECALLBENCH, "run", "--dataset", "../golden.json",
         "--system", "python:overlap_retriever:make", "--out", str(out), "--no-store"],
        cwd=EXAMPLES / "python", capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert_ranked_well(result, out)


def test_command_example_speaks_json_lines(tmp_path: Path) -> None:
    out = tmp_path / "out"
    command = f"command:{sys.executable} examples/command/overlap_command.py"
    result = recallbench(
        "run", "--dataset", "examples/golden.json", "--system", command,
        "--out", str(out), "--no-store",
    )  # fmt: skip
    assert_ranked_well(result, out)


def test_ci_example_runs_and_gates_as_its_workflow_does(tmp_path: Path) -> None:
    """The workflow's two commands in a copy of a repository holding the example's
    recallbench.toml and golden dataset: the first run on main is accepted (the baseline),
    a pull request's run is then gated --strict against it."""
    workflow = (EXAMPLES / "ci" / "recallbench.yml").read_text()
    assert "recallbench run --out out" in workflow and "recallbench gate out --strict" in workflow
    shutil.copy(EXAMPLES / "ci" / "recallbench.toml", tmp_path)
    shutil.copy(EXAMPLES / "golden.json", tmp_path)
    store = {"RECALLBENCH_STORE": f"sqlite:///{tmp_path / 'history.db'}"}
    gate = ("gate", "out", "--strict", "--junit", "out/gate.xml", "--summary-md", "out/gate.md")
    for extra in (["--accept"], []):  # push to main, then a pull request
        run = recallbench("run", "--out", "out", "-q", cwd=tmp_path, **store)
        assert run.returncode == 0, run.stderr
        gated = recallbench(*gate, *extra, cwd=tmp_path, **store)
        assert gated.returncode == 0, gated.stdout + gated.stderr
    assert (tmp_path / "out" / "gate.xml").is_file()
    assert "gate PASS (strict)" in (tmp_path / "out" / "gate.md").read_text()
