"""Ranking measures on one vectorised engine.

Each measure lives in its own module with its formula and citation. Modules are imported
when a measure of theirs is first parsed (``parse_measure("ndcg@10")`` imports
``ndcg``; :mod:`._catalog` says which module defines which name), and the public names
below on first use (PEP 562): `recallbench evaluate -m ndcg_cut.10` then loads neither
the other measures nor the agent-memory ones and the dataset models they need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recallbench._lazy import lazy_exports

if TYPE_CHECKING:
    from recallbench.measures._evaluate import Evaluation, Rules, evaluate
    from recallbench.measures._measure import (
        Measure,
        measure_families,
        parse_measure,
        parse_measures,
        register,
    )
    from recallbench.measures._table import RankTable, build_table
    from recallbench.measures.average_precision import AveragePrecision
    from recallbench.measures.hit import HitRate
    from recallbench.measures.ndcg import NDCG, NDCGExp
    from recallbench.measures.precision import Precision
    from recallbench.measures.recall import Recall
    from recallbench.measures.reciprocal_rank import ReciprocalRank
    from recallbench.measures.rprec import RPrecision

DEFAULT_MEASURES = (
    "mrr@5",
    "mrr@10",
    "ndcg@5",
    "ndcg@10",
    "ndcg@20",
    "recall@5",
    "recall@10",
    "P@3",
)
"""The measures `recallbench run` reports when none are given."""

__all__ = [
    "DEFAULT_MEASURES",
    "NDCG",
    "AveragePrecision",
    "Evaluation",
    "HitRate",
    "Measure",
    "NDCGExp",
    "Precision",
    "RPrecision",
    "RankTable",
    "Recall",
    "ReciprocalRank",
    "Rules",
    "build_table",
    "evaluate",
    "measure_families",
    "parse_measure",
    "parse_measures",
    "register",
]

__getattr__ = lazy_exports(
    __name__,
    (
        "_evaluate",
        "_measure",
        "_table",
        "average_precision",
        "hit",
        "ndcg",
        "precision",
        "recall",
        "reciprocal_rank",
        "rprec",
    ),
    [name for name in __all__ if name != "DEFAULT_MEASURES"],
)
