"""Agreement between a judge and people: Cohen's kappa, the confusion matrix, agreement per
group, and Kendall's tau-b between the rankings of systems under the two sets of labels.

Labels are categories from a fixed, ordered set (relevance grades 0-3, or 0/1 after
:func:`binary_labels`); the order matters only for the linear and quadratic weights.
Intervals are percentile bootstrap intervals over the judged pairs (kappa) or the queries
(tau), seeded, drawn with :func:`recallbench.stats.bootstrap_means`. Percentile rather than
BCa: the BCa interval in ``recallbench.stats`` takes its acceleration from the jackknife of a
mean, and kappa and tau are not means.

A statistic that is undefined (one category only; a ranking in which every system ties) is
``None`` with the reason in words, never NaN.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from recallbench.core._errors import ConfigError
from recallbench.stats._resampling import bootstrap_means, check_resamples, percentile_interval

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
Weighting = Literal["unweighted", "linear", "quadratic"]
WEIGHTINGS: tuple[Weighting, ...] = ("unweighted", "linear", "quadratic")

GRADES: tuple[int, ...] = (0, 1, 2, 3)
"""Graded relevance as people and judges label a (query, memory) pair."""
BINARY: tuple[int, ...] = (0, 1)

CHANCE_FLOOR = 1e-12
"""Chance disagreement at or below this is zero: both raters put every item in the same
single category, and kappa = 0/0. Exact zeros come out as 0.0; the floor only absorbs the
last bits of proportions that went through a matrix product."""

TIE = 1e-12
"""System scores closer than this (relative to the largest |score|, at least 1) tie: the same
mean reached through another order of additions differs in its last bits."""


@dataclass(frozen=True, slots=True)
class Kappa:
    """Cohen's kappa of one table; ``value`` is None when kappa is undefined (``undefined``
    says why)."""

    value: float | None
    n: int | None
    """Pairs in the table (None when it was given as proportions)."""
    weighting: str
    observed_disagreement: float
    chance_disagreement: float
    undefined: str | None = None


@dataclass(frozen=True, slots=True)
class Bootstrap:
    """A percentile bootstrap interval at ``level`` (bounds None when the statistic is
    undefined). ``undefined_resamples`` counts resamples in which the statistic was undefined
    (every drawn pair in one category; every system tied); the interval is over the others."""

    low: float | None
    high: float | None
    level: float
    resamples: int
    seed: int
    undefined_resamples: int
    over: str
    """What was resampled: "pairs" or "queries"."""

    @property
    def method(self) -> str:
        return (
            f"percentile bootstrap over {self.over}, {self.resamples:,} resamples, seed {self.seed}"
        )


@dataclass(frozen=True, slots=True)
class KappaInterval:
    """Kappa with its bootstrap interval over the judged pairs."""

    kappa: Kappa
    interval: Bootstrap


@dataclass(frozen=True, slots=True)
class GroupAgreement:
    """Agreement within one group of pairs (a query category, say): its size, kappa and the
    raw agreement (share of pairs with the same label)."""

    group: str
    n: int
    kappa: Kappa
    agreement: float


@dataclass(frozen=True, slots=True)
class Tau:
    """Kendall's tau-b between two rankings of the same systems; None when undefined."""

    value: float | None
    systems: int
    undefined: str | None = None


@dataclass(frozen=True, slots=True)
class TauInterval:
    """Tau-b with its bootstrap interval over queries."""

    tau: Tau
    interval: Bootstrap


def _percentile(
    values: FloatArray | None, level: float, resamples: int, seed: int, over: str
) -> Bootstrap:
    """The percentile interval of the defined (finite) resampled values; None bounds when the
    point statistic is undefined (``values`` None) or no resample was defined."""
    if values is None:
        return Bootstrap(None, None, level, resamples, seed, 0, over)
    defined = values[np.isfinite(values)]
    if defined.size == 0:
        return Bootstrap(None, None, level, resamples, seed, resamples, over)
    low, high = percentile_interval(defined[None, :], level)
    undefined = resamples - defined.size
    return Bootstrap(float(low[0]), float(high[0]), level, resamples, seed, undefined, over)


def binary_labels(grades: Sequence[int], threshold: int = 1) -> list[int]:
    """Relevant (1) when the grade is at least ``threshold``, else 0."""
    return [1 if grade >= threshold else 0 for grade in grades]


