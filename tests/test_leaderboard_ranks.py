"""Shared ranks on constructed per-query values whose truth is known, and the leaderboard
files of `recallbench run` with several systems."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.report._ranks import rank_values

QUERIES = [f"q{n:02d}" for n in range(40)]


def _system(values: np.ndarray) -> dict[str, float]:
    return dict(zip(QUERIES, (float(v) for v in values), strict=True))


def _labels(values: dict[str, dict[str, float]], higher_is_better: bool = True) -> list[str]:
    ranking = rank_values("m", values, higher_is_better)
    return [standing.label for standing in ranking.standings]


def _noise(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.0, 0.2, len(QUERIES))


def test_a_clearly_better_system_ranks_alone() -> None:
    values = {
        "best": _system(0.8 + _noise(1)),
        "middle": _system(0.4 + _noise(2)),
        "worst": _system(_noise(3)),
    }
    assert _labels(values) == ["1", "2", "3"]


def test_two_indistinguishable_systems_share_a_rank() -> None:
    base = 0.5 + _noise(4)
    # the same values, each pair of neighbouring queries swapped: same mean, no evidence
    swapped = base.reshape(-1, 2)[:, ::-1].ravel()
    values = {"a": _system(base), "b": _system(swapped), "worse": _system(_noise(5))}
    ranking = rank_values("m", values)
    assert [s.label for s in ranking.standings] == ["1–2", "1–2", "3"]
    tie = next(p for p in ranking.pairs if {p.first, p.second} == {"a", "b"})
    assert tie.better is None and tie.p_adjusted is not None and tie.p_adjusted >= 0.05


def test_identical_systems_all_share_every_rank() -> None:
    same = _system(_noise(6))
    assert _labels({"x": same, "y": dict(same), "z": dict(same)}) == ["1–3"] * 3


def test_lower_is_better_reverses_the_winner() -> None:
    values = {"low": _system(_noise(7)), "high": _system(0.8 + _noise(8))}
    assert _labels(values, higher_is_better=False) == ["1", "2"]
    assert _labels(values, higher_is_better=True) == ["2", "1"]


def test_only_queries_both_scored_are_paired() -> None:
    best = _system(0.8 + _noise(9))
    # one query scored by the second system only: it is left out of the pair
    other = {**_system(_noise(10)), "extra": 1.0}
    ranking = rank_values("m", {"best": best, "other": other})
    assert ranking.pairs[0].n == len(QUERIES)


def test_too_few_paired_queries_decide_nothing() -> None:
    ranking = rank_values("m", {"a": {"q": 1.0}, "b": {"q": 0.0}})
    assert [s.label for s in ranking.standings] == ["1–2", "1–2"]
    assert ranking.pairs[0].p is None


def test_run_with_several_systems_writes_ranks_and_intervals(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--no-store",
            "--system",
            "builtin-lexical",
            "--system",
            "builtin-hybrid",
            "-m",
            "mrr@10",
            "-m",
            "recall@10",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["format"] == "recallbench.leaderboard/v2"
    assert board["ranking"]["measure"] == "mrr@10"
    assert board["ranking"]["correction"] == "holm"
    [pair] = board["ranking"]["pairs"]
    for system in board["systems"]:
        interval = system["intervals"]["mrr@10"]
        assert interval["low"] <= system["means"]["mrr@10"] <= interval["high"]
        decided = pair["better"] is not None
        expected = ("1" if pair["better"] == system["system"] else "2") if decided else "1–2"
        assert system["rank"]["label"] == expected
    markdown = (out / "leaderboard.md").read_text()
    assert "| rank | system | mrr@10 | 95% CI |" in markdown
    assert "Holm-adjusted over the 1 pair" in markdown
    assert "95% CI" in result.output
