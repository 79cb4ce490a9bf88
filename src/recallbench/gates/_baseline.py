"""What a run is gated against: a committed baseline file, or the rolling mean of the last
accepted runs of the same system on the same dataset in the history store.

A baseline file (``recallbench baseline accept``, `recallbench.baseline/v1`) holds one
accepted run's means and per-query values, so a team can commit it beside the code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
    """Means to compare with, and the per-query values of one run for the paired test."""

    description: str
    dataset_sha256: str
    means: Mapping[str, float | None]
    runs: int
    """How many runs the means average."""
    values: Mapping[str, Mapping[str, float | None]]
    values_from: str
    """Which run the per-query values are from."""


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
    (same fingerprint), per measure; the newest of them gives the per-query values. None
    when no run has been accepted yet."""
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
        values = [v for run in accepted if (v := run.means.get(measure)) is not None]
        means[measure] = sum(values) / len(values) if values else None
    newest = accepted[0]
    ids = ", ".join(f"#{run.id}" for run in accepted)
    return Baseline(
        description=f"rolling mean of the last {len(accepted)} accepted runs ({ids}), {store.url}",
        dataset_sha256=report.dataset.sha256,
        means=means,
        runs=len(accepted),
        values=store.query_values(newest.id),
        values_from=f"run #{newest.id} ({newest.created_at:%Y-%m-%d %H:%M})",
    )


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
