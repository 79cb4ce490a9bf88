"""95% bootstrap intervals of a report's means, for the leaderboard.

For each measure, the values of the queries in its population x_1..x_n are resampled with
replacement (``resamples`` times, generator seeded with ``seed``); the interval is the BCa
interval of the resampled means (bias-corrected and accelerated: Efron 1987), the point
itself when the values do not vary, none with fewer than 2 values or for an
aggregate other than the arithmetic mean. Measures with the same
number of values share one stream of resamples from the seed, so an interval does not
depend on which other measures are computed.

Efron, B. (1987). Better bootstrap confidence intervals. JASA 82(397), 171-185.
"""

from __future__ import annotations

import numpy as np

from recallbench.report._model import Report
from recallbench.stats._paired import PairedSettings
from recallbench.stats._resampling import bca_interval, bootstrap_means, percentile_interval

Interval = tuple[float, float]


def mean_intervals(
    report: Report, settings: PairedSettings | None = None
) -> dict[str, Interval | None]:
    """Measure -> (low, high) of its mean at ``settings.level``; None when undefined."""
    settings = settings or PairedSettings()
    by_size: dict[int, list[tuple[str, list[float]]]] = {}
    out: dict[str, Interval | None] = {}
    for info in report.measures:
        values = [v for q in report.queries if (v := q.values.get(info.name)) is not None]
        out[info.name] = None
        mean = report.means.get(info.name)
        # a measure whose aggregate is not the arithmetic mean of its values (gm_map, a
        # ratio of two means) gets no interval: this bootstrap is of the arithmetic mean
        if len(values) >= 2 and mean is not None and np.isclose(np.mean(values), mean):
            by_size.setdefault(len(values), []).append((info.name, values))
    for n, rows in by_size.items():
        data = np.array([values for _, values in rows], dtype=np.float64).reshape(-1, n)
        rng = np.random.default_rng(np.random.SeedSequence(settings.seed))
        estimates = bootstrap_means(data, settings.resamples, rng)
        if settings.interval == "bca":
            low, high = bca_interval(data, estimates, settings.level)
        else:
            low, high = percentile_interval(estimates, settings.level)
        for index, (name, _) in enumerate(rows):
            out[name] = (float(low[index]), float(high[index]))
    return out
