"""The one-sided paired sign-flip randomisation test: is the current run worse than a baseline?

A regression gate asks one question of the per-query differences d_1..d_n (current minus
baseline, signed so that a negative d means worse): is their sum negative beyond chance?
Under the null hypothesis each d_i is symmetric about 0 (the current run and the baseline
are exchangeable on every query), so given |d_1|..|d_n| every one of the 2^n sign
assignments s is equally likely, and

    p = #{s in {-1, +1}^n : sum_i s_i |d_i| <= sum_i d_i} / 2^n

is exact. Queries with d_i = 0 are dropped first: they add 0 to every flipped sum, so each
sign pattern of the others appears 2^z times and p is unchanged. Exact enumeration runs
when 2^n is at most ``max(resamples, EXACT_ASSIGNMENTS)``; above that, ``resamples``
random assignments give ``p = (b + 1) / (resamples + 1)``, the observed assignment counted
once so that p is never 0 (Phipson & Smyth).

The smallest p the test can give with n non-zero differences is 1 / 2^n (every difference
negative), so with fewer than ``log2(1 / alpha)`` differing queries no drop can be
significant at ``alpha``: :func:`minimum_differing` is that bound, and a caller must say it
cannot judge rather than call such a drop noise.

Good, P. (2000). Permutation Tests: A Practical Guide to Resampling Methods for Testing
Hypotheses, 2nd ed., Springer (the paired, one-sample permutation test); Fisher, R. A. (1935).
The Design of Experiments, sec. 21; Phipson, B. & Smyth, G. (2010). Permutation p-values
should never be zero. Stat. Appl. Genet. Mol. Biol. 9(1).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

EXACT_ASSIGNMENTS = 2**16
"""Enumerate every sign assignment up to this many (n <= 16), whatever ``resamples`` says."""

BLOCK_CELLS = 2_000_000
"""Sign assignments x queries held at a time: 16 MB of float64."""

TIE_TOLERANCE = 1e-9
"""Flipped sums within this fraction of sum(|d|) above the observed one count as ties
(<=): the same sum reached through another order of additions differs in its last bits."""


@dataclass(frozen=True, slots=True)
class OneSided:
    """The p-value of "the current run is worse", and what it rests on."""

    p: float
    differing: int
    """Queries with a non-zero difference (the n of the test)."""
    worse: int
    """Queries on which the current run is worse."""
    exact: bool
    """All 2^n assignments enumerated (else ``resamples`` random ones)."""


def smallest_p(differing: int) -> float:
    """The smallest one-sided p attainable with ``differing`` non-zero differences: 1/2^n."""
    return 0.5**differing


def minimum_differing(alpha: float) -> int:
    """The fewest non-zero differences with which p <= ``alpha`` can happen at all:
    the least n with 1/2^n <= alpha (5 for alpha = 0.05, 7 for 0.01)."""
    n = max(0, math.floor(-math.log2(alpha)))
    while smallest_p(n) > alpha:
        n += 1
    return n


def _blocks(total: int, n: int) -> Iterator[tuple[int, int]]:
    size = max(1, BLOCK_CELLS // max(n, 1))
    for start in range(0, total, size):
        yield start, min(size, total - start)


def worse_pvalue(differences: NDArray[np.float64], resamples: int, seed: int) -> OneSided:
    """One-sided paired sign-flip p-value of ``sum(differences) < 0`` (negative = worse).

    Exact enumeration of the 2^n sign assignments of the non-zero differences when there
    are at most ``max(resamples, EXACT_ASSIGNMENTS)`` of them, else ``resamples`` random
    assignments from a generator seeded with ``seed`` (see the module docstring).
    """
    d = np.asarray(differences, dtype=np.float64)
    d = d[d != 0.0]
    n = int(d.size)
    worse = int((d < 0).sum())
    if n == 0:
        return OneSided(1.0, 0, 0, True)
    magnitudes = np.abs(d)
    # the observed sum, raised by the tolerance: equal sums in other bits still count
    bound = float(d.sum()) + TIE_TOLERANCE * float(magnitudes.sum())
    if n <= 62 and 2**n <= max(resamples, EXACT_ASSIGNMENTS):
        at_most = 0
        for start, size in _blocks(2**n, n):
            patterns = (np.arange(start, start + size)[:, None] >> np.arange(n)) & 1
            flipped = (1.0 - 2.0 * patterns) @ magnitudes
            at_most += int((flipped <= bound).sum())
        return OneSided(at_most / 2**n, n, worse, True)
    rng = np.random.default_rng(seed)
    at_most = 0
    for _, size in _blocks(resamples, n):
        signs = 1.0 - 2.0 * rng.integers(0, 2, size=(size, n))
        at_most += int((signs @ magnitudes <= bound).sum())
    return OneSided((at_most + 1) / (resamples + 1), n, worse, False)
