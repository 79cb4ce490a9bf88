"""How much of a ranking the judgments cover: judged non-relevant and unjudged documents."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from recallbench.measures._measure import Measure, register
from recallbench.measures._table import FloatArray, RankTable
from recallbench.measures._trec_extra import kinds
from recallbench.measures.counts import _Count


@register
@dataclass(frozen=True)
class NumNonrelevantJudgedRetrieved(_Count):
    """num_nonrel_judged_ret: returned documents judged non-relevant, summed over queries.

    Counts returned documents with a judged grade from 0 up to (not including) the
    relevance level; unjudged documents and negative grades (pooled but unjudged) are not
    counted (trec_eval ``num_nonrel_judged_ret``; Voorhees and Harman, *TREC: Experiment and
    Evaluation in Information Retrieval*, 2005).
    """

    name = "num_nonrel_judged_ret"
    aliases = ("num_nonrel_ret",)
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"num_nonrel_judged_ret": ()}
    summary = "Number of returned documents judged non-relevant."

    def compute(self, table: RankTable) -> FloatArray:
        return table.per_query_count(kinds(table).nonrelevant).astype(np.float64)


@register
@dataclass(frozen=True)
class Unjudged(Measure):
    """unj@k: share of the top k ranks holding an unjudged document.

    ``unj@k = |unjudged documents at ranks 1..k| / k``, k even when fewer were returned (the
    missing ranks count as judged). A document is unjudged when the qrels lack it or give it
    a negative grade (pooled but unjudged); a repeated document counts as unjudged. A "red
    flag" for poorly covered runs (trec_eval ``unj.k``; Sakai and Kando, "On information
    retrieval metrics designed for evaluation with incomplete relevance assessments",
    Information Retrieval 11(5), 2008).
    """

    name = "unj"
    aliases = ("unjudged",)
    cutoff_required = True
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"unj": ("5", "10", "20")}
    summary = "Unjudged documents in the top k divided by k (k even when fewer were returned)."

    def compute(self, table: RankTable) -> FloatArray:
        assert self.cutoff is not None  # guaranteed by cutoff_required
        # unjudged = ranks returned within the top k minus judged (grade >= 0) ones there
        shown = np.minimum(table.num_ret, self.cutoff)
        judged = table.per_query_count((table.grade >= 0) & (table.rank < self.cutoff))
        result: FloatArray = (shown - judged) / self.cutoff
        return result
