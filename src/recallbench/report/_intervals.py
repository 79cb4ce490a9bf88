"""Bootstrap confidence intervals of a report's means, with the resampling code of `compare`.

A mean over n queries gets the bootstrap interval of :mod:`recallbench.stats`: resamples of
the n queries drawn with replacement, the same draws for every measure over those queries
(a query's values stay together), vectorised as a matrix product of the values with the
resampling counts. Means over the same number of queries are resampled together, from a
generator seeded afresh for each number, so an interval does not depend on which other
means the report holds.

Efron, B. (1987). Better bootstrap confidence intervals. JASA 82(397), 171-185;
Efron, B. & Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 13-14.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

import numpy as np
from numpy.typing import NDArray

from recallbench.measures import Measure
from recallbench.measures._trec_extra import MIN_GEO_MEAN
from recallbench.measures.bpref import GeometricBPref
from recallbench.measures.gm_map import GeometricMAP
from recallbench.stats._resampling import (
    INTERVAL_NAMES,
    IntervalMethod,
    check_resamples,
)
from recallbench.stats._resampling import mean_intervals as stats_mean_intervals

if TYPE_CHECKING:  # the report's models (pydantic) are imported where they are made:
    # `history` reads intervals kept in the store without them
    from recallbench.report._model import Bootstrap, Interval

FloatArray = NDArray[np.float64]
Scale = Literal["mean", "geometric"]
"""How a measure aggregates its per-query values: the arithmetic or the geometric mean."""

RESAMPLES = 2_000
"""Default resamples. Efron & Tibshirani (1993, sec. 14.2 and 19.3) find 1,000-2,000 enough
for the endpoints of a percentile or BCa interval; more only slows a 10,000-query report."""

NO_QUERIES_REASON = "fewer than 2 queries: no spread to resample"

SMALL_N: Final = 30
"""``report._model.SMALL_N`` (a test holds them equal), the default of
:attr:`IntervalSettings.small_n`, here so that the settings need not import the models."""


@dataclass(frozen=True, slots=True)
class IntervalSettings:
    """How a report's intervals are made (the report states them in ``Report.bootstrap``)."""

    resamples: int = RESAMPLES
    seed: int = 0
    level: float = 0.95
    method: IntervalMethod = "bca"
    small_n: int = SMALL_N

    def __post_init__(self) -> None:
        check_resamples(self.resamples, self.level)

    def describe(self) -> Bootstrap:
        from recallbench.report._model import Bootstrap

        return Bootstrap(
            method=self.method,
            level=self.level,
            resamples=self.resamples,
            seed=self.seed,
            small_n=self.small_n,
            description=(
                f"{self.level:.0%} bootstrap {INTERVAL_NAMES[self.method]} interval of each "
                f"mean: {self.resamples:,} resamples of its queries with replacement, "
                f"seed {self.seed}, shared by all measures over the same queries (Efron 1987; "
                "Efron & Tibshirani 1993). A geometric mean's interval is that of the mean "
                "log, transformed back. With fewer than "
                f"{self.small_n} queries intervals tend to be too narrow (they cover the true "
                "mean less often than stated): such groups are flagged."
            ),
        )


def interval_scale(measure: Measure, own_aggregate: bool = False) -> Scale | str:
    """How ``measure``'s aggregate is resampled, or why it has no interval.

    ``own_aggregate``: the evaluation computed the aggregate itself, not from per-query
    values (a ratio of two means such as cold_start_ratio).
    """
    if own_aggregate:
        return "a ratio of two means with no per-query values: no interval"
    if isinstance(measure, GeometricMAP | GeometricBPref):
        return "geometric"
    if type(measure).aggregate is not Measure.aggregate:
        return "its aggregate is not a mean of per-query values (a total): no interval"
    return "mean"


def mean_intervals(
    samples: Sequence[FloatArray], settings: IntervalSettings
) -> list[tuple[float, float] | None]:
    """The bootstrap interval of the mean of each sample; None for fewer than 2 values.

    Samples of equal length share one set of resamples (:func:`bootstrap_means`, the
    bootstrap stream of `compare` for the same seed), then BCa (:func:`bca_interval`,
    Efron 1987) or percentile intervals at ``settings.level``.
    """
    return stats_mean_intervals(
        samples, settings.resamples, settings.level, settings.method, settings.seed
    )


def intervals(
    rows: Sequence[tuple[Scale | str, FloatArray]], settings: IntervalSettings
) -> list[Interval]:
    """An :class:`Interval` for each (scale or reason, values) row, all computed together.

    A geometric mean ``exp(mean(log(max(v, 1e-5))))`` gets the interval of the mean of the
    logs, transformed back: percentile and BCa intervals respect monotone transformations
    (Efron & Tibshirani 1993, sec. 13.6 and 14.3).
    """
    from recallbench.report._model import Interval

    samples: list[FloatArray] = []
    for scale, values in rows:
        data = np.asarray(values, dtype=np.float64)
        if scale == "geometric":
            samples.append(np.log(np.maximum(data, MIN_GEO_MEAN)))
        else:  # a row without an interval is resampled as no queries at all
            samples.append(data if scale == "mean" else data[:0])
    found = mean_intervals(samples, settings)
    out = []
    for (scale, values), bounds in zip(rows, found, strict=True):
        n = int(np.asarray(values).size)
        small = n < settings.small_n
        if scale not in ("mean", "geometric"):  # no interval, so nothing to under-cover
            out.append(Interval(n=n, reason=scale))
        elif bounds is None:
            out.append(Interval(n=n, small=small, reason=NO_QUERIES_REASON))
        else:
            low, high = np.exp(bounds) if scale == "geometric" else bounds
            out.append(Interval(n=n, low=float(low), high=float(high), small=small))
    return out
