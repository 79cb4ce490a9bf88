"""Binary preference (bpref) and its geometric mean over queries (gm_bpref)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from recallbench.measures._measure import Measure, register
from recallbench.measures._table import FloatArray, RankTable
from recallbench.measures._trec_extra import (
    MIN_GEO_MEAN,
    geometric_mean,
    judged_nonrelevant,
    kinds,
)


def bpref_values(table: RankTable) -> FloatArray:
    """bpref of every query of ``table``."""
    kind = kinds(table)
    nonrel_above = table.running_count(kind.nonrelevant)[kind.relevant]
    query = table.query[kind.relevant]
    num_rel = table.num_rel[query]
    denominator = np.minimum(judged_nonrelevant(table)[query], num_rel).astype(np.float64)
    penalty = np.divide(
        np.minimum(nonrel_above, num_rel),
        denominator,
        out=np.zeros(len(query)),
        where=nonrel_above > 0,
    )
    total = np.bincount(query, weights=1.0 - penalty, minlength=table.num_queries).astype(
        np.float64
    )
    return np.divide(total, table.num_rel, out=np.zeros_like(total), where=table.num_rel > 0)


@register
@dataclass(frozen=True)
class BPref(Measure):
    """bpref: how often the retrieved relevant documents precede judged non-relevant ones.

    ``bpref = (1/R) * sum_{r relevant retrieved} (1 - min(n_r, R) / min(N, R))`` where R is
    the number of relevant documents, N the number of judged non-relevant documents and
    n_r the number of judged non-relevant documents ranked above r; a term is 1 when
    n_r = 0, and bpref is 0 when R = 0. Unjudged documents (and those with a negative grade,
    pooled but unjudged) are ignored entirely (trec_eval ``bpref``; Buckley and Voorhees,
    "Retrieval evaluation with incomplete information", SIGIR 2004).
    """

    name = "bpref"
    cutoff_allowed = False
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"bpref": ()}
    summary = (
        "Mean over relevant documents of 1 - (judged non-relevant documents ranked above it, "
        "at most R) / min(judged non-relevant, R); unjudged documents are ignored."
    )

    def definition(self) -> str:
        return self.summary

    def compute(self, table: RankTable) -> FloatArray:
        return bpref_values(table)


@register
@dataclass(frozen=True)
class GeometricBPref(Measure):
    """gm_bpref: bpref per query, combined by a geometric mean over queries.

    ``gm_bpref = exp(mean_q log(max(bpref_q, 1e-5)))`` (trec_eval ``gm_bpref``, printed
    only over all queries; bpref from Buckley and Voorhees, SIGIR 2004, geometric mean as
    in Robertson, "On GMAP", CIKM 2006).
    """

    name = "gm_bpref"
    cutoff_allowed = False
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"gm_bpref": ()}
    shown_per_query = False
    summary = f"Geometric mean over queries of bpref (each floored at {MIN_GEO_MEAN:g})."

    def definition(self) -> str:
        return self.summary

    def compute(self, table: RankTable) -> FloatArray:
        return bpref_values(table)

    def aggregate(self, values: FloatArray) -> float:
        return geometric_mean(values)
