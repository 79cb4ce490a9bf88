"""The measures a dataset names for itself: ``metadata["default_measures"]``.

A dataset knows what it tests: the bundled agent-memory sample its must-surface memories,
decision chains and cold-start sessions; LoCoMo and LongMemEval whether any and all of a
question's evidence came back. ``recallbench run`` reports these when neither ``-m`` nor
the configuration names measures; the first one ranks a leaderboard.
"""

from __future__ import annotations

from recallbench.core import Dataset, DatasetError, Problem

DEFAULT_MEASURES_KEY = "default_measures"

CONVERSATION_MEASURES: tuple[str, ...] = (
    "ndcg@10",
    "recall_any@5",
    "recall_all@5",
    "recall_any@10",
    "recall_all@10",
    "mrr@10",
)
"""LoCoMo and LongMemEval: nDCG ranks; recall_any / recall_all at 5 and 10 are the
retrieval measures of LongMemEval (Wu et al., "LongMemEval", ICLR 2025)."""


def dataset_measures(dataset: Dataset) -> tuple[str, ...] | None:
    """The dataset's default measures, or None when it names none."""
    named = dataset.metadata.get(DEFAULT_MEASURES_KEY)
    if named is None:
        return None
    if not isinstance(named, list) or not named or not all(isinstance(m, str) for m in named):
        message = f"must be a non-empty list of measure names, got {named!r}"
        raise DatasetError(dataset.name, [Problem(f"metadata.{DEFAULT_MEASURES_KEY}", message)])
    return tuple(str(m) for m in named)
