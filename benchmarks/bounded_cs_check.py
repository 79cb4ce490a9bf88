"""Checks of the bounded-mean confidence sequences (:mod:`recallbench.stats._bounded_cs`,
Waudby-Smith & Ramdas 2023): false-positive rate under continuous monitoring, power and
stopping time for a real effect, and speed.

1. False-positive rate. ``--streams`` null streams (mean difference 0) of ``--horizon``
   differences, each checked after every difference at alpha 0.05; a stream is a false
   positive if the test ever rejects. Scenarios: i.i.d. symmetric (``t - c``, both uniform
   on [0, 1]); skewed (-0.05 w.p. 0.95, +0.95 w.p. 0.05); 95% zeros (else ±U(0, 1));
   heavy-tailed (``0.2 t_2.5`` clipped to [-1, 1]); a variance jump half way (``0.1 U(-1, 1)``
   then ±1: not i.i.d., the conditional mean stays 0); hit differences (two
   Bernoulli(0.3)). Target: <= 0.05 + 2 Monte-Carlo standard errors.
2. Power for a mean difference 0.1: hits (Bernoulli(0.6) - Bernoulli(0.5), sd 0.70) and a
   low-noise difference (U(-0.4, 0.6), sd 0.29): share rejected by n = 250 / 500 / 1,000 /
   2,000, the median stopping n, and the fixed-n two-sided z-test's n for 80% power,
   ``((z_0.975 + z_0.8) sd / 0.1)^2``.
3. Speed: :func:`bounded_decisions` on all streams, :func:`bounded_cs_path` per stream.

    python benchmarks/bounded_cs_check.py                      # 2,000 streams of 2,000
    python benchmarks/bounded_cs_check.py --streams 500 --horizon 500

Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from recallbench.stats import BoundedCsSettings, bounded_cs_path, bounded_decisions
from recallbench.stats._bounded_cs import BOUNDED_METHODS

Array = NDArray[np.float64]
Maker = Callable[[np.random.Generator, int, int], Array]

METHODS = BOUNDED_METHODS


def symmetric(rng: np.random.Generator, m: int, n: int) -> Array:
    return rng.random((m, n)) - rng.random((m, n))


def skewed(rng: np.random.Generator, m: int, n: int) -> Array:
    return np.where(rng.random((m, n)) < 0.05, 0.95, -0.05)


def zeros(rng: np.random.Generator, m: int, n: int) -> Array:
    signed = rng.choice([-1.0, 1.0], size=(m, n)) * rng.random((m, n))
    return np.where(rng.random((m, n)) < 0.95, 0.0, signed)


def heavy(rng: np.random.Generator, m: int, n: int) -> Array:
    return np.clip(0.2 * rng.standard_t(2.5, size=(m, n)), -1.0, 1.0)


def jump(rng: np.random.Generator, m: int, n: int) -> Array:
    quiet = 0.1 * (2.0 * rng.random((m, n)) - 1.0)
    loud = rng.choice([-1.0, 1.0], size=(m, n))
    return np.where(np.arange(n) < n // 2, quiet, loud)


def hits(rng: np.random.Generator, m: int, n: int) -> Array:
    return (rng.random((m, n)) < 0.3).astype(float) - (rng.random((m, n)) < 0.3)


NULLS: dict[str, Maker] = {
    "i.i.d. symmetric": symmetric,
    "skewed (-0.05 / +0.95)": skewed,
    "95% zeros": zeros,
    "heavy-tailed t(2.5), clipped": heavy,
    "variance jump": jump,
    "hits, Bernoulli(0.3) each": hits,
}

EFFECTS: dict[str, tuple[Maker, float]] = {
    "hits 0.6 vs 0.5 (sd 0.70)": (
        lambda rng, m, n: (rng.random((m, n)) < 0.6).astype(float) - (rng.random((m, n)) < 0.5),
        math.sqrt(0.6 * 0.4 + 0.5 * 0.5),
    ),
    "U(-0.4, 0.6) (sd 0.29)": (
        lambda rng, m, n: rng.random((m, n)) - 0.4,
        math.sqrt(1.0 / 12.0),
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=2000)
    parser.add_argument("--horizon", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=29)
    args = parser.parse_args()
    m, n = args.streams, args.horizon
    se = math.sqrt(0.05 * 0.95 / m)
    print(f"## False-positive rate, {m:,} null streams of {n:,}, alpha 0.05")
    print(f"target <= {0.05 + 2 * se:.4f} (0.05 + 2 MC s.e.)\n")
    print("| scenario | betting | empirical Bernstein |")
    print("|---|---|---|")
    timings: dict[str, float] = {}
    for index, (name, make) in enumerate(NULLS.items()):
        data = make(np.random.default_rng([args.seed, index]), m, n)
        rates = []
        for method in METHODS:
            start = time.perf_counter()
            codes, _ = bounded_decisions(data, BoundedCsSettings(method=method))
            timings[method] = timings.get(method, 0.0) + time.perf_counter() - start
            rates.append(f"{float((codes > 0).mean()):.4f}")
        print(f"| {name} | {' | '.join(rates)} |")
    print("\n## Power for a mean difference of 0.1\n")
    print("| differences | method | n=250 | n=500 | n=1,000 | n=2,000 | median n | fixed-n z |")
    print("|---|---|---|---|---|---|---|---|")
    for index, (name, (make, sd)) in enumerate(EFFECTS.items()):
        data = make(np.random.default_rng([args.seed, 100 + index]), m, max(n, 2000))
        fixed = math.ceil(((1.959964 + 0.841621) * sd / 0.1) ** 2)
        for method in METHODS:
            codes, used = bounded_decisions(data, BoundedCsSettings(method=method))
            stop = np.where(codes == 1, used, np.iinfo(np.int64).max)
            shares = [f"{float((stop <= k).mean()):.3f}" for k in (250, 500, 1000, 2000)]
            median = np.median(stop)
            shown = f"{int(median)}" if median <= data.shape[1] else f"> {data.shape[1]}"
            print(f"| {name} | {method} | {' | '.join(shares)} | {shown} | {fixed} |")
    print(f"\n## Speed ({m:,} streams of {n:,})\n")
    for method in METHODS:
        per = 1000 * timings[method] / (len(NULLS) * m)
        print(f"- bounded_decisions, {method}: {per:.3f} ms per stream")
    data = symmetric(np.random.default_rng(args.seed), 20, 2000)
    for method in METHODS:
        start = time.perf_counter()
        bounded_cs_path(data, BoundedCsSettings(method=method))
        per = 1000 * (time.perf_counter() - start) / 20
        print(f"- bounded_cs_path, {method}: {per:.1f} ms per stream of 2,000")


if __name__ == "__main__":
    main()
