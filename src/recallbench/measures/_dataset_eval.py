"""Evaluate a run on a dataset: judgment measures on the table, agent-memory measures on
the dataset, and the equivalence rule; one :class:`Evaluation` for the report."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from recallbench.core import Dataset
from recallbench.measures._context import ContextMeasure, MemoryContext
from recallbench.measures._evaluate import Evaluation, Rules, evaluate
from recallbench.measures._measure import Measure

CLASS_PREFIX = "≡"
"""Ids of equivalence classes in the evaluated rankings (never a dataset document id)."""


def merge_equivalent(
    dataset: Dataset, rankings: Mapping[str, Sequence[str]]
) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
    """Judgments and rankings with each equivalence class as one memory: its grade is the
    best member's; any member returned stands for the class, and later members repeat it
    (counted once, at the first rank, by the duplicate rule)."""
    class_of = {
        member: f"{CLASS_PREFIX}{name}"
        for name, members in dataset.equivalence.items()
        for member in members
    }
    qrels: dict[str, dict[str, int]] = {}
    for query, judged in dataset.qrels.items():
        merged: dict[str, int] = {}
        for doc, grade in judged.items():
            key = class_of.get(doc, doc)
            merged[key] = max(grade, merged.get(key, grade))
        qrels[query] = merged
    mapped = {query: [class_of.get(d, d) for d in ranking] for query, ranking in rankings.items()}
    return qrels, mapped


def evaluate_dataset(
    dataset: Dataset,
    rankings: Mapping[str, Sequence[str]],
    measures: Sequence[Measure],
    rules: Rules,
    tier_weights: Mapping[str, float] | None = None,
) -> Evaluation:
    """Every measure for every query of ``dataset``. Judgment measures follow ``rules``
    (with ``rules.equivalence``, on merged classes); agent-memory measures read the
    dataset's memories as they are."""
    query_ids = [query.id for query in dataset.queries]
    qrels: Mapping[str, Mapping[str, int]] = dataset.qrels
    ranked: Mapping[str, Sequence[str]] = rankings
    if rules.equivalence and dataset.equivalence:
        qrels, ranked = merge_equivalent(dataset, rankings)
    table_measures = [m for m in measures if not isinstance(m, ContextMeasure)]
    evaluation = evaluate(qrels, ranked, table_measures, rules, query_ids)
    memory_measures = [m for m in measures if isinstance(m, ContextMeasure)]
    if not memory_measures:
        return evaluation
    weights = dict(tier_weights or {})
    configured = dataset.metadata.get("tier_weights")
    context = MemoryContext(
        dataset=dataset,
        query_ids=tuple(query_ids),
        rankings=rankings,
        relevance_threshold=rules.relevance_threshold,
        **({"tier_weights": {**_floats(configured), **weights}} if configured or weights else {}),
    )
    values = dict(evaluation.values)
    populations = dict(evaluation.populations)
    aggregates = dict(evaluation.aggregates)
    details = dict(evaluation.details)
    for measure in memory_measures:
        name = str(measure)
        result = measure.compute_context(context)
        values[name] = result.values
        populations[name] = result.population
        if result.aggregate is not None:
            aggregates[name] = result.aggregate
        if result.details:
            details[name] = result.details
    ordered = {str(m): m for m in measures}
    return dataclasses.replace(
        evaluation,
        values={name: values[name] for name in ordered},
        measures=ordered,
        populations=populations,
        aggregates=aggregates,
        details=details,
    )


def _floats(configured: object) -> dict[str, float]:
    """``tier_weights`` from the dataset's metadata, defaults filled in for missing tiers."""
    from recallbench.measures._context import TIER_WEIGHTS

    weights = dict(TIER_WEIGHTS)
    if isinstance(configured, dict):
        weights.update(
            {str(k): float(v) for k, v in configured.items() if isinstance(v, int | float)}
        )
    return weights
