"""Inferred average precision (infAP) for sampled judgment pools."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from recallbench.measures._measure import Measure, register
from recallbench.measures._table import FloatArray, RankTable
from recallbench.measures._trec_extra import kinds

EPSILON = 1e-5
"""trec_eval's ``INFAP_EPSILON``, smoothing the estimated precision above a document."""


@register
@dataclass(frozen=True)
class InferredAP(Measure):
    """infap: average precision estimated from a randomly sampled judgment pool.

    Documents are relevant, judged non-relevant, pooled but unjudged (a negative grade in
    the qrels) or outside the pool (no judgment). For a relevant document at rank k > 1 with
    r relevant, n judged non-relevant and u pooled-unjudged documents above it::

        term = 1/k + ((k-1)/k) * ((r + n + u)/(k-1)) * ((r + eps)/(r + n + 2 eps))

    (1 at rank 1); ``infAP = sum(term) / R``, 0 when R = 0, with eps = 1e-5: documents above
    outside the pool count as non-relevant, the pooled ones are assumed relevant at the
    judged rate (trec_eval ``infAP``; Yilmaz and Aslam, "Estimating average precision with
    incomplete and imperfect judgments", CIKM 2006).
    """

    name = "infap"
    aliases = ("inferred_ap",)
    cutoff_allowed = False
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"infAP": ()}
    summary = (
        "Average precision inferred from a sampled pool: precision above each relevant "
        "document estimated from the judged documents, unpooled ones counted non-relevant."
    )

    def definition(self) -> str:
        return self.summary

    def compute(self, table: RankTable) -> FloatArray:
        kind = kinds(table)
        hits = kind.relevant
        rel_above = (table.running_count(hits)[hits] - 1).astype(np.float64)
        nonrel_above = table.running_count(kind.nonrelevant)[hits].astype(np.float64)
        pooled_above = table.running_count(kind.unjudged)[hits].astype(np.float64)
        above = table.rank[hits].astype(np.float64)
        seen = np.divide(
            rel_above + nonrel_above + pooled_above,
            above,
            out=np.zeros_like(above),
            where=above > 0,
        )
        judged_rate = (rel_above + EPSILON) / (rel_above + nonrel_above + 2 * EPSILON)
        term = 1.0 / (above + 1.0) + (above / (above + 1.0)) * seen * judged_rate
        term[above == 0] = 1.0
        total = np.bincount(table.query[hits], weights=term, minlength=table.num_queries).astype(
            np.float64
        )
        return np.divide(total, table.num_rel, out=np.zeros_like(total), where=table.num_rel > 0)
