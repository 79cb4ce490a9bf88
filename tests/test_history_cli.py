"""`recallbench history` on a real SQLite store holding reports of real runs."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from recallbench.cli import main
from recallbench.cli._history import sparkline
from recallbench.report import Report
from recallbench.store import open_store

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def reports() -> dict[str, Report]:
    """The bundled dataset through two builtin systems, for real."""
    from recallbench.datasets import load_dataset
    from recallbench.measures import DEFAULT_MEASURES, parse_measures
    from recallbench.report import build_report
    from recallbench.runner import run_dataset
    from recallbench.systems import create_system

    dataset = load_dataset("agent-memory-sample")
    measures = parse_measures(DEFAULT_MEASURES)
    return {
        name: build_report(
            dataset, asyncio.run(run_dataset(dataset, create_system(name), k=20)), measures
        )
        for name in ("builtin-lexical", "builtin-hybrid")
    }


def shifted(report: Report, hours: int, ndcg10: float | None = None) -> Report:
    """The report made ``hours`` after T0, with nDCG@10's mean changed when given."""
    means = dict(report.means)
    if ndcg10 is not None:
        means["ndcg@10"] = ndcg10
    return report.model_copy(update={"created_at": T0 + timedelta(hours=hours), "means": means})


@pytest.fixture
def store_url(tmp_path: Path, reports: dict[str, Report]) -> str:
    """Lexical: four runs, nDCG@10 0.50 0.60 0.55 0.70 (second accepted); hybrid: two."""
    url = f"sqlite:///{tmp_path / 'history.db'}"
    lexical, hybrid = reports["builtin-lexical"], reports["builtin-hybrid"]
    with open_store(url) as store:
        for hours, value in enumerate((0.50, 0.60, 0.55, 0.70)):
            run = store.record(shifted(lexical, hours, value))
            if hours == 1:
                store.accept(run.id)
        store.record(shifted(hybrid, 0))
        store.record(shifted(hybrid, 5))
    return url


def history(*args: str) -> Result:
    result = CliRunner().invoke(main, ["history", *args], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    return result


def row(output: str, measure: str, title: str) -> list[str]:
    """The cells of ``measure``'s row in the table titled ``title``."""
    section = output[output.index(title) :]
    line = next(line for line in section.splitlines() if f"│ {measure} " in line)
    return [cell.strip() for cell in line.strip("│").split("│")]


def test_sparkline_scales_to_the_series() -> None:
    assert sparkline([0.5, 0.6, 0.55, 0.7]) == "▁▅▃█"
    assert sparkline([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]) == "▁▂▃▄▅▆▇█"
    assert sparkline([0.3, 0.3, 0.3]) == "▄▄▄"
    assert sparkline([0.1, None, 0.9]) == "▁ █"
    assert sparkline([None, None]) == "  "
    assert sparkline([]) == ""


def test_history_shows_every_series_and_measure(store_url: str) -> None:
    output = history("--store", store_url).output
    lexical = "builtin-lexical on agent-memory-sample"
    hybrid = "builtin-hybrid on agent-memory-sample"
    assert lexical in output and hybrid in output
    assert output.index(hybrid) < output.index(lexical)  # newest series first
    cells = row(output, "ndcg@10", lexical)
    # the stored means were edited, the per-query values were not: no change is significant
    assert cells[:4] + cells[5:] == [
        "ndcg@10",
        "4",
        "0.5000",
        "0.7000",
        "+0.1500",
        "0 of 3",
        "1",
        "▁▅▃█",
    ]
    assert row(output, "mrr@5", lexical)[-1] == "▄▄▄▄"  # flat: the same report four times
    assert row(output, "ndcg@10", hybrid)[1] == "2"
    assert row(output, "ndcg@10", hybrid)[5] == "±0.0000"
    assert row(output, "P@3", lexical)[0] == "P@3"  # every measure of the newest run
    assert re.search(r"runs #1 \(2025-03-01 12:00 UTC\) to #4 \(2025-03-01 15:00 UTC\)", output)


def test_history_filters_and_limits(store_url: str) -> None:
    output = history("--store", store_url, "--system", "builtin-lexical", "-m", "NDCG@10").output
    assert "builtin-hybrid" not in output
    assert "│ ndcg@10 " in output and "mrr@5" not in output
    limited = history("--store", store_url, "--system", "builtin-lexical", "--limit", "2").output
    cells = row(limited, "ndcg@10", "builtin-lexical")
    assert cells[1:4] == ["2", "0.5500", "0.7000"] and cells[-1] == "▁█"
    assert cells[5] == "+0.1500" and cells[7] == "0"  # the accepted run is older than the two shown
    from recallbench.datasets import load_dataset

    prefix = load_dataset("agent-memory-sample").sha256[:8]
    by_sha = history("--store", store_url, "--dataset", prefix).output
    assert "builtin-lexical" in by_sha and "builtin-hybrid" in by_sha
    unmeasured = history("--store", store_url, "-m", "map").output
    assert row(unmeasured, "map", "builtin-lexical")[1:3] == ["0", "—"]


def test_history_of_an_empty_store_says_how_to_record(tmp_path: Path, store_url: str) -> None:
    empty = f"sqlite:///{tmp_path / 'empty.db'}"
    output = history("--store", empty).output
    assert "No runs recorded in" in output and "empty.db" in output
    assert "`recallbench run` records every report" in output
    nothing = history("--store", store_url, "--system", "nobody").output
    assert "No runs recorded matching these filters" in nothing
    other = history("--store", store_url, "--workspace", "team-b").output
    assert "workspace 'team-b'" in other


def test_history_reads_the_default_store_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    monkeypatch.setenv("RECALLBENCH_STORE", store_url)
    assert "builtin-lexical on agent-memory-sample" in history().output


def test_history_with_a_bad_store_exits_2_without_traceback() -> None:
    result = CliRunner().invoke(main, ["history", "--store", "nosuchdb://x"])
    assert result.exit_code == 2
    assert "unknown database kind 'nosuchdb'" in result.output
    assert "Traceback" not in result.output
