"""Filling the unjudged results of runs with the judge's relevance labels.

The pool is the union of every run's top ``depth`` results that the dataset does not judge
(TREC-style pooling across systems: a memory two systems return is judged once). Each
pooled pair is judged with the ``relevance`` task; a label the judge gave enters ``qrels``
with its source in ``label_sources`` (model, prompt, confidence), so that a reader can
always tell a person's label from the judge's and measure without the judge's. A failed
judgment gives no label: the pair stays unjudged and the failure is counted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from recallbench.core import Dataset, LabelSource, Run
from recallbench.judges._judgment import Judgment
from recallbench.judges._run import JudgeRun
from recallbench.judges._setup import JudgeSetup, judge_all
from recallbench.judges._task_kinds import Relevance, RelevanceInput, RelevanceTask


@dataclass(frozen=True, slots=True)
class PoolItem:
    """One unjudged (query, memory) pair some run returned within the depth."""

    query_id: str
    doc_id: str
    rank: int
    """The best (lowest, 1-based) rank any run gave it."""
    systems: tuple[str, ...]
    """The runs that returned it within the depth, in the order the runs were given."""


@dataclass(frozen=True, slots=True)
class Pool:
    items: list[PoolItem]
    unknown: int
    """Results naming a memory the dataset does not hold (no text to judge): left out."""
    skipped_queries: int
    """Unanswerable queries: no memory can be relevant to them, so none is judged."""


def unjudged_pool(dataset: Dataset, runs: Sequence[Run], depth: int) -> Pool:
    """The pool of ``runs`` at ``depth``: in the dataset's query order, then best rank,
    then document id (a deterministic order, so that cache keys and outputs are stable)."""
    if depth < 1:
        raise ValueError(f"depth must be at least 1, not {depth}")
    documents = dataset.documents_by_id
    results = [{result.query_id: result for result in run.results} for run in runs]
    items: list[PoolItem] = []
    unknown = skipped = 0
    for query in dataset.queries:
        if query.unanswerable:
            skipped += 1
            continue
        judged = dataset.qrels.get(query.id, {})
        best: dict[str, int] = {}
        systems: dict[str, list[str]] = {}
        for run, by_query in zip(runs, results, strict=True):
            result = by_query.get(query.id)
            if result is None or result.failed:
                continue
            seen: set[str] = set()
            for rank, hit in enumerate(result.hits[:depth], 1):
                doc = hit.doc_id
                if doc in judged or doc in seen:
                    continue
                seen.add(doc)
                if doc not in documents:
                    unknown += 1
                    continue
                best[doc] = min(best.get(doc, rank), rank)
                systems.setdefault(doc, []).append(run.spec.system)
        for doc in sorted(best, key=lambda d: (best[d], d)):
            items.append(PoolItem(query.id, doc, best[doc], tuple(systems[doc])))
    return Pool(items, unknown, skipped)


def relevance_inputs(dataset: Dataset, items: Sequence[PoolItem]) -> list[RelevanceInput]:
    """The judge's input for each pair: the query's text and the memory's (title first)."""
    queries = {query.id: query for query in dataset.queries}
    documents = dataset.documents_by_id
    inputs = []
    for item in items:
        document = documents[item.doc_id]
        text = f"{document.title}\n{document.text}" if document.title else document.text
        inputs.append(RelevanceInput(queries[item.query_id].text, text))
    return inputs


@dataclass(slots=True)
class Filled:
    """The judged dataset and how it was made."""

    dataset: Dataset
    pool: Pool
    judged: JudgeRun[Relevance]
    """One judgment per pool item, in pool order."""
    prompt: str
    """``relevance v1``: the task and prompt version."""
    model: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def labelled(self) -> int:
        return sum(1 for judgment in self.judged.judgments if judgment.value is not None)


async def fill_unjudged(
    dataset: Dataset,
    runs: Sequence[Run],
    depth: int,
    setup: JudgeSetup,
    *,
    strict: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> Filled:
    """Judge the unjudged pool of ``runs`` and return the dataset with the new labels."""
    pool = unjudged_pool(dataset, runs, depth)
    task = RelevanceTask()
    inputs = relevance_inputs(dataset, pool.items)
    judged = await judge_all(task, inputs, setup, strict=strict, progress=progress)
    prompt = f"{task.name} v{task.version}"
    labelled = with_labels(dataset, pool.items, judged.judgments, prompt)
    return Filled(labelled, pool, judged, prompt, setup.config.model, setup.params)


def with_labels(
    dataset: Dataset,
    items: Sequence[PoolItem],
    judgments: Sequence[Judgment[Relevance]],
    prompt: str,
) -> Dataset:
    """``dataset`` with each successful judgment as a ``qrels`` grade and its source."""
    qrels = {query: dict(judged) for query, judged in dataset.qrels.items()}
    sources = {query: dict(by_doc) for query, by_doc in dataset.label_sources.items()}
    for item, judgment in zip(items, judgments, strict=True):
        if judgment.value is None:
            continue
        qrels.setdefault(item.query_id, {})[item.doc_id] = judgment.value.grade
        sources.setdefault(item.query_id, {})[item.doc_id] = LabelSource(
            source="llm",
            by=judgment.model or None,
            prompt=prompt,
            confidence=judgment.value.confidence,
        )
    return dataset.replaced(qrels=qrels, label_sources=sources)


def without_labels(dataset: Dataset, source: str = "llm") -> Dataset:
    """``dataset`` with the labels of ``source`` removed (to measure without them)."""
    dropped = {
        (query, doc)
        for query, by_doc in dataset.label_sources.items()
        for doc, label in by_doc.items()
        if label.source == source
    }
    if not dropped:
        return dataset
    qrels = {
        query: {doc: grade for doc, grade in judged.items() if (query, doc) not in dropped}
        for query, judged in dataset.qrels.items()
    }
    sources = {
        query: {doc: label for doc, label in by_doc.items() if label.source != source}
        for query, by_doc in dataset.label_sources.items()
    }
    return dataset.replaced(
        qrels={query: judged for query, judged in qrels.items() if judged},
        label_sources={query: by_doc for query, by_doc in sources.items() if by_doc},
    )
