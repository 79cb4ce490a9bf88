"""Geometric mean average precision (GMAP)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from recallbench.measures._measure import Measure, register
from recallbench.measures._table import FloatArray, RankTable
from recallbench.measures._trec_extra import MIN_GEO_MEAN, geometric_mean
from recallbench.measures.average_precision import AveragePrecision


@register
@dataclass(frozen=True)
class GeometricMAP(Measure):
    """gm_map: average precision per query, combined by a geometric mean over queries.

    Per query the value is AP (see ``map``); over queries
    ``GMAP = exp(mean_q log(max(AP_q, 1e-5)))``, the floor 1e-5 keeping a query with AP = 0
    from zeroing the mean. It rewards systems that do reasonably on every query over those
    that excel on some and fail on others (trec_eval ``gm_map``, printed only over all
    queries; Robertson, "On GMAP: and other transformations", CIKM 2006).
    """

    name = "gm_map"
    aliases = ("gmap",)
    cutoff_allowed = False
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"gm_map": ()}
    shown_per_query = False
    summary = (
        f"Geometric mean over queries of average precision (each floored at {MIN_GEO_MEAN:g})."
    )

    def definition(self) -> str:
        return self.summary

    def compute(self, table: RankTable) -> FloatArray:
        return AveragePrecision().compute(table)

    def aggregate(self, values: FloatArray) -> float:
        return geometric_mean(values)
