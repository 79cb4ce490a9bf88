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


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.4f}"


def _plain(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"


def session_summary(lift: SessionLift) -> str:
    """One line: the lift, its interval and test, and the counts."""
    interval = (
        f" [{lift.ci_low:+.4f}, {lift.ci_high:+.4f}]"
        if lift.ci_low is not None and lift.ci_high is not None
        else ""
    )
    p = f", p = {lift.p:.4f}" if lift.p is not None else ""
    return (
        f"session lift ({lift.measure}, n = {lift.n} of {lift.n_all} queries with an earlier "
        f"query in their session): {_signed(lift.delta)}{interval}{p}; "
        f"with {_plain(lift.mean_with)} vs without {_plain(lift.mean_without)}; "
        f"wins/ties/losses {lift.wins}/{lift.ties}/{lift.losses}"
    )


def session_markdown(lift: SessionLift | None) -> list[str]:
    """The report.md section; nothing when no lift was measured."""
    if lift is None:
        return []
    return [
        "",
        "## Session personalisation",
        "",
        f"{lift.measure} with and without the session's earlier queries, over the "
        f"{lift.n} queries whose session asked an earlier query "
        f"({lift.n_all} queries in all).",
        "",
        f"- with session context: {_plain(lift.mean_with)}",
        f"- without: {_plain(lift.mean_without)}",
        f"- lift: {_signed(lift.delta)}"
        + (
            f" (interval {lift.ci_low:+.4f} to {lift.ci_high:+.4f})"
            if lift.ci_low is not None and lift.ci_high is not None
            else ""
        )
        + (f", p = {lift.p:.4f}" if lift.p is not None else ""),
        f"- over all {lift.n_all} queries: {_signed(lift.delta_all)}",
        f"- wins / ties / losses: {lift.wins} / {lift.ties} / {lift.losses}",
        f"- method: {lift.method}",
    ]
