"""Core objects: documents, queries, judgments, datasets, runs, and the error hierarchy."""

from recallbench.core._dataset import (
    DATASET_FORMAT,
    TIERS,
    Dataset,
    DatasetRef,
    Document,
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
