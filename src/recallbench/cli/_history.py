"""`recallbench history`: how each system's measures moved over its recorded runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from recallbench.cli._console import make_console
from recallbench.cli._errors import reports_errors
from recallbench.cli._options import measures_option, store_option, workspace_option

if TYPE_CHECKING:
    from recallbench.report._changes import Change, RunInterval, SeriesStatistics
    from recallbench.store import StoredRun

BARS = "▁▂▃▄▅▆▇█"
FLAT = "▄"
DEFAULT_LIMIT = 20


def sparkline(values: Sequence[float | None]) -> str:
    """One bar per value, oldest first, scaled to the values' own min..max; a flat series
    is all ``▄`` (no change is not "at the bottom"), a missing value a space."""
    present = [v for v in values if v is not None]
    if not present:
        return " " * len(values)
    low, high = min(present), max(present)
    if high == low:
        return "".join(" " if v is None else FLAT for v in values)
    top = len(BARS) - 1
    return "".join(
        " " if v is None else BARS[round((v - low) / (high - low) * top)] for v in values
    )


@dataclass(frozen=True, slots=True)
class Trend:
    """One measure of one series, oldest run first."""

    measure: str
    values: list[float | None]
    higher_is_better: bool

    @property
    def change(self) -> float | None:
        """The newest value against the one before it."""
        if len(self.values) < 2 or self.values[-1] is None or self.values[-2] is None:
            return None
        return self.values[-1] - self.values[-2]


@click.command(
    epilog="""\b
Examples:
  recallbench history
  recallbench history --system builtin-lexical -m ndcg@10 -m recall@10
  recallbench history --dataset agent-memory-sample --limit 50
  recallbench history --dataset 2246266e              # a dataset fingerprint prefix
  recallbench history --store sqlite:///ci/history.db --workspace team-a
