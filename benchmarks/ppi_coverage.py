"""How often `judge calibrate`'s 95% intervals for a mean (classical, PPI, PPI++) hold the
true mean, by the number of queries people labelled (``--human-sample``).

The intervals are normal (CLT) intervals with variances that divide by the sample size, as
in the PPI papers and ``ppi_py``: with few labelled queries they are too narrow, and their
coverage falls short of the nominal 95%. This measures by how much, with the project's own
functions (:func:`recallbench.judges.classical_mean` and
:func:`recallbench.judges.ppi_mean`), so the warning under ``--human-sample 20`` can state
a measured number.

Population: a per-query measure shaped like nDCG@10 on a memory benchmark, 0 with
probability 0.3 (nothing relevant found), 1 with probability 0.2, otherwise Beta(2, 2); its
mean is 0.45 exactly. Three judges give the judge's value f of each query:

* ``close``: f = clip(Y + N(0, 0.1^2), 0, 1), a judge that tracks people;
* ``biased``: f = clip(0.6 Y + N(0, 0.2^2), 0, 1), one that grades low and noisily (as the
  docs/judges.md's judge does: judge-only mean 0.39 against people's 0.62);
* ``unrelated``: f drawn independently from the population, a judge that knows nothing.

Each trial draws n labelled queries (Y and f) and ``--unlabelled`` further queries (f
only), computes the three 95% intervals and checks whether they hold 0.45. The Monte Carlo
standard error of each coverage is about sqrt(0.95 * 0.05 / trials) (0.003 at 5,000).

Measured (20,000 trials, ``--trials 20000``): at 10 labelled queries the intervals held the
mean 0.88-0.94 of the time (PPI++ 0.88-0.89, classical 0.90-0.91, PPI 0.90-0.94), at 5
0.79-0.92, at 20 0.92-0.95, at 60 0.94-0.95.

    python benchmarks/ppi_coverage.py                    # 5,000 trials per cell, ~15 s
    python benchmarks/ppi_coverage.py --trials 1000 --no-write

Prints a Markdown table and writes benchmarks/results/ppi_coverage.md with the machine.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine, write_results

from recallbench.judges._ppi import classical_mean, ppi_mean

FloatArray = NDArray[np.float64]
Judge = Callable[[FloatArray, np.random.Generator], FloatArray]

TRUE_MEAN = 0.45
"""0.3 * 0 + 0.2 * 1 + 0.5 * E[Beta(2, 2)] = 0.2 + 0.25."""
LEVEL = 0.95
SAMPLES = (5, 10, 15, 20, 30, 40, 60)
METHODS = ("classical", "PPI", "PPI++")


def population(size: int, rng: np.random.Generator) -> FloatArray:
    """``size`` per-query values: 0 (p 0.3), 1 (p 0.2), else Beta(2, 2)."""
    kind = rng.random(size)
    values = rng.beta(2.0, 2.0, size)
    values[kind < 0.3] = 0.0
    values[(kind >= 0.3) & (kind < 0.5)] = 1.0
    return values


def _close(y: FloatArray, rng: np.random.Generator) -> FloatArray:
    return np.clip(y + rng.normal(0.0, 0.1, y.size), 0.0, 1.0)


def _biased(y: FloatArray, rng: np.random.Generator) -> FloatArray:
    return np.clip(0.6 * y + rng.normal(0.0, 0.2, y.size), 0.0, 1.0)


def _unrelated(y: FloatArray, rng: np.random.Generator) -> FloatArray:
    return population(y.size, rng)


JUDGES: dict[str, Judge] = {"close": _close, "biased": _biased, "unrelated": _unrelated}


def coverage(n: int, unlabelled: int, judge: Judge, trials: int, seed: int) -> dict[str, float]:
    """Share of ``trials`` whose interval holds the true mean, per method."""
    rng = np.random.default_rng(seed)
    held = dict.fromkeys(METHODS, 0)
    for _ in range(trials):
        y = population(n, rng)
        f = judge(y, rng)
        f_tilde = judge(population(unlabelled, rng), rng)
        for method, found in (
            ("classical", classical_mean(y, LEVEL)),
            ("PPI", ppi_mean(y, f, f_tilde, LEVEL)),
            ("PPI++", ppi_mean(y, f, f_tilde, LEVEL, tuned=True)),
        ):
            held[method] += found.low <= TRUE_MEAN <= found.high
    return {method: count / trials for method, count in held.items()}


def table(trials: int, unlabelled: int, seed: int) -> str:
    header = ["labelled n", *(f"{judge}: {method}" for judge in JUDGES for method in METHODS)]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---:"] * len(header)) + "|",
    ]
    for n in SAMPLES:
        cells = [str(n)]
        for index, judge in enumerate(JUDGES.values()):
            found = coverage(n, unlabelled, judge, trials, seed + 1_000 * n + index)
            cells += [f"{found[method]:.3f}" for method in METHODS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trials", type=int, default=5_000, help="trials per cell")
    parser.add_argument("--unlabelled", type=int, default=100, help="judge-only queries N")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    host = machine(numpy=np.__version__, scipy=scipy.__version__)
    body = (
        f"Coverage of the true mean ({TRUE_MEAN}) by 95% intervals, {args.trials:,} trials "
        f"per cell, {args.unlabelled} unlabelled queries, seed {args.seed}; Monte Carlo "
        f"standard error about {np.sqrt(0.95 * 0.05 / args.trials):.3f}.\n\n"
        + table(args.trials, args.unlabelled, args.seed)
    )
    print(body)
    if not args.no_write:
        write_results(
            __file__,
            "Coverage of calibration's mean intervals by human sample size",
            argv,
            host,
            body,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
