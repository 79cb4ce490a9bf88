"""`recallbench compare` at 80 columns (issue 32, item 6.3): a table too wide for the
terminal is stacked (one block per measure and system, one narrow table per measure of a
breakdown) instead of cut into ``0.…`` cells; a wide terminal keeps the tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.render._comparison_stacked import filled


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    systems = ["--system", "builtin-lexical", "--system", "builtin-hybrid"]
    result = CliRunner().invoke(main, ["run", *systems, "--out", str(out), "--no-store"])
    assert result.exit_code == 0, result.output
    return out


def _compare(runs: Path, columns: int) -> str:
    args = ["compare", str(runs / "builtin-lexical"), str(runs / "builtin-hybrid")]
    result = CliRunner(env={"COLUMNS": str(columns)}).invoke(main, [*args, "--resamples", "1000"])
    assert result.exit_code == 0, result.output
    return result.output


def test_at_80_columns_every_number_is_whole(runs: Path) -> None:
    out = _compare(runs, 80)
    lines = out.splitlines()
    assert max(map(len, lines)) <= 80
    assert "…" not in out  # no cell cut
    assert "ndcg@10: better" in lines
    block = lines[lines.index("ndcg@10: better") + 1]
    assert block.startswith("  n 111 · baseline 0.521 · system 0.603 · Δ +0.082")
    assert "chain_completeness@10: no significant difference" in lines
    assert any(line.strip().startswith("W/T/L") or " W/T/L " in line for line in lines)
    assert "by category (first 4 measures): Δ ndcg@10" in out  # one table per measure
    assert "rank differences" in lines and any("top-1 changed 56" in line for line in lines)


def test_a_wide_terminal_keeps_the_tables(runs: Path) -> None:
    out = _compare(runs, 200)
    assert "…" not in out
    assert "ndcg@10: better" not in out.splitlines()
    header = next(line for line in out.splitlines() if line.startswith("measure "))
    assert header.split()[:4] == ["measure", "n", "baseline", "system"]
    assert any(line.startswith("chain_completeness@10 ") for line in out.splitlines())


def test_pairs_fill_lines_no_wider_than_asked() -> None:
    pairs = [("n", "111"), ("baseline", "0.521"), ("system", "0.603"), ("Δ", "+0.082 **")]
    lines = filled(pairs, 30)
    assert lines == ["  n 111 · baseline 0.521", "  system 0.603 · Δ +0.082 **"]
    assert all(len(line) <= 30 for line in lines)
