"""A dataset with units being built from a third-party source, and the one way out:
through the JSON format's validation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from recallbench.core import Dataset, Document, Problem, Query
from recallbench.datasets._json_v1 import checked_dataset
from recallbench.datasets._provenance import Provenance


@dataclass
class Building:
    """What a loader has built so far, the problems it found, and where each document or
    query came from (so that a problem the common validation finds names its source)."""

    provenance: Provenance
    documents: dict[str, Document] = field(default_factory=dict)
    queries: list[Query] = field(default_factory=list)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    units: dict[str, tuple[str, ...]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    origins: dict[str, str] = field(default_factory=dict)
    """Document or query id -> where it is in the source."""

    def dataset(self, source: str, metadata: dict[str, JsonValue], **fields: Any) -> Dataset:
        """The validated dataset (``fields``: name, version, description, license)."""
        built = Dataset.model_construct(
            metadata={**metadata, "loader": self.provenance.metadata()},
            documents=tuple(self.documents.values()),
            queries=tuple(self.queries),
            qrels=self.qrels,
            units=self.units,
            **fields,
        )
        return checked_dataset(built, source, self.problems, self.origins)
