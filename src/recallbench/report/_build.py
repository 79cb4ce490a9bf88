"""Evaluate a run on its dataset and assemble the report."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime

import numpy as np

from recallbench._version import __version__
from recallbench.core import Dataset, Query, QueryResult, Run
from recallbench.core._judged import describe, judge_of, label_counts
from recallbench.datasets._provenance import loader_changes
from recallbench.measures import Evaluation, Measure, Rules
from recallbench.measures._dataset_eval import evaluate_dataset
from recallbench.report._channels import channel_analysis
from recallbench.report._intervals import IntervalSettings, interval_scale, intervals
from recallbench.report._model import (
    Counts,
    Distribution,
    Group,
    Interval,
    MeasureInfo,
    QueryReport,
    QueryStatus,
    Report,
    Stability,
)
from recallbench.report._returned import (
    not_ingested,
    returned_warnings,
    scores_returned,
    searched_depth,
)
from recallbench.runner import git_revision, unmatched_results

WORST = 10
RETURNED_SHOWN = 20
BREAKDOWNS: dict[str, Callable[[QueryReport], str | None]] = {
    "category": lambda query: query.category,
    "intent": lambda query: query.intent,
}


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def distribution(values: Sequence[float]) -> Distribution | None:
    if not values:
        return None
    data = np.asarray(values, dtype=np.float64)
    p50, p95, p99 = np.percentile(data, [50, 95, 99])
    return Distribution(
        n=len(data),
        mean=float(data.mean()),
        p50=float(p50),
        p95=float(p95),
        p99=float(p99),
        max=float(data.max()),
    )


def build_report(
    dataset: Dataset,
    run: Run,
    measures: Sequence[Measure],
    rules: Rules | None = None,
    interval_settings: IntervalSettings | None = None,
) -> Report:
    """Score ``run`` against ``dataset`` (DESIGN §4 rules by default) into a report, every
    mean with its bootstrap interval (``interval_settings``, default 95% BCa, seed 0)."""
    rules = rules or Rules(relevance_threshold=dataset.relevance_threshold)
    interval_settings = interval_settings or IntervalSettings()
    by_query = {result.query_id: result for result in run.results}
    rankings = {
        result.query_id: [hit.doc_id for hit in result.hits]
        for result in run.results
        if not result.failed
    }
    query_ids = [query.id for query in dataset.queries]
    evaluation = evaluate_dataset(dataset, rankings, measures, rules)
    statuses = _statuses(dataset.queries, evaluation, by_query)
    populations = {name: evaluation.population(name) for name in evaluation.values}
    queries = [
        QueryReport(
            id=query.id,
            text=query.text,
            category=query.category,
            intent=query.intent,
            status=statuses[index],
            included=bool(evaluation.included[index]),
            error=by_query[query.id].error if query.id in by_query else None,
            values={
                name: float(values[index]) if populations[name][index] else None
                for name, values in evaluation.values.items()
            },
            latency_ms=by_query[query.id].latency_ms if query.id in by_query else None,
            returned=[hit.doc_id for hit in by_query[query.id].hits][:RETURNED_SHOWN]
            if query.id in by_query
            else [],
            relevant=dataset.relevant(query.id),
            min_recall=query.min_recall,
        )
        for index, query in enumerate(dataset.queries)
    ]
    stability = _stability(dataset, run)
    overall, breakdowns = _intervals(
        evaluation,
        queries,
        {key: _groups(queries, group_of) for key, group_of in BREAKDOWNS.items()},
        interval_settings,
    )
    return Report(
        created_at=datetime.now(UTC),
        recallbench_version=__version__,
        git_revision=git_revision(),
        dataset=dataset.ref,
        relevance_threshold=rules.relevance_threshold,
        system=run.spec,
        k_searched=searched_depth(run.spec),
        system_scores=scores_returned(run),
        rules=rules.describe(),
        measures=[
            MeasureInfo(name=str(m), definition=m.definition(), higher_is_better=m.higher_is_better)
            for m in measures
        ],
        counts=Counts(
            queries=len(query_ids),
            evaluated=int(evaluation.included.sum()),
            no_relevant=int(evaluation.no_relevant.sum()),
            failed=sum(1 for result in run.results if result.failed),
            missing=sum(1 for query_id in query_ids if query_id not in by_query),
            duplicates=sum(evaluation.duplicates.values()),
            **_unmatched_counts(run),
        ),
        means={name: _finite(value) for name, value in evaluation.means().items()},
        intervals=overall,
        bootstrap=interval_settings.describe(),
        latency_ms=distribution([r.latency_ms for r in run.results if r.latency_ms is not None]),
        output_bytes=distribution(
            [float(r.output_bytes) for r in run.results if r.output_bytes is not None]
        ),
        breakdowns=breakdowns,
        worst_queries=_worst(queries),
        details={
            name: {query: list(items) for query, items in per_query.items()}
            for name, per_query in evaluation.details.items()
        },
        warnings=[
            *_haystack_warnings(dataset, measures),
            *_loader_warnings(dataset),
            *_stability_warnings(stability),
            *_judge_warnings(dataset),
            *returned_warnings(run),
        ],
        labels=label_counts(dataset) if dataset.label_sources else {},
        judge=judge_of(dataset),
        stability=stability,
        channels=channel_analysis(dataset, run, relevance_threshold=rules.relevance_threshold),
        queries=queries,
    )


def _unmatched_counts(run: Run) -> dict[str, int]:
    """The counts of results that matched no document and of documents not ingested."""
    unmatched, returned = unmatched_results(run)
    refused = len(not_ingested(run.spec))
    counts = {"unmatched": unmatched, "returned": returned} if unmatched else {}
    return {**counts, **({"not_ingested": refused} if refused else {})}


def _stability(dataset: Dataset, run: Run) -> Stability | None:
    """Compare each query's first answer with its repetitions (full id lists, in order)."""
    if not run.repeats:
        return None
    first = {result.query_id: result for result in run.results}
    later = {repeated.query_id: repeated for repeated in run.repeats}
    compared = stable = failed_in_some = 0
    changed: list[str] = []
    for query in dataset.queries:
        result, repeated = first.get(query.id), later.get(query.id)
        if result is None or repeated is None:
            continue
        errors = repeated.errors or (None,) * len(repeated.rankings)
        failed = [result.failed, *(error is not None for error in errors)]
        if any(failed):  # failed every time: nothing to compare, and no change either
            if not all(failed):
                failed_in_some += 1
            continue
        compared += 1
        ranking = tuple(hit.doc_id for hit in result.hits)
        if all(other == ranking for other in repeated.rankings):
            stable += 1
        else:
            changed.append(query.id)
    return Stability(
        repeats=1 + max(len(repeated.rankings) for repeated in run.repeats),
        queries=compared,
        stable=stable,
        rate=stable / compared if compared else None,
        changed=changed,
        failed_in_some=failed_in_some,
    )


