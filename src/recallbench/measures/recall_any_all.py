"""LongMemEval's retrieval measures: recall_any@k and recall_all@k."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recallbench.measures._measure import Measure, register
from recallbench.measures._table import FloatArray, RankTable


@register
@dataclass(frozen=True)
class RecallAny(Measure):
    """recall_any@k: 1 when at least one relevant memory is in the top k, else 0.

    ``recall_any@k = 1[|Rel ∩ top_k| >= 1]``, LongMemEval's ``recall_any`` (Wu et al.,
    "LongMemEval", ICLR 2025, ``src/retrieval/eval_utils.py``). The same value as hit@k.
    Unlike IR recall@k = |Rel ∩ top_k| / |Rel|, it does not grow with each further relevant
    memory found: a question whose answer needs three sessions scores 1 with one of them.
    """

    name = "recall_any"
    kind = "exact"
    cutoff_required = True
    summary = "1 when any relevant memory is in the top k (LongMemEval), else 0."

    def compute(self, table: RankTable) -> FloatArray:
        found = table.per_query_count(table.relevant & (table.rank < self.depth))
        return (found > 0).astype(np.float64)


@register
@dataclass(frozen=True)
class RecallAll(Measure):
    """recall_all@k: 1 when every relevant memory is in the top k, else 0.

    ``recall_all@k = 1[Rel ⊆ top_k]``, LongMemEval's ``recall_all`` (Wu et al., ICLR 2025,
    ``src/retrieval/eval_utils.py``); the paper's "Recall@k" column. Upstream gives 1 to a
    question with no relevant memory (``all`` of an empty list); here such a question has
    no value in the means at all (DESIGN §4), so that vacuous 1 never inflates a mean.
    Always <= recall@k <= recall_any@k on the same query.
    """

    name = "recall_all"
    kind = "exact"
    cutoff_required = True
    summary = "1 when every relevant memory is in the top k (LongMemEval), else 0."

    def compute(self, table: RankTable) -> FloatArray:
        found = table.per_query_count(table.relevant & (table.rank < self.depth))
        return ((found >= table.num_rel) & (table.num_rel > 0)).astype(np.float64)
