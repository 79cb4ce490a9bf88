"""`recallbench history`: each run's interval and which changes were significant."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.report import Report
from recallbench.report._changes import series_statistics
from recallbench.store import open_store

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def _values(ndcg: np.ndarray) -> dict[str, dict[str, float | None]]:
    return {f"q{i}": {"ndcg@10": float(v)} for i, v in enumerate(ndcg)}


def test_a_real_shift_is_significant_and_no_change_is_not() -> None:
    rng = np.random.default_rng(11)
    base = rng.beta(2, 5, 200)
    better = np.minimum(base + 0.2, 1.0)
    runs = [_values(base), _values(base), _values(better)]
    stats = series_statistics(runs, {"ndcg@10": "mean"})
    same, shift = stats.changes["ndcg@10"]
    assert same.p == 1.0 and not same.significant and same.delta == 0.0
    assert shift.significant and shift.p is not None and shift.p_holm is not None
    assert shift.p_holm >= shift.p and shift.n == 200
    assert shift.delta == pytest.approx(float((better - base).mean()))
    first, _, last = stats.intervals["ndcg@10"]
    assert first.low is not None and first.high is not None and last.low is not None
    assert first.low < base.mean() < first.high and last.low > first.high
    assert "randomisation" in stats.method and "Holm" in stats.method


def test_changes_use_only_the_queries_both_runs_scored() -> None:
    older = _values(np.linspace(0, 1, 40))
    newer = {**_values(np.linspace(0, 1, 40)), "extra": {"ndcg@10": 0.0}}
    newer["q0"] = {"ndcg@10": None}
    (change,) = series_statistics([older, newer], {"ndcg@10": "mean"}).changes["ndcg@10"]
    assert change.n == 39 and change.delta == 0.0


def test_a_measure_without_interval_is_not_tested() -> None:
    runs = [_values(np.linspace(0, 1, 40)), _values(np.linspace(0.5, 1, 40))]
    stats = series_statistics(runs, {"ndcg@10": "a total: no interval"})
    assert stats.changes["ndcg@10"][0].p is None
    assert stats.intervals["ndcg@10"][0].reason == "a total: no interval"


@pytest.fixture(scope="module")
def report() -> Report:
    from recallbench.datasets import load_dataset
    from recallbench.measures import parse_measures
    from recallbench.report import build_report
    from recallbench.runner import run_dataset
    from recallbench.systems import create_system

    dataset = load_dataset("agent-memory-sample")
    run = asyncio.run(run_dataset(dataset, create_system("builtin-lexical"), k=20))
    return build_report(dataset, run, parse_measures(["ndcg@10", "mrr@10"]))


def perfect_ndcg(report: Report) -> Report:
    """The report with every scored query's nDCG@10 set to 1."""
    queries = [
        q.model_copy(update={"values": {**q.values, "ndcg@10": 1.0}})
        if q.values["ndcg@10"] is not None
        else q
        for q in report.queries
    ]
    return report.model_copy(update={"queries": queries, "means": {**report.means, "ndcg@10": 1.0}})


def test_history_marks_the_significant_change(tmp_path: Path, report: Report) -> None:
    url = f"sqlite:///{tmp_path / 'history.db'}"
    with open_store(url) as store:
        for hours, made in enumerate((report, report, perfect_ndcg(report))):
            store.record(made.model_copy(update={"created_at": T0 + timedelta(hours=hours)}))
    result = CliRunner().invoke(main, ["history", "--store", url, "--runs"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    ndcg = next(line for line in lines if line.startswith("│ ndcg@10 "))
    cells = [cell.strip() for cell in ndcg.strip("│").split("│")]
    assert cells[5].endswith("*") and cells[6] == "1 of 2"
    mrr = next(line for line in lines if line.startswith("│ mrr@10 "))
    assert [c.strip() for c in mrr.strip("│").split("│")][6] == "0 of 2"
    interval = report.intervals["ndcg@10"]
    assert f"{interval.low:.4f}–{interval.high:.4f}" in result.output  # the first runs
    assert "* significant change: two-sided paired randomisation test" in " ".join(
        result.output.split()
    )
    # the per-run table: each run's n, mean and interval, the change's Holm p
    assert result.output.count(f"{report.intervals['ndcg@10'].n} ") >= 2
    assert "p (Holm)" in result.output