def _judge_warnings(dataset: Dataset) -> list[str]:
    """A judge's labels change what the numbers mean: say whose they are and how many."""
    if not dataset.label_sources:
        return []
    counts = label_counts(dataset)
    judge = judge_of(dataset)
    total = sum(counts.values())
    others = ", ".join(f"{n} {source}" for source, n in counts.items() if source != "dataset")
    warnings = [
        f"{total - counts['dataset']} of {total} labels are not the dataset authors' "
        f"({others})"
        + (f"; the judge: {describe(judge)}" if judge is not None else "")
        + ": measures lean on them; check the judge's agreement with people "
        "(`recallbench judge calibrate`)"
    ]
    if judge is not None and judge.unreliable:
        warnings.append(
            f"the judge failed on {judge.failure_rate:.1%} of its judgments (limit "
            f"{judge.max_failure_rate:.0%}): its labels are incomplete and measures that use "
            "them are unreliable; `recallbench gate --strict` fails"
        )
    return warnings


def _stability_warnings(stability: Stability | None) -> list[str]:
    if stability is None:
        return []
    warnings = []
    if stability.rate is not None and stability.rate < 1:
        warnings.append(
            f"{len(stability.changed)} of {stability.queries} queries returned a different "
            f"ranking on repetition (stability {stability.rate:.1%}): "
            "the measures describe one draw"
        )
    if stability.failed_in_some:
        warnings.append(
            f"{stability.failed_in_some} queries failed in some but not all of "
            f"{stability.repeats} repetitions: the failure count describes one draw"
        )
    return warnings