def _indices(labels: Sequence[int], categories: Sequence[int], name: str) -> IntArray:
    position = {category: index for index, category in enumerate(categories)}
    out = np.empty(len(labels), dtype=np.int64)
    for index, label in enumerate(labels):
        found = position.get(label)
        if found is None:
            allowed = ", ".join(str(category) for category in categories)
            raise ConfigError(f"{name}[{index}]: label {label!r} is not one of {allowed}")
        out[index] = found
    return out


def _paired_indices(
    first: Sequence[int], second: Sequence[int], categories: Sequence[int], names: tuple[str, str]
) -> tuple[IntArray, IntArray]:
    if len(set(categories)) != len(categories) or len(categories) < 2:
        raise ConfigError(f"categories must be at least two distinct labels, got {categories}")
    for labels, name in zip((first, second), names, strict=True):
        if len(labels) == 0:
            raise ConfigError(f"{name}: no labels (kappa needs at least one judged pair)")
    if len(first) != len(second):
        raise ConfigError(
            f"{names[0]} has {len(first)} labels and {names[1]} {len(second)}: "
            "they must label the same pairs in the same order"
        )
    return _indices(first, categories, names[0]), _indices(second, categories, names[1])


def confusion_matrix(
    first: Sequence[int],
    second: Sequence[int],
    categories: Sequence[int] = GRADES,
    names: tuple[str, str] = ("human", "judge"),
) -> IntArray:
    """Counts of pairs by (first label, second label): row i, column j counts the pairs the
    first rater put in ``categories[i]`` and the second in ``categories[j]``."""
    rows, columns = _paired_indices(first, second, categories, names)
    k = len(categories)
    return np.bincount(rows * k + columns, minlength=k * k).reshape(k, k).astype(np.int64)


def disagreement_weights(k: int, weighting: Weighting) -> FloatArray:
    """Cohen's (1968) disagreement weights v_ij for k ordered categories: 1 off the diagonal
    (unweighted), |i - j| (linear) or (i - j)^2 (quadratic); 0 on the diagonal. Kappa does
    not change when all weights are scaled, so they are left unscaled."""
    if weighting not in WEIGHTINGS:
        raise ConfigError(f"weighting must be one of {', '.join(WEIGHTINGS)}, got {weighting!r}")
    distance = np.abs(np.subtract.outer(np.arange(k), np.arange(k))).astype(np.float64)
    if weighting == "linear":
        return distance
    if weighting == "quadratic":
        return distance**2
    return (distance > 0).astype(np.float64)


def kappa_from_confusion(
    counts: NDArray[np.int64] | FloatArray, weighting: Weighting | FloatArray = "unweighted"
) -> Kappa:
    """Cohen's kappa of a k x k table of counts (or proportions).

    With p_ij the proportion of items in cell (i, j), r_i and c_j the row and column
    proportions, e_ij = r_i c_j the proportion expected by chance and v_ij the disagreement
    weights (:func:`disagreement_weights`, or a k x k matrix of one's own):

        kappa_w = 1 - sum_ij v_ij p_ij / sum_ij v_ij e_ij

    With v_ij = 1 for i != j this is Cohen's (1960) kappa (p_o - p_e) / (1 - p_e). Kappa is
    undefined when the chance disagreement is zero: both raters put every item in the same
    single category (no disagreement could have occurred by chance, nor did any).

    Cohen, J. (1960). A coefficient of agreement for nominal scales. Educ. Psychol. Meas.
    20(1), 37-46; Cohen, J. (1968). Weighted kappa: nominal scale agreement with provision
    for scaled disagreement or partial credit. Psychol. Bull. 70(4), 213-220.
    """
    table = np.asarray(counts, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] != table.shape[1] or table.shape[0] < 2:
        raise ConfigError(f"a confusion matrix must be k x k with k >= 2, got {table.shape}")
    if np.any(table < 0) or not np.all(np.isfinite(table)):
        raise ConfigError("a confusion matrix holds counts: non-negative and finite")
    total = float(table.sum())
    if total <= 0:
        raise ConfigError("the confusion matrix is empty (no judged pair)")
    k = table.shape[0]
    name: str
    if isinstance(weighting, str):
        weights, name = disagreement_weights(k, weighting), weighting
    else:
        weights, name = np.asarray(weighting, dtype=np.float64), "custom"
        if weights.shape != (k, k):
            raise ConfigError(f"weights must be {k} x {k}, got {weights.shape}")
    proportions = table / total
    expected = np.outer(proportions.sum(axis=1), proportions.sum(axis=0))
    observed = float((weights * proportions).sum())
    chance = float((weights * expected).sum())
    n = round(total) if np.issubdtype(np.asarray(counts).dtype, np.integer) else None
    if chance <= CHANCE_FLOOR:
        return Kappa(
            None, n, name, observed, chance,
            "undefined: both raters used a single category, so no disagreement was "
            "possible by chance (kappa = 0/0)",
        )  # fmt: skip
    return Kappa(1.0 - observed / chance, n, name, observed, chance)


