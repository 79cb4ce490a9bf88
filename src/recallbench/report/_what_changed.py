"""What changed from one system (or run) to another on the same queries: which queries got
worse, which got better, by how much, grouped by category.

A pure function over the two per-query values of one measure and the queries' categories;
comparison.html, comparison.md and the dashboard show its result. It says *where* the mean
difference comes from; whether the mean difference is significant is the paired test of
:mod:`recallbench.compare`.

A query is compared when both values are numbers (None, NaN or a missing id: the query is
not in the measure's population on that side, or was not scored; it is counted, never
turned into 0). Its difference is ``Δ = second - first``; it *got worse* when Δ is against
the measure's direction by more than ``threshold`` (and more than the tie tolerance of the
paired statistics), *better* when Δ is in the direction by more than that, else it is
unchanged. A query in several categories counts in each; one in none counts under
:data:`UNCATEGORISED`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from recallbench.stats._paired import TIE

UNCATEGORISED = "(no category)"
"""The group of queries without a category."""


@dataclass(frozen=True, slots=True)
class QueryChange:
    """One query whose value changed beyond the threshold."""

    query_id: str
    delta: float
    """``second - first`` (in the measure's units, whatever its direction)."""
    first: float
    second: float
    categories: tuple[str, ...]
    """The query's categories, as given (empty when it has none)."""


@dataclass(frozen=True, slots=True)
class CategoryChange:
    """The compared queries of one category."""

    category: str
    compared: int
    """Queries of the category with a value on both sides."""
    worse: int
    better: int
    unchanged: int
    mean_delta: float | None
    """Mean Δ over the compared queries (None when none is compared)."""
    worse_delta: float | None
    """Mean Δ over the queries that got worse (None when none did)."""
    better_delta: float | None
    """Mean Δ over the queries that got better (None when none did)."""


@dataclass(frozen=True, slots=True)
class WhatChanged:
    """The per-query changes from ``first`` to ``second``."""

    worse: tuple[QueryChange, ...]
    """Queries that got worse, largest |Δ| first (ties by query id)."""
    better: tuple[QueryChange, ...]
    """Queries that got better, largest |Δ| first (ties by query id)."""
    unchanged: int
    """Compared queries with |Δ| within the threshold."""
    compared: int
    """Queries with a value on both sides."""
    only_first: tuple[str, ...]
    """Queries with a value in ``first`` only (sorted)."""
    only_second: tuple[str, ...]
    """Queries with a value in ``second`` only (sorted)."""
    categories: tuple[CategoryChange, ...]
    """Per category, most queries worse first (then mean Δ against the direction, then
    name)."""
    mean_delta: float | None
    """Mean Δ over the compared queries (None when none is compared)."""
    higher_is_better: bool
    threshold: float


def what_changed(
    first: Mapping[str, float | None],
    second: Mapping[str, float | None],
    categories: Mapping[str, Sequence[str]],
    higher_is_better: bool = True,
    threshold: float = 0.0,
) -> WhatChanged:
    """Queries that got worse and better from ``first`` to ``second`` (query id -> value of
    one measure), grouped by ``categories`` (query id -> its categories).

    ``threshold`` (>= 0, in the measure's units) is the smallest |Δ| that counts as a
    change. Raises ValueError for a negative or non-finite threshold.
    """
    if not math.isfinite(threshold) or threshold < 0:
        raise ValueError(f"threshold must be a finite number >= 0, not {threshold!r}")
    limit = max(threshold, TIE)
    sign = 1.0 if higher_is_better else -1.0
    worse: list[QueryChange] = []
    better: list[QueryChange] = []
    unchanged = 0
    deltas: list[float] = []
    groups: dict[str, list[tuple[float, int]]] = {}
    """Category -> (Δ, -1 worse / 0 unchanged / 1 better) of each compared query."""
    only_first = sorted(q for q, v in first.items() if _number(v) and not _number(second.get(q)))
    only_second = sorted(q for q, v in second.items() if _number(v) and not _number(first.get(q)))
    for query, a in first.items():
        b = second.get(query)
        if a is None or b is None or not (_number(a) and _number(b)):
            continue
        delta = b - a
        deltas.append(delta)
        signed = sign * delta
        kind = 1 if signed > limit else -1 if signed < -limit else 0
        cats = tuple(categories.get(query, ()))
        if kind:
            (better if kind > 0 else worse).append(QueryChange(query, delta, a, b, cats))
        else:
            unchanged += 1
        for category in cats or (UNCATEGORISED,):
            groups.setdefault(category, []).append((delta, kind))
    per_category = sorted(
        (_category(name, rows) for name, rows in groups.items()),
        key=lambda c: (-c.worse, sign * (c.mean_delta or 0.0), c.category),
    )
    return WhatChanged(
        worse=tuple(sorted(worse, key=_by_size)),
        better=tuple(sorted(better, key=_by_size)),
        unchanged=unchanged,
        compared=len(deltas),
        only_first=tuple(only_first),
        only_second=tuple(only_second),
        categories=tuple(per_category),
        mean_delta=_mean(deltas),
        higher_is_better=higher_is_better,
        threshold=threshold,
    )


def _by_size(change: QueryChange) -> tuple[float, str]:
    return -abs(change.delta), change.query_id


def _number(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _category(name: str, rows: Sequence[tuple[float, int]]) -> CategoryChange:
    worse = [d for d, kind in rows if kind < 0]
    better = [d for d, kind in rows if kind > 0]
    return CategoryChange(
        category=name,
        compared=len(rows),
        worse=len(worse),
        better=len(better),
        unchanged=len(rows) - len(worse) - len(better),
        mean_delta=_mean([d for d, _ in rows]),
        worse_delta=_mean(worse),
        better_delta=_mean(better),
    )
