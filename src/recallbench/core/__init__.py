"""Core objects: documents, queries, judgments, datasets, runs, and the error hierarchy.

Names are imported on first use (PEP 562), so that code needing only the errors or the
columnar types does not pay for building the pydantic models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recallbench._lazy import lazy_exports

if TYPE_CHECKING:
    from recallbench.core._dataset import (
        DATASET_FORMAT,
        TIERS,
        Dataset,
        DatasetRef,
        Document,
        LabelSource,
        Qrels,
        Query,
    )
    from recallbench.core._errors import (
        ConfigError,
        DatasetError,
        Problem,
        RecallbenchError,
        RunFileError,
        SystemUnderTestError,
        UnknownMeasureError,
        UnknownNameError,
    )
    from recallbench.core._run import RUN_FORMAT, Hit, QueryResult, Run, RunSpec

__all__ = [
    "DATASET_FORMAT",
    "RUN_FORMAT",
    "TIERS",
    "ConfigError",
    "Dataset",
    "DatasetError",
    "DatasetRef",
    "Document",
    "Hit",
    "LabelSource",
    "Problem",
    "Qrels",
    "Query",
    "QueryResult",
    "RecallbenchError",
    "Run",
    "RunFileError",
    "RunSpec",
    "SystemUnderTestError",
    "UnknownMeasureError",
    "UnknownNameError",
]

__getattr__ = lazy_exports(__name__, ("_errors", "_dataset", "_run"), __all__)
