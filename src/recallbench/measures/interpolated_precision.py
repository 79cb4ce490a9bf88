"""Interpolated precision at recall levels, and its average over levels (11-point average)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from recallbench.core import UnknownMeasureError
from recallbench.measures._fraction import FractionMeasure
from recallbench.measures._measure import Measure, register
from recallbench.measures._table import (
    BoolArray,
    FloatArray,
    IntArray,
    RankTable,
    distinct_inverse,
)
from recallbench.measures._trec_extra import kinds, lround, parse_floats, two_decimals

ELEVEN_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""The standard recall levels of the recall-precision graph."""


def _best_below(table: RankTable) -> tuple[IntArray, FloatArray]:
    """For each relevant returned document (query order, then rank): its query, and the
    best precision at its rank or below."""
    hits = kinds(table).relevant
    query = table.query[hits]
    found = table.running_count(hits)[hits]
    precision = found / (table.rank[hits] + 1.0)
    # A running maximum over the reversed array, kept within each query by offsetting the
    # (exact, integer) order of the values.
    distinct, order = distinct_inverse(precision)
    offset = (table.num_queries - query[::-1]) * (len(distinct) + 1)
    best: FloatArray = distinct[(np.maximum.accumulate(order[::-1] + offset) - offset)[::-1]]
    return query, best


def interpolated_precision(table: RankTable, levels: Sequence[float]) -> FloatArray:
    """Interpolated precision of every query at every recall level: shape (levels, queries).

    At level x the value is the best precision at any rank at or below the rank where the
    query's ``lround(x * R)``-th relevant document is found (the first one when that is 0);
    0 when the system found fewer relevant documents than that.
    """
    query, best_below = table.memo("iprec.best_below", lambda: _best_below(table))
    rel_ret = np.bincount(query, minlength=table.num_queries)
    starts = np.cumsum(rel_ret) - rel_ret
    wanted = np.maximum(lround(np.multiply.outer(np.asarray(levels), table.num_rel)), 1)
    reached = wanted <= rel_ret
    index = np.where(reached, starts + wanted - 1, 0)
    values = np.zeros(wanted.shape)
    if len(best_below):
        values = np.where(reached, best_below[index], 0.0)
    return values


def undefined_when_empty(table: RankTable, levels: Sequence[float]) -> BoolArray:
    """Where trec_eval's interpolated precision is NaN, shape (levels, queries): it starts
    from the precision num_rel_ret / num_ret, 0/0 for an empty ranking (all of it removed by
    ``-J``), and keeps that at every level needing no relevant document (round(x * R) = 0).
    Only ``recallbench evaluate`` reproduces it; elsewhere an empty ranking scores 0."""
    needed = lround(np.multiply.outer(np.asarray(levels), table.num_rel))
    result: BoolArray = (table.num_ret == 0) & (needed == 0)
    return result


def _check_level(level: float, what: str) -> float:
    if not 0.0 <= level <= 1.0:
        raise UnknownMeasureError(f"{what}: recall level {level} is not between 0 and 1")
    return level


@register
@dataclass(frozen=True)
class InterpolatedPrecision(FractionMeasure):
    """iprec_at_recall@x: interpolated precision at recall level x.

    With R relevant documents and c = round(x * R) (halves up; at least 1), the value is
    ``max_{k >= c} k / rank_k`` where rank_k is the rank of the k-th relevant document
    retrieved: the best precision at or after reaching c relevant documents. 0 when fewer
    than c were retrieved (trec_eval ``iprec_at_recall.x``; Manning, Raghavan and Schütze,
    *Introduction to Information Retrieval*, 2008, §8.4).
    """

    level: float = 0.0

    name = "iprec_at_recall"
    aliases = ("iprec",)
    parameter = "level"
    parameter_text = "a recall level"
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {
        "iprec_at_recall": tuple(f"{x:.2f}" for x in ELEVEN_POINTS)
    }
    summary = "Highest precision at any rank where recall is at least the given level."

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_level(self.level, self.name)

    def compute(self, table: RankTable) -> FloatArray:
        values: FloatArray = interpolated_precision(table, [self.level])[0]
        return values


@register
@dataclass(frozen=True)
class InterpolatedPrecisionAverage(Measure):
    """iprec_avg: interpolated precision averaged over recall levels (11-point average).

    ``iprec_avg = mean_{x in levels} iprec_at_recall@x``, by default over the 11 levels
    0, 0.1, ..., 1 (trec_eval ``11pt_avg``; Salton and McGill, *Introduction to Modern
    Information Retrieval*, 1983). ``iprec_avg@0.2,0.5,0.8`` is the old 3-point average.
    """

    levels: tuple[float, ...] = ELEVEN_POINTS
    trec_params: str | None = field(default=None, compare=False)
    """trec_eval's parameter text as given (it prints it verbatim in the label)."""

    name = "iprec_avg"
    aliases = ("eleven_pt_avg",)
    cutoff_allowed = False
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"11pt_avg": ()}
    trec_params_whole = True
    summary = "Mean of the interpolated precision at the given recall levels."

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.levels:
            raise UnknownMeasureError(f"{self.name} needs at least one recall level")
        for level in self.levels:
            _check_level(level, self.name)

    def _levels_text(self) -> str:
        return ",".join(two_decimals(level) for level in self.levels)

    def __str__(self) -> str:
        if self.levels == ELEVEN_POINTS:
            return self.name
        return f"{self.name}@{self._levels_text()}"

    def trec_label(self) -> str:
        if self.trec_params is not None:
            return f"11pt_avg_{self.trec_params}"
        return "11pt_avg" if self.levels == ELEVEN_POINTS else f"11pt_avg_{self._levels_text()}"

    def definition(self) -> str:
        return f"{self.summary} Levels {self._levels_text()}."

    @classmethod
    def from_argument(cls, argument: str | None) -> Measure:
        if argument is None:
            return cls()
        return cls(levels=parse_floats(argument, f"measure {cls.name}@{argument}"))

    @classmethod
    def from_trec_argument(cls, argument: str) -> Measure:
        levels = parse_floats(argument, f"trec_eval measure 11pt_avg.{argument}")
        return cls(levels=levels, trec_params=argument)

    def compute(self, table: RankTable) -> FloatArray:
        # Added from the last level to the first, as m_11pt_avg.c walks its (ascending)
        # levels while it goes up the ranking: float addition depends on the order.
        total = np.zeros(table.num_queries)
        for row in interpolated_precision(table, self.levels)[::-1]:
            total += row
        values: FloatArray = total / len(self.levels)
        return values
