"""Ranking measures on one vectorised engine.

Each measure lives in its own module with its formula and citation; importing this package
registers them all, so ``parse_measure("ndcg@10")`` works.
"""

from recallbench.measures._autoload import load_measure_modules
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

load_measure_modules()

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
