"""What a run is gated against: a committed baseline file, or the rolling mean of the last
accepted runs of the same system on the same dataset in the history store.

A baseline file (``recallbench baseline accept``, `recallbench.baseline/v1`) holds one
accepted run's means and per-query values, so a team can commit it beside the code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from pydantic import Field

from recallbench.core import DatasetRef
from recallbench.core._files import atomic_write_text
from recallbench.core._model import Record
from recallbench.core._validation import read_json, validate
from recallbench.report import Report
from recallbench.report._model import MeasureInfo

if TYPE_CHECKING:
    from recallbench.store import Store, StoredRun

BASELINE_FORMAT: Final = "recallbench.baseline/v1"


class BaselineFile(Record):
    """One accepted run, committed as the reference a gate compares with."""

    format: Literal["recallbench.baseline/v1"] = BASELINE_FORMAT
    accepted_at: datetime
    system: str
    dataset: DatasetRef
    source: str
    """Where the accepted run came from (a report path or a store run id)."""
    measures: list[MeasureInfo]
    means: dict[str, float | None]
    values: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    """Query id -> measure -> value, for the paired test against the baseline."""


@dataclass(frozen=True, slots=True)
class Baseline:
    """Means to compare with, and the per-query values whose mean they are, for the paired
    test."""

    description: str
    dataset_sha256: str
    means: Mapping[str, float | None]
    runs: int
    """How many runs the means average."""
    values: Mapping[str, Mapping[str, float | None]]
    """Query id -> measure -> the baseline's value of that query (a rolling baseline: the
    mean over the accepted runs whose means make the rolling mean)."""
    values_from: str
    """Which runs the per-query values are from."""
    partial: Mapping[str, int] = field(default_factory=dict)
    """Measure -> queries left out of the per-query values because some of the baseline's
    runs scored them and others did not."""


def baseline_from_report(report: Report, source: str) -> BaselineFile:
    return BaselineFile(
        accepted_at=datetime.now(UTC),
        system=report.system.system,
        dataset=report.dataset,
        source=source,
        measures=report.measures,
        means=report.means,
        values={query.id: dict(query.values) for query in report.queries if query.included},
    )


def write_baseline(path: Path, baseline: BaselineFile) -> None:
    atomic_write_text(path, baseline.model_dump_json(indent=2) + "\n")


def read_baseline(path: Path) -> Baseline:
    data = validate(BaselineFile, read_json(path), str(path))
    return Baseline(
        description=f"baseline file {path} ({data.system}, accepted {data.accepted_at:%Y-%m-%d})",
        dataset_sha256=data.dataset.sha256,
        means=data.means,
        runs=1,
        values=data.values,
        values_from=f"{path}",
    )


def rolling_baseline(
    store: Store, report: Report, window: int, exclude: Sequence[int] = ()
) -> Baseline | None:
    """The mean of the last ``window`` accepted runs of the report's system on its dataset
    (same fingerprint), per measure, and the per-query mean of the same runs for the paired
    test (:func:`pooled_values`). None when no run has been accepted yet."""
    accepted: list[StoredRun] = [
        run
        for run in store.runs(
            system=report.system.system, dataset=report.dataset.sha256, accepted=True
        )
        if run.id not in exclude and run.created_at != report.created_at
    ][:window]
    if not accepted:
        return None
    means: dict[str, float | None] = {}
    for measure in report.means:
        found = [v for run in accepted if (v := run.means.get(measure)) is not None]
        means[measure] = sum(found) / len(found) if found else None
    per_run = [(run.means, store.query_values(run.id)) for run in accepted]
    values, partial = pooled_values(per_run, list(report.means))
    ids = ", ".join(f"#{run.id}" for run in accepted)
    only = accepted[0]
    description = (
        f"rolling mean of the last {len(accepted)} accepted runs ({ids}), {store.url}"
        if len(accepted) > 1
        else f"run #{only.id}, the last accepted run (made {only.created_at:%Y-%m-%d %H:%M:%S} UTC"
        + (f", {only.source}" if only.source else "")
        + f"), {store.url}"
    )
    return Baseline(
        description=description,
        dataset_sha256=report.dataset.sha256,
        means=means,
        runs=len(accepted),
        values=values,
        values_from=f"the per-query mean of runs {ids}" if len(accepted) > 1 else f"run {ids}",
        partial=partial,
    )


QueryValues = Mapping[str, Mapping[str, float | None]]
"""Query id -> measure -> value (None: the query is left out of that measure's mean)."""


def pooled_values(
    runs: Sequence[tuple[Mapping[str, float | None], QueryValues]], measures: Sequence[str]
) -> tuple[dict[str, dict[str, float | None]], dict[str, int]]:
    """Per query and measure, the mean over the runs whose mean of that measure enters the
    rolling mean (``runs``: each run's means and per-query values).

    A query has a pooled value only when every one of those runs scored it; then, when the
    runs scored the same queries, the mean of the pooled values is the rolling mean itself.
    A query that some of them scored and others did not gets None (it leaves the paired
    test rather than be compared with a mean of fewer runs); the second result counts such
    queries per measure, so the verdict can say how many were left out.
    """
    pooled: dict[str, dict[str, float | None]] = {}
    partial: dict[str, int] = {}
    for measure in measures:
        scored = [values for means, values in runs if means.get(measure) is not None]
        queries = dict.fromkeys(query for values in scored for query in values)
        for query in queries:
            found = [
                v for values in scored if (v := values.get(query, {}).get(measure)) is not None
            ]
            if found and len(found) < len(scored):
                partial[measure] = partial.get(measure, 0) + 1
            mean = sum(found) / len(found) if found and len(found) == len(scored) else None
            pooled.setdefault(query, {})[measure] = mean
    return pooled, partial


def stored_run(store: Store, report: Report) -> StoredRun | None:
    """The store's record of ``report`` (`recallbench run` records every report)."""
    for run in store.runs(system=report.system.system, dataset=report.dataset.sha256):
        if run.created_at == report.created_at:
            return run
    return None


def baseline_from_store(store: Store, run: StoredRun) -> BaselineFile:
    return BaselineFile(
        accepted_at=datetime.now(UTC),
        system=run.system,
        dataset=DatasetRef(
            name=run.dataset_name, version=run.dataset_version, sha256=run.dataset_sha256
        ),
        source=f"run #{run.id} in {store.url}",
        measures=[
            MeasureInfo(name=name, definition="", higher_is_better=run.higher_is_better[name])
            for name in run.means
        ],
        means=run.means,
        values={
            query: values
            for query, values in store.query_values(run.id).items()
            if any(value is not None for value in values.values())
        },
    )
