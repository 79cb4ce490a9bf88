"""Session personalisation lift: how much a system gains from the earlier queries of a
session, measured by running the same dataset with and without session context."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from recallbench.core import Dataset, Query, Run
from recallbench.measures import Measure, Rules, parse_measure
from recallbench.measures._dataset_eval import evaluate_dataset
from recallbench.report._model import SessionLift
from recallbench.stats import PairedSettings, paired_results

DEFAULT_LIFT_MEASURE = "mrr@10"


def has_context(queries: Sequence[Query]) -> list[bool]:
    """Per query: whether its session asked an earlier query before it, in dataset order
    and in the same unit (each unit starts a fresh store, and a fresh session memory)."""
    seen: set[tuple[str | None, str]] = set()
    flags = []
    for query in queries:
        key = (query.unit, query.session_id or "")
        flags.append(query.session_id is not None and key in seen)
        if query.session_id is not None:
            seen.add(key)
    return flags


def measure_session_lift(
    dataset: Dataset,
    with_context: Run,
    without_context: Run,
    measure: Measure | str = DEFAULT_LIFT_MEASURE,
    rules: Rules | None = None,
    settings: PairedSettings | None = None,
) -> SessionLift:
    """Pair ``with_context`` (queries asked with their ``session_id``) with
    ``without_context`` (each asked alone) per query on ``measure``.

    ``delta = mean over the n paired queries of (with - without)``; the paired queries are
    those of the measure's population whose session asked an earlier query (the only ones
    where context can change anything). Interval, test and wins/ties/losses come from
    :func:`recallbench.stats.paired_results`; ``delta_all`` is the same mean over the whole
    population. Nothing passed in is modified.
    """
    chosen = parse_measure(measure) if isinstance(measure, str) else measure
    name = str(chosen)
    rules = rules or Rules(relevance_threshold=dataset.relevance_threshold)
    settings = settings or PairedSettings()
    evaluations = [
        evaluate_dataset(dataset, _rankings(run), [chosen], rules)
        for run in (with_context, without_context)
    ]
    population = evaluations[0].population(name) & evaluations[1].population(name)
    paired = population & np.array(has_context(dataset.queries), dtype=bool)
    with_values, without_values = (evaluation.values[name] for evaluation in evaluations)
    result = paired_results(
        [without_values[paired]], [with_values[paired]], [chosen.higher_is_better], settings
    )[0]
    differences = with_values[population] - without_values[population]
    return SessionLift(
        measure=name,
        n=result.n,
        n_all=int(population.sum()),
        mean_with=_finite(result.mean_system),
        mean_without=_finite(result.mean_baseline),
        delta=_finite(result.delta),
        delta_all=float(differences.mean()) if differences.size else None,
        ci_low=result.ci_low,
        ci_high=result.ci_high,
        p=result.p_randomisation,
        wins=result.wins,
        ties=result.ties,
        losses=result.losses,
        method=(
            "the dataset run twice on the same system: with each query's session_id, and "
            "with none (each query alone); paired over the queries whose session asked an "
            f"earlier one; delta = mean(with - without) of {name}; "
            f"interval: {settings.describe()['interval']}; "
            f"test: {settings.describe()['randomisation']}"
        ),
    )


def _rankings(run: Run) -> dict[str, list[str]]:
    return {r.query_id: [hit.doc_id for hit in r.hits] for r in run.results if not r.failed}


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
