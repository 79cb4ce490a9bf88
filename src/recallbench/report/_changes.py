"""A series of runs (one system on one dataset, oldest first): each run's interval and which
changes between consecutive runs are significant.

Each change is tested on the queries both runs scored: the two-sided paired randomisation
test of `compare` (random sign flips of the per-query differences; Fisher 1935, Smucker et
al. 2007), Holm-corrected over every change of the series (Holm 1979), significant when the
adjusted p is below ``alpha``. Changes with the same number of paired queries share the sign
flips, so twenty runs of 10,000 queries take one vectorised pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from recallbench.measures._trec_extra import MIN_GEO_MEAN
from recallbench.report._intervals import FloatArray, IntervalSettings, Scale, intervals
from recallbench.report._model import Interval
from recallbench.stats._multiple import adjust
from recallbench.stats._resampling import seeded_randomisation_pvalues
from recallbench.store._store import QueryValueArrays

QueryValues = Mapping[str, Mapping[str, float | None]]
"""Query id -> measure -> value (None: the query is not in the measure's population)."""

TEST_RESAMPLES = 10_000
"""Sign flips per test, as `compare`'s default."""


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
class SeriesStatistics:
    intervals: dict[str, list[Interval]]
    """Measure -> each run's interval, oldest first."""
    changes: dict[str, list[Change]]
    """Measure -> the change into each run after the first."""
    alpha: float
    method: str
    """The test in words."""


def series_statistics(
    runs: Sequence[QueryValues | QueryValueArrays],
    scales: Mapping[str, Scale | str],
    settings: IntervalSettings | None = None,
    alpha: float = 0.05,
) -> SeriesStatistics:
    """Intervals of every run's mean and the tests of consecutive changes, per measure.

    A run's values come as a mapping (query -> measure -> value) or, faster for long
    series, as the store's arrays (``Store.query_value_arrays``); both give one result.
    Series are resampled one at a time, not stacked together: a resampled mean is a matrix
    product whose last bits depend on how many rows it has, and a mean that ties with the
    observed one (values of two decimals do) moves a BCa interval by those bits."""
    settings = settings or IntervalSettings()
    arrays = [run if isinstance(run, QueryValueArrays) else _arrays(run) for run in runs]
    rows: list[tuple[Scale | str, FloatArray]] = []
    for measure, scale in scales.items():
        for run in arrays:
            column = _column(run, measure)
            rows.append((scale, column[~np.isnan(column)]))
    found = iter(intervals(rows, settings))
    by_measure = {measure: [next(found) for _ in runs] for measure in scales}
    pairs: list[FloatArray] = []
    for measure, scale in scales.items():
        for older, newer in pairwise(arrays):
            pairs.append(_differences(older, newer, measure, scale))
    raw = _pvalues(pairs, [scales[m] for m in scales for _ in runs[1:]], settings.seed)
    held = adjust(raw, "holm")
    flat = [
        Change(
            n=d.size,
            delta=float(d.mean()) if d.size else None,
            p=p,
            p_holm=q,
            significant=q is not None and q < alpha,
        )
        for d, p, q in zip(pairs, raw, held, strict=True)
    ]
    steps = max(len(runs) - 1, 0)
    changes = {m: flat[i * steps : (i + 1) * steps] for i, m in enumerate(scales)}
    method = (
        "two-sided paired randomisation test on the queries both runs scored (random sign "
        f"flips, {TEST_RESAMPLES:,} resamples, seed {settings.seed}; exact when 2^n is "
        "smaller; Fisher 1935, Smucker et al. 2007), Holm-corrected over the "
        f"{sum(p is not None for p in raw)} changes of the series (Holm 1979), "
        f"significant at {alpha:g}"
    )
    return SeriesStatistics(by_measure, changes, alpha, method)


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


def _pvalues(pairs: Sequence[FloatArray], scales: Sequence[str], seed: int) -> list[float | None]:
    """Randomisation p-values, changes with the same n tested together."""
    out: list[float | None] = [None] * len(pairs)
    by_length: dict[int, list[int]] = {}
    for index, (d, scale) in enumerate(zip(pairs, scales, strict=True)):
        if d.size >= 2 and scale in ("mean", "geometric"):
            by_length.setdefault(d.size, []).append(index)
    for n, indices in sorted(by_length.items()):
        differences = np.array([pairs[i] for i in indices]).reshape(-1, n)
        # the randomisation stream of `compare` for the same seed
        p, _exact = seeded_randomisation_pvalues(differences, TEST_RESAMPLES, seed)
        for row, index in enumerate(indices):
            out[index] = float(p[row])
    return out
