"""Extraction ground truth named on the command line: a ``recallbench.extraction/v1``
file, LoCoMo's events and observations (``locomo-events:PATH``), or a bundled corpus by
name; and a ground truth cut to its first documents.

The loaders are imported when a ground truth is loaded, not with this module: the command
line reads :data:`LOCOMO_PREFIX` and :data:`BUNDLED` for its ``--help``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from recallbench.core import ConfigError

if TYPE_CHECKING:
    from recallbench.extraction._formats import ExtractionGroundTruth, GraphCase

LOCOMO_PREFIX: Final = "locomo-events:"
BUNDLED: Final = ("meeting-sample",)
"""Ground truth shipped in this package's data folder, loadable by name."""


def load_truth(
    spec: str, conversations: Sequence[str] = (), option: str = "--ground-truth"
) -> ExtractionGroundTruth:
    """The ground truth ``spec`` names (errors name ``option``): a
    recallbench.extraction/v1 file, locomo-events:PATH (``conversations`` only), or a
    bundled corpus by name."""
    from recallbench.extraction._formats import load_ground_truth
    from recallbench.extraction._locomo import load_locomo_extraction

    if spec.startswith(LOCOMO_PREFIX):
        path = Path(spec.removeprefix(LOCOMO_PREFIX))
        if not path.exists():
            raise ConfigError(f"{option} {spec}: {path}: no such file or folder")
        return load_locomo_extraction(path, list(conversations) or None)
    if conversations:
        raise ConfigError(f"--conversation applies to {LOCOMO_PREFIX}PATH only")
    if spec in BUNDLED and not Path(spec).exists():
        return load_ground_truth(Path(__file__).parent / "data" / f"{spec}.json")
    prefix, colon, _ = spec.partition(":")
    if colon and prefix.isidentifier() and not Path(spec).exists():
        raise ConfigError(
            f"{option} {spec}: unknown format {prefix!r} "
            f"(use a recallbench.extraction/v1 file or {LOCOMO_PREFIX}PATH)"
        )
    return load_ground_truth(Path(spec))


def first_documents(truth: ExtractionGroundTruth, limit: int) -> ExtractionGroundTruth:
    """The ground truth with its first ``limit`` documents, and the graph cases that name
    only those (recorded in its metadata, which the report's hash covers)."""
    kept = truth.documents[:limit]
    if len(kept) == len(truth.documents):
        return truth
    ids = {document.id for document in kept}

    def inside(case: GraphCase) -> bool:
        named = {case.seed_document, *case.expected_not_connected}
        named |= {c.document_id for c in case.expected_connections if c.document_id}
        return named <= ids

    subset = {"documents": limit, "of": len(truth.documents)}
    return truth.model_copy(
        update={
            "documents": kept,
            "graph": tuple(case for case in truth.graph if inside(case)),
            "metadata": {**truth.metadata, "subset": subset},
        }
    )
