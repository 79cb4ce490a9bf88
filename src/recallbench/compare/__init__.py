"""Comparing systems on the same queries: paired statistics, breakdowns, rank differences."""

from recallbench.compare._build import build_comparison, pick_baseline
from recallbench.compare._inputs import (
    MISSING_POLICIES,
    Compared,
    MissingPolicy,
    load_compared,
    measures_of,
)
from recallbench.compare._model import COMPARISON_FORMAT, Comparison
from recallbench.compare._render import render_comparison, render_comparison_markdown

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
    "render_comparison",
    "render_comparison_markdown",
]
