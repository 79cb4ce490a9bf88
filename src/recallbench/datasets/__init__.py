"""Dataset formats (recallbench JSON, TREC, BEIR) and the bundled datasets."""

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
    "read_trec_run",
    "write_trec_qrels",
    "write_trec_run",
]
