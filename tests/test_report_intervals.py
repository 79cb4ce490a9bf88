"""Bootstrap intervals of a report's means: the fields, their coverage, their rendering."""

from __future__ import annotations

import asyncio
import io
import re

import numpy as np
import pytest
from rich.console import Console

from recallbench.measures import parse_measures
from recallbench.render import render_markdown, render_terminal
from recallbench.report import Report, build_report
from recallbench.report._intervals import IntervalSettings, interval_scale, intervals
from recallbench.report._model import SMALL_N

MEASURES = ("mrr@5", "mrr@10", "ndcg@5", "ndcg@10", "ndcg@20", "recall@5", "recall@10", "P@3")


def _report(measures: tuple[str, ...], settings: IntervalSettings | None = None) -> Report:
    from recallbench.datasets import load_dataset
    from recallbench.runner import run_dataset
    from recallbench.systems import create_system

    dataset = load_dataset("agent-memory-sample")
    run = asyncio.run(run_dataset(dataset, create_system("builtin-lexical"), k=20))
    return build_report(dataset, run, parse_measures(measures), interval_settings=settings)


@pytest.fixture(scope="module")
def report() -> Report:
    return _report((*MEASURES, "gm_map", "cold_start_ratio@10"))


def coverage(draw: np.ndarray, truth: float, method: str = "bca") -> float:
    """Share of the rows of ``draw`` (datasets) whose interval, made as reports make it,
    covers ``truth``."""
    settings = IntervalSettings(resamples=1_000, seed=7, method=method)  # type: ignore[arg-type]
    found = intervals([("mean", row) for row in draw], settings)
    return float(np.mean([i.low is not None and i.low <= truth <= i.high for i in found]))  # type: ignore[operator]


def test_intervals_cover_about_95_percent_at_n_100() -> None:
    """1,000 datasets of 100 draws from Beta(2, 5) (mean 2/7): coverage within three Monte
    Carlo standard errors (3 * sqrt(0.95 * 0.05 / 1000) = 0.021) of 0.95."""
    rng = np.random.default_rng(2024)
    covered = coverage(rng.beta(2, 5, size=(1_000, 100)), 2 / 7)
    assert abs(covered - 0.95) < 0.021, covered
    binary = coverage(rng.binomial(1, 0.3, size=(1_000, 100)).astype(float), 0.3)
    assert abs(binary - 0.95) < 0.021, binary


def test_intervals_under_cover_with_few_queries() -> None:
    """At n = 10 the same procedure covers clearly less than 95%: why groups under 30 are
    flagged (0.95 - 3 Monte Carlo standard errors is 0.929)."""
    rng = np.random.default_rng(2025)
    covered = coverage(rng.beta(2, 5, size=(1_000, 10)), 2 / 7)
    assert covered < 0.929, covered


def test_every_mean_has_its_interval_n_and_flag(report: Report) -> None:
    assert report.bootstrap is not None
    assert (report.bootstrap.method, report.bootstrap.level) == ("bca", 0.95)
    assert report.bootstrap.resamples == 2_000 and report.bootstrap.seed == 0
    assert "Efron" in report.bootstrap.description
    for measure in MEASURES:
        interval = report.intervals[measure]
        mean = report.means[measure]
        assert mean is not None and interval.low is not None and interval.high is not None
        assert interval.low < mean < interval.high
        assert interval.n == report.counts.evaluated and not interval.small
    for key in ("category", "intent"):
        for group in report.breakdowns[key]:
            for measure in MEASURES:
                interval = group.intervals[measure]
                assert interval.n == group.n and interval.small == (group.n < SMALL_N)
                if group.n >= 2 and interval.low is not None and interval.high is not None:
                    assert interval.low <= group.means[measure] <= interval.high  # type: ignore[operator]


def test_a_geometric_mean_and_a_ratio_of_means(report: Report) -> None:
    gm = report.intervals["gm_map"]
    assert gm.low is not None and gm.high is not None
    assert gm.low < report.means["gm_map"] < gm.high  # type: ignore[operator]
    ratio = report.intervals["cold_start_ratio@10"]
    assert ratio.low is None and ratio.reason is not None and "ratio of two means" in ratio.reason
    # no interval, so no under-coverage flag, and no n of its own in the tables
    assert not ratio.small
    assert "| cold_start_ratio@10 | – | " in render_markdown(report)
    (count,) = parse_measures(["num_ret"])
    assert "not a mean" in str(interval_scale(count))


def test_fewer_than_two_queries_have_no_interval() -> None:
    one, none = intervals([("mean", np.array([0.5])), ("mean", np.array([]))], IntervalSettings())
    assert one.low is None and one.n == 1 and one.small and "fewer than 2" in (one.reason or "")
    assert none.low is None and none.n == 0


def test_intervals_are_seeded() -> None:
    values = np.random.default_rng(1).random(50)
    first = intervals([("mean", values)], IntervalSettings(seed=3))
    again = intervals([("mean", values)], IntervalSettings(seed=3))
    other = intervals([("mean", values)], IntervalSettings(seed=4))
    assert first == again and first != other
    # an interval does not depend on the other means computed with it (up to the last bits
    # of a matrix product with more rows)
    together = intervals([("mean", values), ("mean", values[::-1])], IntervalSettings(seed=3))
    assert (together[0].low, together[0].high) == pytest.approx((first[0].low, first[0].high))


def test_percentile_intervals_are_stated() -> None:
    settings = IntervalSettings(method="percentile", resamples=1_000, seed=5)
    assert "percentile" in settings.describe().description
    assert "1,000 resamples" in settings.describe().description


def test_markdown_shows_n_mean_and_interval(report: Report) -> None:
    text = render_markdown(report)
    assert "| measure | n | mean | 95% interval |" in text
    interval = report.intervals["ndcg@10"]
    assert f"| ndcg@10 | {interval.n} | {report.means['ndcg@10']:.4f} | " in text
    assert f"{interval.low:.4f}–{interval.high:.4f}" in text
    assert "bootstrap BCa, 2,000 resamples, seed 0" in text
    assert "cold_start_ratio@10: a ratio of two means" in text
    group = report.breakdowns["category"][0]
    assert f"| {group.name} | {group.n}\\* |" in text  # every sample category is small
    bounds = group.intervals["ndcg@10"]
    assert f"{group.means['ndcg@10']:.3f} ({bounds.low:.3f}–{bounds.high:.3f})" in text


def test_terminal_fits_100_columns_with_eight_measures() -> None:
    report = _report(MEASURES)
    buffer = io.StringIO()
    render_terminal(report, Console(file=buffer, width=100, color_system=None))
    output = buffer.getvalue()
    assert max(len(line) for line in output.splitlines()) <= 100
    interval = report.intervals["mrr@5"]
    assert f"{interval.low:.4f}–{interval.high:.4f}" in output
    assert "95% intervals: bootstrap BCa, 2,000 resamples, seed 0" in " ".join(output.split())
    group = report.breakdowns["category"][0]
    assert re.search(rf"{re.escape(group.name)}\s+{group.n}\*", output)
    low = f"{group.intervals['mrr@5'].low:.2f}".removeprefix("0")
    assert re.search(rf"^\s+{re.escape(low)}–", output, re.MULTILINE)


def test_a_report_without_intervals_still_renders(report: Report) -> None:
    old = report.model_copy(update={"intervals": {}, "bootstrap": None})
    assert "| measure | mean |" in render_markdown(old)
    assert Report.model_validate_json(old.model_dump_json()).bootstrap is None
