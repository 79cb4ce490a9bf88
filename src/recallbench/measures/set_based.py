"""Set-based measures: the returned documents taken as an unordered set (trec_eval set_*)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from recallbench.core import UnknownMeasureError
from recallbench.measures._measure import Measure, register
from recallbench.measures._table import FloatArray, RankTable
from recallbench.measures._trec_extra import kinds, parse_float, shortest


def _ratio(numerator: FloatArray, denominator: FloatArray) -> FloatArray:
    """``numerator / denominator``, 0 where the denominator is 0."""
    return np.divide(numerator, denominator, out=np.zeros_like(numerator), where=denominator > 0)


def _relevant_retrieved(table: RankTable) -> FloatArray:
    return table.per_query_count(kinds(table).relevant).astype(np.float64)


@dataclass(frozen=True)
class _SetMeasure(Measure):
    """A measure of the whole returned set: no cutoff (trec_eval's ``-M`` bounds the set)."""

    cutoff_allowed = False

    def definition(self) -> str:
        return f"{self.summary} Computed over every returned document."


@register
@dataclass(frozen=True)
class SetPrecision(_SetMeasure):
    """set_P: precision of the whole returned set.

    ``set_P = |relevant returned| / |returned|``, 0 when nothing was returned. Unlike P@k the
    denominator is the number returned, not a fixed k (trec_eval ``set_P``; Manning,
    Raghavan and Schütze, *Introduction to Information Retrieval*, 2008, §8.3).
    """

    name = "set_P"
    aliases = ("set_precision",)
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"set_P": ()}
    summary = "Relevant documents returned divided by the number of documents returned."

    def compute(self, table: RankTable) -> FloatArray:
        return _ratio(_relevant_retrieved(table), table.num_ret.astype(np.float64))


@register
@dataclass(frozen=True)
class SetRecall(_SetMeasure):
    """set_recall: recall of the whole returned set.

    ``set_recall = |relevant returned| / R`` with R the query's relevant judged documents,
    0 when R = 0 (trec_eval ``set_recall``; Manning, Raghavan and Schütze, *Introduction to
    Information Retrieval*, 2008, §8.3).
    """

    name = "set_recall"
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"set_recall": ()}
    summary = "Relevant documents returned divided by the number of relevant documents."

    def compute(self, table: RankTable) -> FloatArray:
        return _ratio(_relevant_retrieved(table), table.num_rel.astype(np.float64))


@register
@dataclass(frozen=True)
class SetRelativePrecision(_SetMeasure):
    """set_relative_P: set precision relative to the best possible for a set of that size.

    ``set_relative_P = |relevant returned| / min(|returned|, R)``, 0 when nothing was
    returned or R = 0 (trec_eval ``set_relative_P``, formerly ``exact_relative_prec``;
    Buckley and Voorhees, "Retrieval System Evaluation", in *TREC: Experiment and Evaluation
    in IR*, 2005).
    """

    name = "set_relative_P"
    aliases = ("set_relative_precision",)
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"set_relative_P": ()}
    summary = "Relevant documents returned divided by the most that a set of that size could hold."

    def compute(self, table: RankTable) -> FloatArray:
        best = np.minimum(table.num_ret, table.num_rel).astype(np.float64)
        return _ratio(_relevant_retrieved(table), best)


@register
@dataclass(frozen=True)
class SetMAP(_SetMeasure):
    """set_map: unranked average precision, set precision times set recall.

    ``set_map = |relevant returned|^2 / (|returned| * R)``: every relevant document returned
    scores the set precision, every one missed scores 0; 0 when nothing was returned or
    R = 0 (trec_eval ``set_map``, formerly ``exact_unranked_avg_prec``; Buckley and
    Voorhees, "Retrieval System Evaluation", in *TREC: Experiment and Evaluation in IR*,
    2005).
    """

    name = "set_map"
    aliases = ("set_ap",)
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"set_map": ()}
    summary = "Set precision times set recall (average precision of an unranked set)."

    def compute(self, table: RankTable) -> FloatArray:
        found = _relevant_retrieved(table)
        return _ratio(found * found, (table.num_ret * table.num_rel).astype(np.float64))


@register
@dataclass(frozen=True)
class SetF(_SetMeasure):
    """set_F: weighted harmonic mean of set precision and set recall.

    ``set_F = (x + 1) * P * R / (x * P + R)`` with P = set_P, R = set_recall and x the
    weight of recall relative to precision (x = beta^2 of F_beta; default 1, the F1
    measure); 0 when no relevant document was returned. ``set_F@0.5`` sets x (trec_eval
    ``set_F.x``; van Rijsbergen, *Information Retrieval*, 2nd ed., 1979, ch. 7).
    """

    recall_weight: float = 1.0
    trec_params: str | None = field(default=None, compare=False)
    """trec_eval's parameter text as given (it prints it verbatim in the label)."""

    name = "set_F"
    aliases = ("set_f1",)
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"set_F": ()}
    trec_params_whole = True
    summary = "Weighted harmonic mean of set precision and set recall."

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.recall_weight >= 0.0:
            raise UnknownMeasureError(
                f"{self.name}: the recall weight must be at least 0, got {self.recall_weight}"
            )

    def __str__(self) -> str:
        if self.recall_weight == 1.0:
            return self.name
        return f"{self.name}@{shortest(self.recall_weight)}"

    def trec_label(self) -> str:
        if self.trec_params is not None:
            return f"set_F_{self.trec_params}"
        return "set_F" if self.recall_weight == 1.0 else f"set_F_{shortest(self.recall_weight)}"

    def definition(self) -> str:
        return (
            f"{self.summary} Recall weighs {shortest(self.recall_weight)} times precision. "
            "Computed over every returned document."
        )

    @classmethod
    def from_argument(cls, argument: str | None) -> Measure:
        if argument is None:
            return cls()
        return cls(recall_weight=parse_float(argument, f"measure {cls.name}@{argument}"))

    @classmethod
    def from_trec_argument(cls, argument: str) -> Measure:
        # trec_eval reads comma-separated numbers and uses the first.
        first = argument.split(",")[0].strip()
        weight = parse_float(first, f"trec_eval measure set_F.{argument}")
        return cls(recall_weight=weight, trec_params=argument)

    def compute(self, table: RankTable) -> FloatArray:
        found = _relevant_retrieved(table)
        precision = _ratio(found, table.num_ret.astype(np.float64))
        recall = _ratio(found, table.num_rel.astype(np.float64))
        x = self.recall_weight
        return _ratio((x + 1.0) * precision * recall, x * precision + recall)
