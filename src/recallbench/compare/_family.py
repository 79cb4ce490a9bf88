"""One family of comparisons, corrected together: p-values, intervals and MDE that agree.

A verdict from a corrected p-value next to an uncorrected interval contradicts itself (an
interval that excludes 0 beside "no significant difference"), and an MDE at the uncorrected
alpha promises power the corrected test does not have. So within a family of m tested
comparisons:

- Holm and Westfall-Young: intervals at the Bonferroni level ``1 - (1 - level) / m``,
  simultaneous over the family (Dunn 1961), the usual conservative companion of a step-down
  test; the MDE at ``alpha / m``, a lower bound on the power those corrections give.
- Benjamini-Hochberg: false-coverage-rate intervals at ``1 - R (1 - level) / m`` with R the
  number of rejections (Benjamini & Yekutieli 2005); the MDE at ``alpha / m``.
- none: intervals at ``level``; the MDE at alpha.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from recallbench.compare._inputs import Compared
from recallbench.compare._model import Interval, Verdict
from recallbench.report._model import QueryReport
from recallbench.stats._attainable import smallest_pvalue
from recallbench.stats._maxt import max_t_pvalues
from recallbench.stats._multiple import Correction, adjust
from recallbench.stats._paired import (
    PairedResult,
    PairedSettings,
    paired_intervals,
    paired_results,
)

TESTS = ("randomisation", "t", "wilcoxon")
MAX_T_SEED = 1
"""Offset of the max-T resamples' seed from the comparison's, so they are their own stream."""


@dataclass(frozen=True, slots=True)
class Row:
    """One comparison to make: a system against the baseline on a measure, over a group."""

    system: Compared
    measure: str
    grouping: Literal["category", "intent"] | None = None
    group: str | None = None

    def selects(self, query: QueryReport) -> bool:
        return self.grouping is None or getattr(query, self.grouping) == self.group


def family_levels(
    correction: Correction, settings: PairedSettings, tested: int, rejected: int = 0
) -> tuple[float, float]:
    """(interval level, alpha of the MDE) for a family of ``tested`` comparisons."""
    m = max(tested, 1)
    miss = 1 - settings.level
    if correction == "none":
        return settings.level, settings.alpha
    if correction == "bh":
        return 1 - max(rejected, 1) * miss / m, settings.alpha / m
    return 1 - miss / m, settings.alpha / m


@dataclass(frozen=True, slots=True)
class Family:
    """Makes a family of comparisons and corrects their p-values and intervals together."""

    baseline: Compared
    kept: frozenset[str]
    directions: dict[str, bool]
    settings: PairedSettings
    correction: Correction

    def _pairs(self, row: Row) -> tuple[NDArray[np.float64], list[str]]:
        """(baseline, system) values of the kept queries in the row's group and population,
        and those queries' ids."""
        kept = self.kept
        values = {q.id: q.values.get(row.measure) for q in row.system.report.queries}
        paired = [
            (q.id, base, value)
            for q in self.baseline.report.queries
            if q.id in kept
            and row.selects(q)
            and (base := q.values.get(row.measure)) is not None
            and (value := values.get(q.id)) is not None
        ]
        array = np.array([(b, v) for _, b, v in paired], dtype=np.float64).reshape(-1, 2)
        return array, [query_id for query_id, _, _ in paired]

    def compare(
        self, rows: Sequence[Row], with_mde: bool = True
    ) -> list[tuple[Row, dict[str, Any]]]:
        """Each row with at least one paired query, with its statistics as model fields."""
        made = [self._pairs(row) for row in rows]
        pairs = [values for values, _ in made]
        tested_count = sum(1 for p in pairs if p.shape[0] >= 2)
        level, mde_alpha = family_levels(self.correction, self.settings, tested_count)
        settings = replace(self.settings, level=level, alpha=mde_alpha)
        results = paired_results(
            [p[:, 0] for p in pairs],
            [p[:, 1] for p in pairs],
            [self.directions[row.measure] for row in rows],
            settings,
            with_mde=with_mde,
        )
        keep = [index for index, r in enumerate(results) if r.n]
        tested = [(rows[index], results[index]) for index in keep]
        adjusted = {
            test: adjust([_p(r, test) for _, r in tested], self.correction) for test in TESTS
        }
        if self.correction == "westfall-young":
            adjusted["randomisation"] = self._max_t([made[index] for index in keep], tested)
        intervals: list[tuple[float, float] | None] = [
            None if r.ci_low is None or r.ci_high is None else (r.ci_low, r.ci_high)
            for _, r in tested
        ]
        if self.correction == "bh":
            rejected = sum(
                1 for p in adjusted["randomisation"] if p is not None and p < self.settings.alpha
            )
            level, _ = family_levels("bh", self.settings, tested_count, rejected)
            intervals = paired_intervals(
                [pairs[index][:, 0] for index in keep],
                [pairs[index][:, 1] for index in keep],
                replace(self.settings, level=level),
            )
        out = []
        for index, (row, r) in enumerate(tested):
            p_adjusted = {test: adjusted[test][index] for test in TESTS}
            span = intervals[index]
            fields = {
                "n": r.n,
                "mean_baseline": r.mean_baseline,
                "mean_system": r.mean_system,
                "delta": r.delta,
                "ci": None if span is None else Interval(low=span[0], high=span[1]),
                "ci_level": None if span is None else level,
                "p_randomisation": r.p_randomisation,
                "p_exact": r.exact,
                "p_t": r.p_t,
                "p_wilcoxon": r.p_wilcoxon,
                "p_adjusted": p_adjusted,
                "p_floor": smallest_pvalue(
                    "randomisation", r.wins + r.losses, self.settings.resamples
                ),
                "verdict": verdict(
                    r.delta,
                    p_adjusted["randomisation"],
                    self.directions[row.measure],
                    self.settings.alpha,
                ),
                "effect_size": r.effect_size,
                "wins": r.wins,
                "ties": r.ties,
                "losses": r.losses,
                "mde": r.mde,
                "not_available": r.degenerate,
            }
            out.append((row, fields))
        return out

    def _max_t(
        self,
        made: Sequence[tuple[NDArray[np.float64], list[str]]],
        tested: Sequence[tuple[Row, PairedResult]],
    ) -> list[float | None]:
        """Westfall-Young adjusted randomisation p-values: each query's sign flipped in every
        comparison at once (0 where a comparison does not count the query)."""
        columns = {query_id: i for i, query_id in enumerate(sorted(self.kept))}
        # only comparisons the randomisation test could test (n >= 2) enter the maximum
        chosen = [i for i, (_, r) in enumerate(tested) if r.p_randomisation is not None]
        differences = np.zeros((len(chosen), len(columns)))
        for row, index in enumerate(chosen):
            values, ids = made[index]
            differences[row, [columns[q] for q in ids]] = values[:, 1] - values[:, 0]
        rng = np.random.default_rng(self.settings.seed + MAX_T_SEED)
        p = max_t_pvalues(differences, self.settings.resamples, rng)
        out: list[float | None] = [None] * len(tested)
        for row, index in enumerate(chosen):
            out[index] = float(p[row])
        return out


def _p(result: PairedResult, test: str) -> float | None:
    if test == "randomisation":
        return result.p_randomisation
    return result.p_t if test == "t" else result.p_wilcoxon


def verdict(delta: float, p: float | None, higher_is_better: bool, alpha: float) -> Verdict:
    if p is None:
        return "not tested"
    if p >= alpha or delta == 0:
        return "no significant difference"
    return "better" if (delta > 0) == higher_is_better else "worse"
