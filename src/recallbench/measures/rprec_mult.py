"""Precision at multiples of R."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from recallbench.core import UnknownMeasureError
from recallbench.measures._fraction import FractionMeasure
from recallbench.measures._measure import register
from recallbench.measures._table import FloatArray, RankTable
from recallbench.measures._trec_extra import kinds

DEFAULT_MULTIPLES = tuple(f"{m / 10:.2f}" for m in range(2, 21, 2))
"""trec_eval's default multiples: 0.2, 0.4, ..., 2.0."""


@register
@dataclass(frozen=True)
class RPrecisionMultiple(FractionMeasure):
    """rprec_mult@m: precision at rank n = floor(m * R + 0.9), R the relevant documents.

    ``rprec_mult@m = |{relevant documents at ranks 1..n}| / n`` (n counted even beyond the
    documents returned), 0 when n = 0; ``rprec_mult@1`` is R-precision. Comparing low and
    high multiples shows whether a system is precision or recall oriented (trec_eval
    ``Rprec_mult.m``; Buckley and Voorhees, "Evaluating evaluation measure stability",
    SIGIR 2000, for R-precision).
    """

    multiple: float = 1.0

    name = "rprec_mult"
    aliases = ("r-prec_mult",)
    parameter = "multiple"
    parameter_text = "a multiple of R"
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"Rprec_mult": DEFAULT_MULTIPLES}
    summary = "Precision at rank m * R (rounded as trec_eval: floor(m * R + 0.9))."

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.multiple > 0:
            raise UnknownMeasureError(f"{self.name}: multiple {self.multiple} must be positive")

    def compute(self, table: RankTable) -> FloatArray:
        depth: FloatArray = np.floor(self.multiple * table.num_rel + 0.9)
        hits = kinds(table).relevant & (table.rank < depth[table.query])
        found = table.per_query_sum(1.0, where=hits)
        return np.divide(found, depth, out=np.zeros_like(found), where=depth > 0)
