"""Comparing systems on the same queries: paired statistics, breakdowns, rank differences.
Its views (terminal, comparison.md, comparison.html) are in :mod:`recallbench.render`.

The package is callable: ``recallbench.compare(a, b, measures=[...])`` is
:func:`~recallbench.compare._api.compare` (``recallbench.compare`` names both the package
and the one-call API, so calling the package is calling the function)::

    import recallbench

    result = recallbench.compare("out/builtin-lexical", "out/builtin-hybrid", measures=["ndcg@10"])
"""

import sys
import types
from typing import Any

from recallbench.compare._api import compare, compare_inputs, paired_settings
from recallbench.compare._build import build_comparison, pick_baseline
from recallbench.compare._inputs import (
    MISSING_POLICIES,
    Compared,
    Input,
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
    "Input",
    "MissingPolicy",
    "build_comparison",
    "compare",
    "compare_inputs",
    "load_compared",
    "measures_of",
    "paired_settings",
    "pick_baseline",
]


class _CallablePackage(types.ModuleType):
    """This package, callable as :func:`compare`."""

    def __call__(self, *inputs: Any, **options: Any) -> Comparison:
        return compare(*inputs, **options)


_CallablePackage.__call__.__doc__ = compare.__doc__
sys.modules[__name__].__class__ = _CallablePackage