def cohen_kappa(
    first: Sequence[int],
    second: Sequence[int],
    categories: Sequence[int] = GRADES,
    weighting: Weighting = "unweighted",
    names: tuple[str, str] = ("human", "judge"),
) -> Kappa:
    """Cohen's kappa between two raters' labels of the same pairs (see
    :func:`kappa_from_confusion` for the formula and citations)."""
    table = confusion_matrix(first, second, categories, names)
    return kappa_from_confusion(table, weighting)


def _resampled_kappas(
    rows: IntArray, columns: IntArray, weights: FloatArray, resamples: int, seed: int
) -> FloatArray:
    """Kappa of each bootstrap resample of the pairs (NaN where undefined, counted by the
    caller). The k^2 cell proportions are means of indicator vectors over the pairs, so one
    call to the shared resampler yields every resample's table."""
    k = weights.shape[0]
    cells = rows * k + columns
    indicators = (cells[None, :] == np.arange(k * k)[:, None]).astype(np.float64)
    rng = np.random.default_rng(seed)
    tables = bootstrap_means(indicators, resamples, rng).T.reshape(resamples, k, k)
    expected = tables.sum(axis=2)[:, :, None] * tables.sum(axis=1)[:, None, :]
    observed = (weights * tables).sum(axis=(1, 2))
    chance = (weights * expected).sum(axis=(1, 2))
    kappas = np.full(resamples, np.nan)
    defined = chance > CHANCE_FLOOR
    kappas[defined] = 1.0 - observed[defined] / chance[defined]
    return kappas


def kappa_interval(
    first: Sequence[int],
    second: Sequence[int],
    categories: Sequence[int] = GRADES,
    weighting: Weighting = "unweighted",
    resamples: int = 10_000,
    seed: int = 0,
    level: float = 0.95,
    names: tuple[str, str] = ("human", "judge"),
) -> KappaInterval:
    """Kappa with a percentile bootstrap interval: resample the pairs with replacement
    (each pair keeps both its labels), recompute kappa, take the (1 -+ level)/2 quantiles.

    Efron, B. & Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 13.
    """
    check_resamples(resamples, level)
    rows, columns = _paired_indices(first, second, categories, names)
    k = len(categories)
    point = kappa_from_confusion(
        np.bincount(rows * k + columns, minlength=k * k).reshape(k, k), weighting
    )
    kappas = None
    if point.value is not None:
        weights = disagreement_weights(k, weighting)
        kappas = _resampled_kappas(rows, columns, weights, resamples, seed)
    return KappaInterval(point, _percentile(kappas, level, resamples, seed, "pairs"))


def group_agreement(
    first: Sequence[int],
    second: Sequence[int],
    groups: Sequence[str],
    categories: Sequence[int] = GRADES,
    weighting: Weighting = "unweighted",
    names: tuple[str, str] = ("human", "judge"),
) -> list[GroupAgreement]:
    """Kappa and raw agreement within each group of pairs, groups in sorted order. A group
    whose pairs all share one category gets an undefined kappa (raw agreement still holds)."""
    rows, columns = _paired_indices(first, second, categories, names)
    if len(groups) != rows.size:
        raise ConfigError(f"groups has {len(groups)} entries for {rows.size} judged pairs")
    members: dict[str, list[int]] = {}
    for index, group in enumerate(groups):
        members.setdefault(group, []).append(index)
    k = len(categories)
    out = []
    for group in sorted(members):
        chosen = np.array(members[group])
        table = np.bincount(rows[chosen] * k + columns[chosen], minlength=k * k).reshape(k, k)
        agreement = float(np.mean(rows[chosen] == columns[chosen]))
        out.append(
            GroupAgreement(group, chosen.size, kappa_from_confusion(table, weighting), agreement)
        )
    return out