def _haystack_warnings(dataset: Dataset, measures: Sequence[Measure]) -> list[str]:
    """A cutoff that reaches every document a query is asked against says little."""
    if dataset.units:
        asked = {query.unit for query in dataset.queries}
        sizes = [len(dataset.units[unit]) for unit in asked if unit in dataset.units]
        where = "units (haystacks)"
    else:
        sizes, where = [len(dataset.documents)], "the corpus"
    warnings = []
    for cutoff in sorted({m.cutoff for m in measures if m.cutoff is not None}):
        reached = sum(1 for size in sizes if cutoff >= size)
        if reached:
            scope = f"{reached} of {len(sizes)} {where}" if dataset.units else where
            warnings.append(
                f"cutoff {cutoff} reaches every document of {scope}: "
                f"@{cutoff} measures there say little (use a smaller cutoff)"
            )
    return warnings


def _loader_warnings(dataset: Dataset) -> list[str]:
    changes = loader_changes(dataset.metadata)
    if not changes:
        return []
    counts = Counter(change.action for change in changes)
    done = ", ".join(f"{action} {counts[action]}" for action in ("dropped", "altered", "flagged"))
    return [
        f"the dataset's loader ({dataset.ref.loader}) changed items of the source ({done}); "
        "`recallbench datasets show` lists each with its reason"
    ]


def _statuses(
    queries: Sequence[Query], evaluation: Evaluation, by_query: Mapping[str, QueryResult]
) -> list[QueryStatus]:
    """failed > missing > no_relevant > ok: a failure is always shown and counted."""
    statuses: list[QueryStatus] = []
    for index, query in enumerate(queries):
        result = by_query.get(query.id)
        if result is not None and result.failed:
            statuses.append("failed")
        elif result is None:
            statuses.append("missing")
        elif evaluation.no_relevant[index]:
            statuses.append("no_relevant")
        else:
            statuses.append("ok")
    return statuses


def _groups(
    queries: Sequence[QueryReport], key: Callable[[QueryReport], str | None]
) -> list[Group]:
    names = sorted({name for query in queries if (name := key(query)) is not None})
    groups = []
    for name in names:
        members = [query for query in queries if key(query) == name]
        scored = [query for query in members if query.included]
        means: dict[str, float | None] = {}
        for measure in members[0].values:  # a query has a value where its measure counts it
            values = [v for q in members if (v := q.values[measure]) is not None]
            means[measure] = float(np.mean(values)) if values else None
        excluded = len(members) - len(scored)
        groups.append(Group(name=name, n=len(scored), excluded=excluded, means=means))
    return groups


def _intervals(
    evaluation: Evaluation,
    queries: Sequence[QueryReport],
    breakdowns: dict[str, list[Group]],
    settings: IntervalSettings,
) -> tuple[dict[str, Interval], dict[str, list[Group]]]:
    """The interval of every mean, overall and per group, computed in one call so that
    means over the same number of queries share their resamples."""
    scales = {
        name: interval_scale(measure, name in evaluation.aggregates)
        for name, measure in evaluation.measures.items()
        if name not in evaluation.texts
    }
    rows = [
        (scale, evaluation.values[name][evaluation.population(name)])
        for name, scale in scales.items()
    ]
    for key, groups in breakdowns.items():
        members: dict[str, list[QueryReport]] = {}
        for query in queries:
            if (name := BREAKDOWNS[key](query)) is not None:
                members.setdefault(name, []).append(query)
        for group in groups:
            for measure, scale in scales.items():
                values = [v for q in members[group.name] if (v := q.values[measure]) is not None]
                rows.append((scale, np.array(values, dtype=np.float64)))
    found = iter(intervals(rows, settings))
    overall = {name: next(found) for name in scales}
    with_intervals = {
        key: [
            group.model_copy(update={"intervals": {name: next(found) for name in scales}})
            for group in groups
        ]
        for key, groups in breakdowns.items()
    }
    return overall, with_intervals


def _worst(queries: Sequence[QueryReport]) -> list[str]:
    def overall(query: QueryReport) -> float:
        values = [v for v in query.values.values() if v is not None]
        return float(np.mean(values)) if values else 0.0

    scored = [query for query in queries if query.included]
    return [query.id for query in sorted(scored, key=lambda q: (overall(q), q.id))[:WORST]]
