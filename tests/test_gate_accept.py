"""The accept loop (issue 32, item 6.4): run → gate --accept → run → gate. The accepted
run is the next gate's baseline, and the verdict says which run that is; the first
``gate --accept`` starts the baseline even under ``--strict``."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from recallbench.cli import main


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner(env={"COLUMNS": "400"}).invoke(main, list(args))
    return result.exit_code, " ".join(result.output.split())


def _run(out: Path, store: str) -> Path:
    code, text = _invoke("run", "--system", "builtin-lexical", "--out", str(out), "--store", store)
    assert code == 0, text
    return out / "report.json"


@pytest.mark.parametrize("strict", [False, True])
def test_run_accept_run_gate_uses_the_accepted_run(tmp_path: Path, strict: bool) -> None:
    store = f"sqlite:///{tmp_path / 'history.db'}"
    flags = ["--store", store, *(["--strict"] if strict else [])]
    first = _run(tmp_path / "first", store)
    code, out = _invoke("gate", str(first), "--accept", *flags)
    assert code == 0, out
    assert "this run the first baseline" in out and "accept one" not in out
    assert "accepted run #1" in out and "not accepted" not in out
    second = _run(tmp_path / "second", store)
    code, out = _invoke("gate", str(second), *flags)
    assert code == 0, out
    assert "no accepted run" not in out and "accept one" not in out
    assert "baseline: run #1, the last accepted run (made " in out
    assert "ndcg@10 drop <= 15%" in out  # the regression checks ran against it


def test_a_failed_gate_with_accept_says_it_did_not_accept(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'history.db'}"
    report = _run(tmp_path / "o", store)
    config = tmp_path / "recallbench.toml"
    config.write_text('[gates.measures."mrr@10"]\nmin = 0.99\n')
    code, out = _invoke("gate", str(report), "--accept", "--store", store, "--config", str(config))
    assert code == 1, out
    assert "not accepted: the gate failed" in out and "accepted run #" not in out
    code, out = _invoke("gate", str(report), "--store", store)
    assert "no accepted run of builtin-lexical" in out
    assert "accept one with `recallbench gate REPORT --accept`" in out