def _pair_signs(scores: FloatArray) -> FloatArray:
    """sign(x_i - x_j) for every pair i < j of systems (rows of ``scores``), 0 within
    :data:`TIE`; columns are resamples."""
    first, second = np.triu_indices(scores.shape[0], k=1)
    difference = scores[first] - scores[second]
    scale = max(1.0, float(np.max(np.abs(scores))))
    return np.where(np.abs(difference) <= TIE * scale, 0.0, np.sign(difference))


def _tau_b(first: FloatArray, second: FloatArray) -> FloatArray:
    """Tau-b of each column (NaN where a ranking is all ties)."""
    signs_first, signs_second = _pair_signs(first), _pair_signs(second)
    concordance = (signs_first * signs_second).sum(axis=0)
    untied = np.sqrt((signs_first**2).sum(axis=0) * (signs_second**2).sum(axis=0))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(untied > 0, concordance / np.where(untied > 0, untied, 1.0), np.nan)


def _tau_from(value: float, systems: int) -> Tau:
    if np.isfinite(value):
        return Tau(float(value), systems)
    return Tau(None, systems, "undefined: every system ties in one of the rankings")


def kendall_tau_b(first: Mapping[str, float], second: Mapping[str, float]) -> Tau:
    """Kendall's tau-b between two scorings of the same systems (higher ranks first in both).

    Over the m(m-1)/2 pairs of systems, with C concordant and D discordant pairs, n0 the
    number of pairs and t_x, t_y the pairs tied in each scoring:

        tau_b = (C - D) / sqrt((n0 - t_x) (n0 - t_y))

    Undefined when every system ties in either scoring. Scores within :data:`TIE` tie.

    Kendall, M. G. (1945). The treatment of ties in ranking problems. Biometrika 33(3),
    239-251; agrees with ``scipy.stats.kendalltau`` (variant 'b').
    """
    if set(first) != set(second):
        missing = sorted(set(first) ^ set(second))
        raise ConfigError(f"both rankings must score the same systems; differ on {missing}")
    systems = sorted(first)
    if len(systems) < 2:
        raise ConfigError(f"tau needs at least two systems, got {len(systems)}")
    x = np.array([[first[name]] for name in systems], dtype=np.float64)
    y = np.array([[second[name]] for name in systems], dtype=np.float64)
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ConfigError("system scores must be finite")
    return _tau_from(float(_tau_b(x, y)[0]), len(systems))


def tau_interval(
    first: FloatArray,
    second: FloatArray,
    resamples: int = 10_000,
    seed: int = 0,
    level: float = 0.95,
) -> TauInterval:
    """Tau-b between the systems' mean scores under two labellings, with a percentile
    bootstrap interval over queries.

    ``first`` and ``second`` are systems x queries: each system's per-query score under
    the first labels (people) and under the second (the judge), the same queries in the
    same columns. A resample draws the queries with replacement, the same draw for every
    system and both labellings (a query's scores stay together, so the correlation between
    systems and between labellings on a query is kept); each system's mean over the drawn
    queries ranks it; tau-b compares the two rankings. The interval covers the variation
    from which queries were sampled, not from the judge's own randomness.

    Efron, B. & Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 13.
    """
    check_resamples(resamples, level)
    first = np.asarray(first, dtype=np.float64)
    second = np.asarray(second, dtype=np.float64)
    if first.ndim != 2 or first.shape != second.shape:
        raise ConfigError(
            f"per-query scores must be systems x queries, the same shape for both labellings; "
            f"got {first.shape} and {second.shape}"
        )
    systems, queries = first.shape
    if systems < 2:
        raise ConfigError(f"tau needs at least two systems, got {systems}")
    if queries < 2:
        raise ConfigError(f"a bootstrap over queries needs at least two queries, got {queries}")
    if not (np.all(np.isfinite(first)) and np.all(np.isfinite(second))):
        raise ConfigError("per-query scores must be finite")
    point = _tau_from(
        float(_tau_b(first.mean(axis=1)[:, None], second.mean(axis=1)[:, None])[0]), systems
    )
    taus = None
    if point.value is not None:
        rng = np.random.default_rng(seed)
        means = bootstrap_means(np.vstack([first, second]), resamples, rng)
        taus = _tau_b(means[:systems], means[systems:])
    return TauInterval(point, _percentile(taus, level, resamples, seed, "queries"))
