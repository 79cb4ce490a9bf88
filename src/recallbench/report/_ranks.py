"""Shared ranks for a leaderboard: which systems the data cannot tell apart.

The first measure ranks. Every pair of systems is compared by the two-sided paired
randomisation test over the queries both scored (the test of ``recallbench compare``), and
the p-values of all ``m (m - 1) / 2`` pairs are adjusted together by Holm's step-down
procedure. A pair is decided when its adjusted p < alpha: the system with the better mean
(in the measure's direction) is significantly better. Each system then gets the rank range

    low  = 1 + #{systems significantly better than it}
    high = m - #{systems significantly worse than it}

shown as ``"1"`` when low = high and ``"1–3"`` otherwise. Because the family-wise error of
all pairwise tests is controlled at alpha, these ranges hold for every system at once with
probability at least 1 - alpha: they are simultaneous confidence intervals for the ranks
(Al Mohamad, Goeman & van Zwet 2022, the "Tukey" intervals built from pairwise tests; the
rank as 1 + the number of systems significantly better is also the leaderboard rule of
Chiang et al. 2024, Chatbot Arena). Systems not significantly worse than the best share
rank 1 whenever no other system beats them.

Al Mohamad, D., Goeman, J. J. & van Zwet, E. W. (2022). Simultaneous confidence intervals
for ranks with application to ranking institutions. Biometrics 78(1), 238-247;
Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scand. J. Stat.
6(2), 65-70; Smucker, M., Allan, J. & Carterette, B. (2007). A comparison of statistical
significance tests for information retrieval evaluation. CIKM.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from recallbench.report._model import Report
from recallbench.stats._multiple import adjust
from recallbench.stats._paired import FloatArray, PairedSettings, paired_results

ALPHA = 0.05


@dataclass(frozen=True, slots=True)
class PairTest:
    """Two systems on the ranking measure; ``delta`` is first minus second."""

    first: str
    second: str
    n: int
    """Queries both systems scored (the paired queries)."""
    delta: float | None
    p: float | None
    """Raw two-sided randomisation p; None with fewer than 2 paired queries."""
    p_adjusted: float | None
    """Holm-adjusted over every pair of the leaderboard."""
    better: str | None
    """The significantly better system (adjusted p < alpha), or None."""


@dataclass(frozen=True, slots=True)
class Standing:
    system: str
    low: int
    high: int

    @property
    def label(self) -> str:
        return str(self.low) if self.low == self.high else f"{self.low}–{self.high}"


@dataclass(frozen=True, slots=True)
class Ranking:
    """Rank ranges of the systems (in the order given) and the tests behind them."""

    measure: str
    standings: list[Standing]
    pairs: list[PairTest]
    alpha: float
    settings: PairedSettings

    def label(self, system: str) -> str:
        return next(s.label for s in self.standings if s.system == system)

    def method(self) -> str:
        return (
            f"ranked by {self.measure}; a shared rank ('1–2') means the data cannot order "
            f"those systems: two-sided paired randomisation tests over the queries both "
            f"scored ({self.settings.resamples:,} sign flips, seed {self.settings.seed}), "
            f"Holm-adjusted over {_pairs(len(self.pairs))}, alpha {self.alpha}; rank = "
            "1 + systems significantly better .. m - systems significantly worse "
            "(simultaneous rank intervals, Al Mohamad, Goeman & van Zwet 2022)"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "measure": self.measure,
            "alpha": self.alpha,
            "correction": "holm",
            "test": "paired randomisation (two-sided)",
            "resamples": self.settings.resamples,
            "seed": self.settings.seed,
            "method": self.method(),
            "pairs": [
                {
                    "first": p.first,
                    "second": p.second,
                    "n": p.n,
                    "delta": p.delta,
                    "p": p.p,
                    "p_adjusted": p.p_adjusted,
                    "better": p.better,
                }
                for p in self.pairs
            ],
        }


def _pairs(count: int) -> str:
    return "the 1 pair" if count == 1 else f"all {count} pairs"


def paired_values(a: Mapping[str, float], b: Mapping[str, float]) -> FloatArray:
    """(n, 2) values of the queries both systems scored, in a's order."""
    rows = [(x, b[query]) for query, x in a.items() if query in b]
    return np.array(rows, dtype=np.float64).reshape(-1, 2)


def scored(report: Report, measure: str) -> dict[str, float]:
    """Query id -> value of the queries the report scored on ``measure``."""
    return {q.id: v for q in report.queries if (v := q.values.get(measure)) is not None}


def rank_reports(
    reports: Sequence[Report], alpha: float = ALPHA, settings: PairedSettings | None = None
) -> Ranking:
    """Rank ranges for ``reports`` (one per system, same dataset) on their first measure."""
    info = reports[0].measures[0]
    return rank_values(
        info.name,
        {r.system.system: scored(r, info.name) for r in reports},
        info.higher_is_better,
        alpha,
        settings,
    )


def rank_values(
    measure: str,
    values: Mapping[str, Mapping[str, float]],
    higher_is_better: bool = True,
    alpha: float = ALPHA,
    settings: PairedSettings | None = None,
) -> Ranking:
    """Rank ranges of systems from their per-query values (system -> query id -> value);
    standings in the order of ``values``."""
    settings = settings or PairedSettings()
    names = list(values)
    pairs = list(combinations(range(len(names)), 2))
    arrays = [paired_values(values[names[i]], values[names[j]]) for i, j in pairs]
    results = paired_results(
        [v[:, 1] for v in arrays],
        [v[:, 0] for v in arrays],
        [higher_is_better] * len(pairs),
        settings,
        with_mde=False,
    )
    raw = [r.p_randomisation if r.n >= 2 else None for r in results]
    adjusted = adjust(raw, "holm")
    sign = 1.0 if higher_is_better else -1.0
    tests = []
    beaten_by = dict.fromkeys(names, 0)  # systems significantly better than this one
    beats = dict.fromkeys(names, 0)  # systems significantly worse than this one
    for (i, j), result, p, q in zip(pairs, results, raw, adjusted, strict=True):
        winner = None
        if q is not None and q < alpha and result.delta != 0:
            first_wins = sign * result.delta > 0
            winner, loser = (names[i], names[j]) if first_wins else (names[j], names[i])
            beaten_by[loser] += 1
            beats[winner] += 1
        tests.append(
            PairTest(
                names[i],
                names[j],
                result.n,
                result.delta if result.n else None,
                p,
                q,
                winner,
            )
        )
    m = len(names)
    standings = [Standing(n, 1 + beaten_by[n], m - beats[n]) for n in names]
    return Ranking(measure, standings, tests, alpha, settings)
