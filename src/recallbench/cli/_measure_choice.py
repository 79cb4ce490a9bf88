"""Which measures `recallbench run` reports, and why (the report names the source).

Precedence: ``-m`` flags, then the configuration's ``measures``, then the dataset's own
``metadata.default_measures``, then the built-in default.
"""

from __future__ import annotations

from collections.abc import Sequence

from recallbench.core import Dataset
from recallbench.datasets._default_measures import DEFAULT_MEASURES_KEY, dataset_measures
from recallbench.measures import DEFAULT_MEASURES, Measure, parse_measures


def choose_measures(
    flags: Sequence[str], configured: Sequence[str], dataset: Dataset
) -> tuple[tuple[Measure, ...], str]:
    """The measures to report and where they came from, in words."""
    if flags:
        return parse_measures(tuple(flags)), "named with -m"
    if configured:
        return parse_measures(tuple(configured)), "the configuration's measures"
    named = dataset_measures(dataset)
    if named is not None:
        return parse_measures(named), f"the dataset's defaults (metadata.{DEFAULT_MEASURES_KEY})"
    return parse_measures(DEFAULT_MEASURES), "recallbench's defaults (the dataset names none)"
