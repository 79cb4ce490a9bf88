"""A series of runs (one system on one dataset, oldest first): each run's interval and which
changes between consecutive runs are significant.

Each change is tested on the queries both runs scored: the two-sided paired randomisation
test of `compare` (random sign flips of the per-query differences; Fisher 1935, Smucker et
al. 2007), Holm-corrected over every change of the series (Holm 1979), significant when the
adjusted p is below ``alpha``.

Each run's interval and each change's raw test are computed alone (:func:`run_interval`,
:func:`change_test`), never stacked with other runs' values: a resampled mean is a matrix
product whose last bits depend on how many rows it has, and a mean that ties with the
observed one (values of two decimals do) moves a BCa interval by those bits. So a run's
statistics depend on its own values (and its predecessor's, for the change) alone, and
the store can keep them (``report._run_statistics``): `history` reads a long trend instead
of resampling it, with the same numbers to the bit. Holm's correction is applied when the
series is read (:func:`combine`): it depends on which changes are shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from recallbench.measures._trec_extra import MIN_GEO_MEAN
from recallbench.report._intervals import FloatArray, IntervalSettings, Scale
from recallbench.stats._multiple import adjust
from recallbench.store._store import QueryValueArrays

QueryValues = Mapping[str, Mapping[str, float | None]]
"""Query id -> measure -> value (None: the query is not in the measure's population)."""

TEST_RESAMPLES = 10_000
"""Sign flips per test, as `compare`'s default."""

STATISTICS_VERSION = 1
"""Of how a run's interval and its change's test are computed: part of the key of the
statistics the store keeps (:func:`statistics_key`). Raise it with any change to that
computation that can change a bit of its results, so that stored ones are not read."""


@dataclass(frozen=True, slots=True)
class Change:
    """From one run to the next, on the queries both scored."""

    n: int
    """Queries both runs scored."""
    delta: float | None
    """Mean over those queries of (newer - older); None when n = 0."""
    p: float | None
    """Two-sided randomisation p-value; None when n < 2 or the measure has no interval."""
    p_holm: float | None
    """p after Holm's correction over every change of the series."""
    significant: bool


@dataclass(frozen=True, slots=True)
class RunInterval:
    """One run's interval of one measure: the fields of ``report.Interval``, without
    its model (`history` reads thousands of them from the store)."""

    n: int
    """Queries the mean takes."""
    low: float | None = None
    high: float | None = None
    small: bool = False
    """n below the settings' ``small_n``: the interval tends to be too narrow."""
    reason: str | None = None
    """Why there is no interval."""


@dataclass(frozen=True, slots=True)
class RawChange:
    """A change's test before Holm's correction: what the store keeps of it."""

    n: int
    delta: float | None
    p: float | None


@dataclass(frozen=True, slots=True)
class SeriesStatistics:
    intervals: dict[str, list[RunInterval]]
    """Measure -> each run's interval, oldest first."""
    changes: dict[str, list[Change]]
    """Measure -> the change into each run after the first."""
    alpha: float
    method: str
    """The test in words."""


def statistics_key(scale: Scale | str, settings: IntervalSettings) -> str:
    """What a run's statistics of a measure depend on besides its values, as text: the
    computation's version, the measure's scale (or why it has no interval) and the
    interval's and the test's settings. The store's rows are read by it."""
    return (
        f"v{STATISTICS_VERSION} {settings.method} level={settings.level!r} "
        f"resamples={settings.resamples} seed={settings.seed} small_n={settings.small_n} "
        f"test_resamples={TEST_RESAMPLES} scale={scale}"
    )


def run_interval(
    run: QueryValueArrays, measure: str, scale: Scale | str, settings: IntervalSettings
) -> RunInterval:
    """The interval of one run's mean of ``measure``, from its values alone."""
    return run_intervals([(run, measure, scale)], settings)[0]


def run_intervals(
    items: Sequence[tuple[QueryValueArrays, str, Scale | str]], settings: IntervalSettings
) -> list[RunInterval]:
    """:func:`run_interval` of each (run, measure, scale), each computed alone; those of
    equal size one after the other, so that they reuse the drawn resamples."""
    from recallbench.report._intervals import intervals

    rows = []
    for run, measure, scale in items:
        column = _column(run, measure)
        rows.append((scale, column[~np.isnan(column)]))
    out: list[RunInterval | None] = [None] * len(rows)
    for index in sorted(range(len(rows)), key=lambda i: rows[i][1].size):
        (made,) = intervals([rows[index]], settings)
        out[index] = RunInterval(made.n, made.low, made.high, made.small, made.reason)
    return [interval for interval in out if interval is not None]


def change_test(
    older: QueryValueArrays, newer: QueryValueArrays, measure: str, scale: Scale | str, seed: int
) -> RawChange:
    """The raw test of the change of ``measure`` from ``older`` to ``newer``, alone."""
    return change_tests([(older, newer, measure, scale)], seed)[0]


def change_tests(
    items: Sequence[tuple[QueryValueArrays, QueryValueArrays, str, Scale | str]], seed: int
) -> list[RawChange]:
    """:func:`change_test` of each (older, newer, measure, scale), each computed alone;
    those of equal size one after the other, so that they reuse the drawn sign flips."""
    pairs = [_differences(older, newer, measure, scale) for older, newer, measure, scale in items]
    out: list[RawChange | None] = [None] * len(pairs)
    for index in sorted(range(len(pairs)), key=lambda i: pairs[i].size):
        d, scale = pairs[index], items[index][3]
        out[index] = RawChange(
            n=d.size,
            delta=float(d.mean()) if d.size else None,
            p=_pvalue(d, seed) if d.size >= 2 and scale in ("mean", "geometric") else None,
        )
    return [change for change in out if change is not None]


def combine(
    intervals: dict[str, list[RunInterval]],
    raw: Mapping[str, Sequence[RawChange]],
    seed: int,
    alpha: float = 0.05,
) -> SeriesStatistics:
    """A series' statistics from its runs' intervals and its changes' raw tests (per
    measure, oldest first): the p-values Holm-corrected over every change of the series."""
    flat = [change for measure in intervals for change in raw.get(measure, [])]
    held = adjust([change.p for change in flat], "holm")
    corrected = iter(
        Change(
            n=change.n,
            delta=change.delta,
            p=change.p,
            p_holm=q,
            significant=q is not None and q < alpha,
        )
        for change, q in zip(flat, held, strict=True)
    )
    changes = {m: [next(corrected) for _ in raw.get(m, [])] for m in intervals}
    method = (
        "two-sided paired randomisation test on the queries both runs scored (random sign "
        f"flips, {TEST_RESAMPLES:,} resamples, seed {seed}; exact when 2^n is "
        "smaller; Fisher 1935, Smucker et al. 2007), Holm-corrected over the "
        f"{sum(change.p is not None for change in flat)} changes of the series (Holm 1979), "
        f"significant at {alpha:g}"
    )
    return SeriesStatistics(intervals, changes, alpha, method)


def series_statistics(
    runs: Sequence[QueryValues | QueryValueArrays],
    scales: Mapping[str, Scale | str],
    settings: IntervalSettings | None = None,
    alpha: float = 0.05,
) -> SeriesStatistics:
    """Intervals of every run's mean and the tests of consecutive changes, per measure.

    A run's values come as a mapping (query -> measure -> value) or, faster for long
    series, as the store's arrays (``Store.query_value_arrays``); both give one result.
    Every interval and test is computed alone (see the module's docstring), as the store
    keeps them: ``report._run_statistics`` gives the same numbers from the store."""
    settings = settings or IntervalSettings()
    arrays = [run if isinstance(run, QueryValueArrays) else _arrays(run) for run in runs]
    found = iter(
        run_intervals([(run, m, scale) for m, scale in scales.items() for run in arrays], settings)
    )
    by_measure = {measure: [next(found) for _ in arrays] for measure in scales}
    steps = list(pairwise(arrays))
    tested = iter(
        change_tests(
            [(older, newer, m, scale) for m, scale in scales.items() for older, newer in steps],
            settings.seed,
        )
    )
    raw = {measure: [next(tested) for _ in steps] for measure in scales}
    return combine(by_measure, raw, settings.seed, alpha)


def _arrays(values: QueryValues) -> QueryValueArrays:
    """A run's mapping of values as arrays (None becomes NaN)."""
    names = list(dict.fromkeys(m for per in values.values() for m in per))
    return QueryValueArrays(
        list(values),
        {m: np.array([per.get(m) for per in values.values()], dtype=np.float64) for m in names},
    )


def _column(run: QueryValueArrays, measure: str) -> FloatArray:
    column = run.values.get(measure)
    return np.full(len(run.queries), np.nan) if column is None else column


def _differences(
    older: QueryValueArrays, newer: QueryValueArrays, measure: str, scale: str
) -> FloatArray:
    """Per query both runs scored, in the newer run's order, newer - older (of the logs,
    for a geometric mean)."""
    b = _column(newer, measure)
    a = _column(older, measure)
    if older.queries != newer.queries:  # align the older run's values to the newer's queries
        place = {query: index for index, query in enumerate(older.queries)}
        index = np.array([place.get(query, -1) for query in newer.queries], dtype=np.int64)
        a = np.append(a, np.nan)[index]  # a query the older run lacks (-1) gets NaN
    both = ~np.isnan(a) & ~np.isnan(b)
    data = np.column_stack((a[both], b[both]))
    if scale == "geometric":
        data = np.log(np.maximum(data, MIN_GEO_MEAN))
    return data[:, 1] - data[:, 0]


def _pvalue(differences: FloatArray, seed: int) -> float:
    """The randomisation p-value of one change's differences (the randomisation stream of
    `compare` for the same seed), tested alone."""
    from recallbench.stats._resampling import seeded_randomisation_pvalues

    p, _exact = seeded_randomisation_pvalues(differences.reshape(1, -1), TEST_RESAMPLES, seed)
    return float(p[0])
