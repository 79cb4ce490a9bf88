"""Dataset formats (recallbench JSON, TREC, BEIR) and the bundled datasets.

Names are imported on first use (PEP 562): reading a TREC file must not pay for the
pydantic models of the JSON format.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recallbench._lazy import lazy_exports

if TYPE_CHECKING:
    from recallbench.datasets._beir import load_beir
    from recallbench.datasets._json_v1 import dump_json_dataset, load_json_dataset
    from recallbench.datasets._registry import (
        DEFAULT_DATASET,
        bundled_datasets,
        bundled_path,
        load_dataset,
    )
    from recallbench.datasets._trec import (
        format_trec_qrels,
        format_trec_run,
        read_trec_qrels,
        read_trec_rankings,
        read_trec_run,
        write_trec_qrels,
        write_trec_run,
    )

__all__ = [
    "DEFAULT_DATASET",
    "bundled_datasets",
    "bundled_path",
    "dump_json_dataset",
    "format_trec_qrels",
    "format_trec_run",
    "load_beir",
    "load_dataset",
    "load_json_dataset",
    "read_trec_qrels",
    "read_trec_rankings",
    "read_trec_run",
    "write_trec_qrels",
    "write_trec_run",
]

__getattr__ = lazy_exports(__name__, ("_trec", "_registry", "_json_v1", "_beir"), __all__)
