"""The pairs people labelled that a relevance judge is calibrated against: the dataset's
own labels (its ``qrels``), less any pair whose ``label_sources`` says an LLM gave it, each
with its grade, its query's category and the judge's input for it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from recallbench.core import Dataset
from recallbench.judges._fill import PoolItem, relevance_inputs
from recallbench.judges._task_kinds import RelevanceInput

NO_CATEGORY = "(none)"
"""The group of queries without a category."""


@dataclass(frozen=True, slots=True)
class HumanPair:
    """One (query, memory) pair a person labelled."""

    query_id: str
    doc_id: str
    grade: int
    """As in the dataset; may be negative (judged, never relevant)."""
    category: str

    @property
    def scale_grade(self) -> int:
        """The grade on the judge's 0-3 scale: a negative grade is 0."""
        return max(self.grade, 0)


@dataclass(frozen=True, slots=True)
class HumanPairs:
    pairs: list[HumanPair]
    """In the dataset's query order, then its order of judgments."""
    excluded_llm: int
    """Pairs whose label came from an LLM (``label_sources``): not people's labels."""
    no_text: int
    """Pairs naming a memory the dataset does not hold: nothing to show the judge."""


def human_pairs(dataset: Dataset) -> HumanPairs:
    """The pairs people labelled, each with its grade and its query's category."""
    llm = {
        (query, doc)
        for query, by_doc in dataset.label_sources.items()
        for doc, label in by_doc.items()
        if label.source == "llm"
    }
    documents = dataset.documents_by_id
    pairs: list[HumanPair] = []
    excluded = no_text = 0
    for query in dataset.queries:
        for doc, grade in dataset.qrels.get(query.id, {}).items():
            if (query.id, doc) in llm:
                excluded += 1
            elif doc not in documents:
                no_text += 1
            else:
                pairs.append(HumanPair(query.id, doc, grade, query.category or NO_CATEGORY))
    return HumanPairs(pairs, excluded, no_text)


def judge_inputs(dataset: Dataset, pairs: Sequence[HumanPair]) -> list[RelevanceInput]:
    """The judge's input for each pair, built exactly as `recallbench judge` builds it, so
    both commands share cached judgments."""
    items = [PoolItem(pair.query_id, pair.doc_id, 0, ()) for pair in pairs]
    return relevance_inputs(dataset, items)
