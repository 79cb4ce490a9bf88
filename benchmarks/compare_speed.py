"""Time the paired statistics of `recallbench compare` against scipy.stats.

5 systems x 10,000 queries x 8 measures: four systems against the baseline on each measure,
32 comparisons, each with a 10,000-resample bootstrap interval (BCa), a 10,000-resample
randomisation test, a paired t-test and a Wilcoxon test, and the MDE.

scipy's bootstrap and permutation_test are timed on a few comparisons and scaled to 32
(running all of them takes minutes); the output says so.

    python benchmarks/compare_speed.py [--queries 10000] [--resamples 10000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from recallbench.stats import PairedSettings, paired_results

SYSTEMS = 5
MEASURES = 8


def per_query_values(queries: int, seed: int = 0) -> np.ndarray:
    """systems x measures x queries values in [0, 1] with ties, like real per-query scores."""
    rng = np.random.default_rng(seed)
    base = rng.beta(0.6, 0.8, (1, MEASURES, queries))
    shift = (
        rng.normal(0, 0.15, (SYSTEMS, MEASURES, queries))
        + np.linspace(0, 0.02, SYSTEMS)[:, None, None]
    )
    values = np.clip(base + shift * (rng.random((SYSTEMS, MEASURES, queries)) < 0.6), 0, 1)
    return np.round(values, 2)  # many per-query ties, as with rank-based measures


def time_recallbench(values: np.ndarray, resamples: int) -> tuple[float, int]:
    baseline = [values[0, m] for _ in range(1, SYSTEMS) for m in range(MEASURES)]
    systems = [values[s, m] for s in range(1, SYSTEMS) for m in range(MEASURES)]
    start = time.perf_counter()
    results = paired_results(
        baseline, systems, [True] * len(systems), PairedSettings(resamples=resamples)
    )
    return time.perf_counter() - start, len(results)


def time_scipy(values: np.ndarray, resamples: int, sample: int) -> float:
    """Seconds per comparison with scipy.stats (bootstrap BCa, permutation test, t, Wilcoxon)."""
    from scipy import stats

    def mean_difference(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
        return np.mean(x - y, axis=axis)

    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for index in range(sample):
        base, other = values[0, index % MEASURES], values[1 + index % (SYSTEMS - 1), index]
        d = other - base
        stats.bootstrap((d,), np.mean, n_resamples=resamples, method="BCa", rng=rng, batch=500)
        stats.permutation_test(
            (other, base),
            mean_difference,
            permutation_type="samples",
            vectorized=True,
            n_resamples=resamples,
            rng=rng,
            batch=500,
        )
        stats.ttest_rel(other, base)
        stats.wilcoxon(other, base)
    return (time.perf_counter() - start) / sample


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--scipy-sample", type=int, default=2, help="comparisons timed in scipy")
    args = parser.parse_args()
    values = per_query_values(args.queries)
    comparisons = (SYSTEMS - 1) * MEASURES
    print(
        f"{SYSTEMS} systems x {args.queries:,} queries x {MEASURES} measures: "
        f"{comparisons} comparisons, {args.resamples:,} resamples each"
    )
    ours, made = time_recallbench(values, args.resamples)
    assert made == comparisons
    print(f"recallbench   {ours:7.2f} s  (all {comparisons} comparisons, every statistic)")
    per = time_scipy(values, args.resamples, args.scipy_sample)
    theirs = per * comparisons
    print(
        f"scipy.stats   {theirs:7.2f} s  ({per:.2f} s per comparison, timed on "
        f"{args.scipy_sample}, scaled to {comparisons})"
    )
    print(f"ratio         {ours / theirs:7.3f}x the time of scipy.stats")


if __name__ == "__main__":
    main()
