"""Counts: queries, retrieved, relevant, relevant retrieved (trec_eval num_*)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from recallbench.measures._measure import Measure, register
from recallbench.measures._table import FloatArray, RankTable


@dataclass(frozen=True)
class _Count(Measure):
    """A per-query count whose aggregate is the sum over queries."""

    cutoff_allowed = False
    integer = True

    def definition(self) -> str:
        return self.summary

    def aggregate(self, values: FloatArray) -> float:
        return float(values.sum())


@register
@dataclass(frozen=True)
class NumQueries(_Count):
    """num_q: the number of queries evaluated (1 per query; summed) (trec_eval ``num_q``)."""

    name = "num_q"
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"num_q": ()}
    shown_per_query = False
    summary = "Number of queries evaluated."

    def compute(self, table: RankTable) -> FloatArray:
        return np.ones(table.num_queries)


@register
@dataclass(frozen=True)
class NumRetrieved(_Count):
    """num_ret: documents returned for the query (after -M), summed (trec_eval ``num_ret``)."""

    name = "num_ret"
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"num_ret": ()}
    summary = "Number of documents returned."

    def compute(self, table: RankTable) -> FloatArray:
        return table.num_ret.astype(np.float64)


@register
@dataclass(frozen=True)
class NumRelevant(_Count):
    """num_rel: judged documents with grade >= the level, summed (trec_eval ``num_rel``)."""

    name = "num_rel"
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"num_rel": ()}
    summary = "Number of relevant judged documents."

    def compute(self, table: RankTable) -> FloatArray:
        return table.num_rel.astype(np.float64)


@register
@dataclass(frozen=True)
class NumRelevantRetrieved(_Count):
    """num_rel_ret: relevant documents returned, summed (trec_eval ``num_rel_ret``)."""

    name = "num_rel_ret"
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"num_rel_ret": ()}
    summary = "Number of relevant documents returned."

    def compute(self, table: RankTable) -> FloatArray:
        return table.per_query_count(table.relevant).astype(np.float64)
