"""The statistics of a trend read from the store where it keeps them, computed (and kept)
where it does not.

A run's interval of a measure and the raw test of its change from the run before it
depend on those runs' values alone (``report._changes`` computes each alone), so the store
keeps them (``eval_run_statistics``, keyed by :func:`~recallbench.report._changes.
statistics_key`): they are written when a run is recorded (:func:`record_run`) and when a
trend reads a run without them (:func:`stored_series_statistics`), and read back to the
bit. Holm's correction is applied at read time over the shown changes. A store that cannot
be written (read-only) still gives every statistic: only keeping it fails, silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING

from sqlalchemy.exc import SQLAlchemyError

from recallbench.report._changes import (
    RawChange,
    RunInterval,
    SeriesStatistics,
    change_tests,
    combine,
    run_intervals,
    statistics_key,
)
from recallbench.report._intervals import IntervalSettings, Scale
from recallbench.store._run_statistics_store import RunStatistics

if TYPE_CHECKING:
    from recallbench.report import Report
    from recallbench.store import Store, StoredRun
    from recallbench.store._store import QueryValueArrays

UNKNOWN_MEASURE = "an unknown measure: no interval"


def history_scales(names: Sequence[str]) -> dict[str, Scale | str]:
    """How each measure's mean is resampled (``interval_scale``), by its name; a measure
    of a plugin no longer installed has no interval."""
    from recallbench.core._errors import RecallbenchError
    from recallbench.measures import parse_measures
    from recallbench.report._intervals import interval_scale

    scales: dict[str, Scale | str] = {}
    for name in names:
        try:
            scales[name] = interval_scale(parse_measures([name])[0])
        except RecallbenchError:
            scales[name] = UNKNOWN_MEASURE
    return scales


def record_run(
    store: Store, report: Report, source: str | None = None, accepted: bool = False
) -> StoredRun:
    """``store.record(report)``, then the new run's statistics kept (with the default
    settings, of its measures, its change tested from the run before it in its series), so
    that `history` reads rather than computes them. Keeping them never fails the record."""
    stored = store.record(report, source=source, accepted=accepted)
    series = [
        run
        for run in store.runs(system=stored.system, dataset=stored.dataset_sha256)
        if run.dataset_sha256 == stored.dataset_sha256
        and (run.created_at, run.id) <= (stored.created_at, stored.id)
    ][:2][::-1]  # the run before it and the run
    stored_series_statistics(store, [series], [history_scales(list(stored.means))])
    return stored


def stored_series_statistics(
    store: Store,
    series: Sequence[Sequence[StoredRun]],
    scales: Sequence[Mapping[str, Scale | str]],
    settings: IntervalSettings | None = None,
    alpha: float = 0.05,
) -> list[SeriesStatistics]:
    """:func:`~recallbench.report._changes.series_statistics` of each series (its runs
    oldest first, with the scales of its measures), the same numbers, read from the store
    where it keeps them; the missing ones computed from the runs' values and kept."""
    settings = settings or IntervalSettings()
    keys = [{m: statistics_key(scale, settings) for m, scale in s.items()} for s in scales]
    runs = {run.id: run for runs in series for run in runs}
    found = {
        (row.run_id, row.measure, row.settings): row
        for row in store.run_statistics(list(runs), {k for ks in keys for k in ks.values()})
    }
    wanted_intervals: dict[tuple[int, str, str], Scale | str] = {}
    wanted_changes: dict[tuple[int, str, str], tuple[int, Scale | str]] = {}
    for runs_of, scales_of, keys_of in zip(series, scales, keys, strict=True):
        for measure, scale in scales_of.items():
            key = keys_of[measure]
            for index, run in enumerate(runs_of):
                row = found.get((run.id, measure, key))
                if row is None:
                    wanted_intervals[run.id, measure, key] = scale
                if index and (row is None or row.previous_run_id != runs_of[index - 1].id):
                    wanted_changes[run.id, measure, key] = (runs_of[index - 1].id, scale)
    if wanted_intervals or wanted_changes:
        found.update(_compute(store, runs, found, wanted_intervals, wanted_changes, settings))
    out = []
    for runs_of, keys_of in zip(series, keys, strict=True):
        intervals: dict[str, list[RunInterval]] = {}
        raw: dict[str, list[RawChange]] = {}
        for measure, key in keys_of.items():
            rows = [found[run.id, measure, key] for run in runs_of]
            intervals[measure] = [_interval(row) for row in rows]
            raw[measure] = [_change(row) for row in rows[1:]]
        out.append(combine(intervals, raw, settings.seed, alpha))
    return out


def _compute(
    store: Store,
    runs: dict[int, StoredRun],
    found: dict[tuple[int, str, str], RunStatistics],
    wanted_intervals: dict[tuple[int, str, str], Scale | str],
    wanted_changes: dict[tuple[int, str, str], tuple[int, Scale | str]],
    settings: IntervalSettings,
) -> dict[tuple[int, str, str], RunStatistics]:
    """The wanted statistics computed from the runs' values, kept when the store allows."""
    needed = {run_id for run_id, _, _ in wanted_intervals} | {
        run_id for run_id, _, _ in wanted_changes
    }
    needed |= {previous for previous, _ in wanted_changes.values()}
    ordered = [runs[run_id] for run_id in sorted(needed)]
    arrays: dict[int, QueryValueArrays] = dict(
        zip(sorted(needed), store.query_value_arrays(ordered), strict=True)
    )
    computed = run_intervals(
        [
            (arrays[run_id], measure, scale)
            for (run_id, measure, _), scale in wanted_intervals.items()
        ],
        settings,
    )
    interval_of = dict(zip(wanted_intervals, computed, strict=True))
    tested = change_tests(
        [
            (arrays[previous], arrays[run_id], measure, scale)
            for (run_id, measure, _), (previous, scale) in wanted_changes.items()
        ],
        settings.seed,
    )
    change_of = dict(zip(wanted_changes, tested, strict=True))
    rows: dict[tuple[int, str, str], RunStatistics] = {}
    for key in {**interval_of, **change_of}:
        run_id, measure, settings_key = key
        interval = interval_of.get(key)
        old = found.get(key)
        if interval is None:  # the stored interval, a new change
            assert old is not None
            interval = _interval(old)
        change = change_of.get(key)  # None: the run is the first shown of its series
        previous = None if change is None else wanted_changes[key][0]
        rows[key] = RunStatistics(
            run_id=run_id,
            measure=measure,
            settings=settings_key,
            n=interval.n,
            low=interval.low,
            high=interval.high,
            small=interval.small,
            reason=interval.reason,
            previous_run_id=previous,
            change_n=None if change is None else change.n,
            change_delta=None if change is None else change.delta,
            change_p=None if change is None else change.p,
        )
    with suppress(SQLAlchemyError):  # a read-only store, a lock held too long: shown anyway
        store.save_run_statistics(list(rows.values()))
    return rows


def _interval(row: RunStatistics) -> RunInterval:
    return RunInterval(row.n, row.low, row.high, row.small, row.reason)


def _change(row: RunStatistics) -> RawChange:
    if row.change_n is None:
        raise ValueError(f"run {row.run_id} has no stored change of {row.measure}")
    return RawChange(n=row.change_n, delta=row.change_delta, p=row.change_p)
