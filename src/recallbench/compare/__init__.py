"""Comparing systems on the same queries: paired statistics, breakdowns, rank differences.
Its views (terminal, comparison.md, comparison.html) are in :mod:`recallbench.render`."""

from recallbench.compare._build import build_comparison, pick_baseline
from recallbench.compare._inputs import (
    MISSING_POLICIES,
    Compared,
    MissingPolicy,
    load_compared,
    measures_of,
)
from recallbench.compare._model import COMPARISON_FORMAT, Comparison

__all__ = [
    "COMPARISON_FORMAT",
    "MISSING_POLICIES",
    "Compared",
    "Comparison",
    "MissingPolicy",
    "build_comparison",
    "load_compared",
    "measures_of",
    "pick_baseline",
]
