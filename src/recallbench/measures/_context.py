"""Agent-memory measures: measures that need the dataset beyond its judgments.

Importance tiers, folders, sessions, decision chains and memory texts are not in a qrels
file, so these measures are computed from a :class:`MemoryContext` (the dataset and the
system's rankings) rather than from the judgment table; ``recallbench run`` and
``build_report`` compute them, ``recallbench evaluate`` (files in) cannot.

Each returns its per-query values with its own population (the queries it is defined for:
those with a must-surface memory, the cold-start ones, those with a decision chain...),
optionally an aggregate that is not the mean (a ratio of two means), and per-query details
for the report (which memories were missed).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

import numpy as np

from recallbench.core import Dataset, Document, Query, UnknownMeasureError
from recallbench.measures._measure import Measure
from recallbench.measures._table import BoolArray, FloatArray, RankTable

TIER_WEIGHTS: Mapping[str, float] = {
    "constitutional": 4.0,
    "critical": 3.0,
    "important": 2.0,
    "normal": 1.0,
    "temporary": 0.5,
}
"""Default importance of each tier (a memory without a tier is ``normal``)."""

DEFAULT_TIER = "normal"
COLD_TAGS = frozenset({"cold-start", "first-in-session"})


@dataclass(frozen=True, eq=False)
class MemoryContext:
    """The dataset and what the system returned, for measures beyond the judgments."""

    dataset: Dataset
    query_ids: tuple[str, ...]
    rankings: Mapping[str, Sequence[str]]
    """Returned document ids per query, best first, repeats kept; queries the run lacks
    or that failed are absent (an empty ranking: they score 0 where a score is defined)."""
    relevance_threshold: int = 1
    tier_weights: Mapping[str, float] = field(default_factory=lambda: dict(TIER_WEIGHTS))

    @cached_property
    def queries(self) -> Mapping[str, Query]:
        return {query.id: query for query in self.dataset.queries}

    @property
    def documents(self) -> Mapping[str, Document]:
        return self.dataset.documents_by_id

    def top(self, query_id: str, k: int | None) -> list[str]:
        """The first ``k`` distinct documents returned (a repeat counts once, at its first
        rank, and takes no place of its own)."""
        distinct = list(dict.fromkeys(self.rankings.get(query_id, ())))
        return distinct if k is None else distinct[:k]

    def relevant(self, query_id: str) -> dict[str, int]:
        judged = self.dataset.qrels.get(query_id, {})
        return {doc: grade for doc, grade in judged.items() if grade >= self.relevance_threshold}

    def tier(self, doc_id: str) -> str:
        document = self.documents.get(doc_id)
        tier = document.metadata.get("tier") if document else None
        return tier if isinstance(tier, str) else DEFAULT_TIER

    def folder(self, doc_id: str) -> str | None:
        document = self.documents.get(doc_id)
        folder = document.metadata.get("folder") if document else None
        return folder if isinstance(folder, str) else None

    @cached_property
    def cold(self) -> BoolArray:
        """Cold-start queries: tagged ``cold-start`` or ``first-in-session``, or the first
        query of their session in dataset order. A query without a session is warm unless
        tagged."""
        seen: set[str] = set()
        first: set[str] = set()
        for query in self.dataset.queries:
            if query.session_id is not None and query.session_id not in seen:
                seen.add(query.session_id)
                first.add(query.id)
        return np.array(
            [
                qid in first or bool(COLD_TAGS & set(self.queries[qid].tags))
                for qid in self.query_ids
            ],
            dtype=bool,
        )

    @cached_property
    def answerable(self) -> BoolArray:
        return np.array([bool(self.relevant(qid)) for qid in self.query_ids], dtype=bool)


@dataclass(frozen=True)
class ContextValues:
    """A context measure's result."""

    values: FloatArray
    population: BoolArray
    """The queries the measure is defined for; its aggregate takes these only."""
    aggregate: float | None = None
    """An aggregate other than the population's mean (a ratio of means), when there is one."""
    details: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Query id -> items worth listing in the report (memories that were missed)."""


@dataclass(frozen=True)
class ContextMeasure(Measure):
    """A measure computed from a :class:`MemoryContext`."""

    needs_context: ClassVar[bool] = True

    def compute(self, table: RankTable) -> FloatArray:
        raise UnknownMeasureError(
            f"{self} needs the dataset's memories (tiers, folders, sessions, chains, texts), "
            "not just judgments: compute it with `recallbench run` (or build_report)"
        )

    @abstractmethod
    def compute_context(self, context: MemoryContext) -> ContextValues:
        """Values, population and details for every query of ``context``."""


def per_query(context: MemoryContext, value: Callable[[str], float]) -> FloatArray:
    """``value(query_id)`` for every query (a loop per query: these measures read dataset
    metadata per document, and agent-memory datasets are small)."""
    return np.array([value(qid) for qid in context.query_ids], dtype=np.float64)


def missing_from_top(
    context: MemoryContext, members: Callable[[str], Sequence[str]], k: int | None
) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """For every query with members: (its members, those not in its top k)."""
    found: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for qid in context.query_ids:
        wanted = tuple(members(qid))
        if wanted:
            top = set(context.top(qid, k))
            found[qid] = (wanted, tuple(d for d in wanted if d not in top))
    return found


def mask(context: MemoryContext, test: Callable[[str], bool]) -> BoolArray:
    return np.array([test(qid) for qid in context.query_ids], dtype=bool)
