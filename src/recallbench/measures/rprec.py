"""R-precision."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from recallbench.measures._measure import Measure, register
from recallbench.measures._table import FloatArray, RankTable


@register
@dataclass(frozen=True)
class RPrecision(Measure):
    """rprec: precision at rank R, R being the query's number of relevant documents.

    ``R-prec = |{relevant documents at ranks 1..R}| / R``; 0 when R = 0 (trec_eval
    ``Rprec``; Buckley and Voorhees, "Evaluating evaluation measure stability", SIGIR 2000).
    """

    name = "rprec"
    aliases = ("r-prec", "r_prec", "r-precision")
    cutoff_allowed = False
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"Rprec": ()}
    summary = "Precision at rank R, where R is the number of relevant documents of the query."

    def definition(self) -> str:
        return self.summary

    def compute(self, table: RankTable) -> FloatArray:
        found = table.per_query_sum(
            1.0, where=table.relevant & (table.rank < table.num_rel[table.query])
        )
        return np.divide(found, table.num_rel, out=np.zeros_like(found), where=table.num_rel > 0)
