"""`recallbench history`: how each system's measures moved over its recorded runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from recallbench.cli._errors import reports_errors
from recallbench.cli._options import measures_option, store_option, workspace_option
from recallbench.cli._run import make_console

if TYPE_CHECKING:
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
@store_option
@workspace_option
@reports_errors
def history(
    system: str | None,
    dataset: str | None,
    measure_names: tuple[str, ...],
    limit: int,
    store_url: str | None,
    workspace: str,
) -> None:
    """Show the trend of every measure over the recorded runs of each system and dataset.

    A series is one system on one dataset fingerprint (a changed dataset starts a new
    series: its numbers are not comparable). For each measure: the number of runs, first
    and last value, the last change, min, max, accepted runs, and a sparkline, oldest to
    newest.
    """
    from recallbench.store import open_store

    wanted = _canonical(measure_names)
    with open_store(store_url, workspace) as store:
        runs = store.runs(system=system, dataset=dataset)
        where = f"{store.url} (workspace {store.workspace!r})"
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
    series: dict[tuple[str, str], list[StoredRun]] = {}
    for run in runs:  # newest first
        series.setdefault((run.system, run.dataset_sha256), []).append(run)
    for newest_first in series.values():
        _render(newest_first[:limit][::-1], wanted, console)


def _canonical(names: tuple[str, ...]) -> list[str]:
    """Measure names as the store keeps them (``nDCG@10`` -> ``ndcg@10``)."""
    if not names:
        return []
    from recallbench.measures import parse_measures

    return [str(measure) for measure in parse_measures(names)]


def _render(runs: list[StoredRun], wanted: list[str], console: Console) -> None:
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
    for name in ("measure", "runs", "first", "last", "change", "min", "max", "accepted"):
        table.add_column(name, justify="left" if name == "measure" else "right")
    table.add_column("trend", no_wrap=True)
    for trend in _trends(runs, wanted or list(last.means)):
        present = [v for v in trend.values if v is not None]
        accepted = sum(run.accepted for run in runs if trend.measure in run.means)
        table.add_row(
            escape(trend.measure),
            str(len(trend.values)),
            _number(trend.values[0] if trend.values else None),
            _number(trend.values[-1] if trend.values else None),
            _change(trend),
            _number(min(present) if present else None),
            _number(max(present) if present else None),
            str(accepted),
            sparkline(trend.values),
        )
    console.print(table)


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