Every `recallbench run` and `bench` records its reports (unless --no-store).
"""
)
@click.option("--system", metavar="NAME", help="Only this system.")
@click.option(
    "--dataset", metavar="NAME|SHA256", help="Only this dataset: its name or a fingerprint prefix."
)
@measures_option("Measure to show (repeatable). Default: the measures of each series' newest run.")
@click.option(
    "--limit",
    metavar="N",
    type=click.IntRange(min=1),
    default=DEFAULT_LIMIT,
    show_default=True,
    help="Newest runs shown per series.",
)
@click.option(
    "--runs",
    "show_runs",
    is_flag=True,
    help="Also list every run of each measure: its mean, interval and the test of its change.",
)
@store_option
@workspace_option
@reports_errors
def history(
    system: str | None,
    dataset: str | None,
    measure_names: tuple[str, ...],
    limit: int,
    show_runs: bool,
    store_url: str | None,
    workspace: str,
) -> None:
    """Show the trend of every measure over the recorded runs of each system and dataset.

    A series is one system on one dataset fingerprint (a changed dataset starts a new
    series: its numbers are not comparable). For each measure: the number of runs, first
    and last value with the last run's 95% bootstrap interval (from its stored per-query
    values), the last change, how many changes were significant, accepted runs, and a
    sparkline, oldest to newest, scaled to its min..max (`--runs` lists every value). A
    change is tested on the queries both runs scored (two-sided paired randomisation test,
    Holm-corrected over the series' changes). Runs measured with an LLM judge's labels
    (`recallbench judge`) are listed below the trend with the judge, its labels, its failure
    rate and its cost.
    """
    from recallbench.report._run_statistics import history_scales, stored_series_statistics
    from recallbench.store import open_store

    wanted = _canonical(measure_names)
    with open_store(store_url, workspace) as store:
        runs = store.runs(system=system, dataset=dataset, per_series=limit)
        where = f"{store.url} (workspace {store.workspace!r})"
        series: dict[tuple[str, str], list[StoredRun]] = {}
        for run in runs:  # newest first
            series.setdefault((run.system, run.dataset_sha256), []).append(run)
        oldest = [newest_first[::-1] for newest_first in series.values()]
        # every series' statistics at once: kept in the store, computed where they are not
        found = stored_series_statistics(
            store, oldest, [history_scales(wanted or list(each[-1].means)) for each in oldest]
        )
        shown: list[tuple[list[StoredRun], SeriesStatistics]] = list(
            zip(oldest, found, strict=True)
        )
    console = make_console()
    if not runs:
        filtered = " matching these filters" if system or dataset else ""
        console.print(
            f"No runs recorded{filtered} in {where}. `recallbench run` records every report "
            "(unless --no-store); from Python: `recallbench.store.open_store().record(report)`.",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        return
    for oldest_first, series_stats in shown:
        _render(oldest_first, wanted, series_stats, console)
        _render_judges(oldest_first, console)
        if show_runs:
            _render_runs(oldest_first, series_stats, console)


def _canonical(names: tuple[str, ...]) -> list[str]:
    """Measure names as the store keeps them (``nDCG@10`` -> ``ndcg@10``)."""
    if not names:
        return []
    from recallbench.measures import parse_measures

    return [str(measure) for measure in parse_measures(names)]


def _render(
    runs: list[StoredRun], wanted: list[str], statistics: SeriesStatistics, console: Console
) -> None:
    first, last = runs[0], runs[-1]
    table = Table(
        title=escape(
            f"{last.system} on {last.dataset_name} {last.dataset_version} "
            f"({last.dataset_sha256[:8]})"
        ),
        title_justify="left",
        caption=f"runs #{first.id} ({first.created_at:%Y-%m-%d %H:%M} UTC) to "
        f"#{last.id} ({last.created_at:%Y-%m-%d %H:%M} UTC)",
        caption_justify="left",
    )
    columns = ("measure", "runs", "first", "last", "95% interval", "change", "signif.")
    for name in (*columns, "accepted"):
        table.add_column(
            name,
            justify="left" if name == "measure" else "right",
            overflow="fold" if name == "measure" else "ellipsis",
        )
    table.add_column("trend", no_wrap=True)
    for trend in _trends(runs, wanted or list(last.means)):
        accepted = sum(run.accepted for run in runs if trend.measure in run.means)
        changes = statistics.changes.get(trend.measure, [])
        tested = [change for change in changes if change.p is not None]
        table.add_row(
            escape(trend.measure),
            str(len(trend.values)),
            _number(trend.values[0] if trend.values else None),
            _number(trend.values[-1] if trend.values else None),
            _bounds(statistics.intervals.get(trend.measure, [None])[-1]),
            _change(trend) + ("*" if changes and changes[-1].significant else ""),
            f"{sum(c.significant for c in tested)} of {len(tested)}" if tested else "—",
            str(accepted),
            sparkline(trend.values),
        )
    console.print(table)
    console.print(f"[dim]* significant change: {statistics.method}[/dim]", highlight=False)


def _render_judges(runs: list[StoredRun], console: Console) -> None:
    """The runs measured with a judge's labels: which judge, how many of its labels, how
    often it failed and what it cost; nothing when no run of the series had a judge."""
    judged = [run for run in runs if run.judge_model is not None or run.llm_labels]
    if not judged:
        return
    costs = [run.judge_cost for run in judged if run.judge_cost is not None]
    table = Table(
        title="judged runs",
        title_justify="left",
        caption=f"judge cost ${sum(costs):.4f} over {len(judged)} of {len(runs)} runs"
        if costs
        else None,
        caption_justify="left",
    )
    for name in ("run", "judge", "prompt", "llm labels", "failed", "tokens", "cost USD"):
        left = name in ("run", "judge", "prompt")
        # the judge and prompt names are free text: they wrap, the numbers never do
        table.add_column(name, justify="left" if left else "right", overflow="fold")
    for run in judged:
        table.add_row(
            f"#{run.id} {run.created_at:%Y-%m-%d %H:%M}",
            escape(run.judge_model or "unknown"),
            escape(run.judge_prompt or "—"),
            "—" if run.llm_labels is None else f"{run.llm_labels:,}",
            _failure_rate(run),
            "—" if run.judge_tokens is None else f"{run.judge_tokens:,}",
            "—" if run.judge_cost is None else f"${run.judge_cost:.4f}",
        )
    console.print(table)
    if any(run.judge_unreliable for run in judged):
        console.print(
            "[dim]! unreliable: more of the judge's judgments failed than its limit allows; "
            "those runs' judged numbers are mostly filler[/dim]",
            highlight=False,
        )


def _failure_rate(run: StoredRun) -> str:
    if run.judge_failure_rate is None:
        return "—"
    rate = f"{run.judge_failure_rate:.1%}"
    return f"[red]{rate} ![/red]" if run.judge_unreliable else rate


def _render_runs(runs: list[StoredRun], statistics: SeriesStatistics, console: Console) -> None:
    """Every run of every measure: mean, interval, and the test of the change into it."""
    table = Table(title="runs", title_justify="left")
    for name in ("measure", "run", "n", "mean", "95% interval", "change", "paired", "p (Holm)"):
        table.add_column(name, justify="left" if name in ("measure", "run") else "right")
    for measure, per_run in statistics.intervals.items():
        changes: list[Change | None] = [None, *statistics.changes[measure]]
        for index, (run, interval, change) in enumerate(zip(runs, per_run, changes, strict=True)):
            table.add_row(
                escape(measure) if index == 0 else "",
                f"#{run.id} {run.created_at:%Y-%m-%d %H:%M}",
                f"{interval.n}{'*' if interval.small else ''}",
                _number(run.means.get(measure)),
                _bounds(interval),
                "—" if change is None or change.delta is None else f"{change.delta:+.4f}",
                "—" if change is None else str(change.n),
                _holm(change),
            )
        table.add_section()
    console.print(table)
    console.print(
        "[dim]n: the run's queries in the measure's mean (* fewer than 30: the interval tends "
        "to be too narrow); change: mean over the paired queries (both runs scored them) of "
        "newer - older[/dim]",
        highlight=False,
    )


def _bounds(interval: RunInterval | None) -> str:
    if interval is None or interval.low is None or interval.high is None:
        return "—"
    return f"{interval.low:.4f}–{interval.high:.4f}" + ("*" if interval.small else "")


def _holm(change: Change | None) -> str:
    if change is None or change.p_holm is None:
        return "—"
    return f"{change.p_holm:.4f}" + (" *" if change.significant else "")


def _trends(runs: list[StoredRun], measures: list[str]) -> list[Trend]:
    """Per measure, the values of the runs that measured it (oldest first)."""
    trends = []
    for measure in measures:
        measured = [run for run in runs if measure in run.means]
        if measured:
            trends.append(
                Trend(
                    measure,
                    [run.means[measure] for run in measured],
                    measured[-1].higher_is_better[measure],
                )
            )
        else:
            trends.append(Trend(measure, [], True))
    return trends


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def _change(trend: Trend) -> str:
    change = trend.change
    if change is None:
        return "—"
    if change == 0:
        return "±0.0000"
    better = (change > 0) == trend.higher_is_better
    return f"[{'green' if better else 'red'}]{change:+.4f}[/]"
