"""What each dashboard page shows, read from the store: plain dicts and lists for the
templates (and for the charts, embedded as JSON)."""

from __future__ import annotations

import json
from dataclasses import asdict
from dataclasses import fields as dataclass_fields
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Integer, cast, func, select

# imported with the dashboard, not by the first request to its home page
from recallbench.report._changes import series_statistics
from recallbench.report._run_statistics import history_scales as _scales
from recallbench.report._run_statistics import stored_series_statistics
from recallbench.store._engine import transaction
from recallbench.store._tables import ab_tests, eval_queries, shadow_runs

if TYPE_CHECKING:
    from recallbench.core import Dataset
    from recallbench.store import Store, StoredRun

SERIES_RUNS = 20
"""Newest runs per series in the trend (as `recallbench history`)."""
RUNS_PAGE = 50
"""Runs per page of the home page's list of all runs."""
CHART_MEASURES = 6
"""Measures drawn in a series' trend chart (all are in its table)."""
RESAMPLES = 10_000


def run_summary(run: StoredRun) -> dict[str, Any]:
    """A run's fields as the templates show them (its dicts shared, not copied: the home
    page lists thousands of runs, and ``asdict``'s deep copies were a third of its time)."""
    fields = {field.name: getattr(run, field.name) for field in dataclass_fields(run)}
    fields["created"] = f"{run.created_at:%Y-%m-%d %H:%M}"
    fields["sha"] = run.dataset_sha256[:8]
    return fields


def history(store: Store, page: int = 0) -> dict[str, Any]:
    """Every series (one system on one dataset fingerprint): its newest runs, oldest first,
    and per measure the means, each run's interval and the test of each change; and a page
    of all runs, newest first (``RUNS_PAGE`` a page: a store holds thousands)."""
    grouped: dict[tuple[str, str], list[StoredRun]] = {}
    for run in store.runs(per_series=SERIES_RUNS):  # newest first
        grouped.setdefault((run.system, run.dataset_sha256), []).append(run)
    sizes = store.series_sizes()
    total = sum(sizes.values())
    oldest_first = [newest_first[::-1] for newest_first in grouped.values()]
    # kept in the store, computed (and kept) where they are not
    found = stored_series_statistics(
        store, oldest_first, [_scales(list(shown[-1].means)) for shown in oldest_first]
    )
    series = []
    for index, (key, oldest, stats) in enumerate(zip(grouped, oldest_first, found, strict=True)):
        last = oldest[-1]
        measures = list(last.means)
        rows = []
        for measure in measures:
            means = [run.means.get(measure) for run in oldest]
            interval = stats.intervals[measure][-1]
            changes = stats.changes.get(measure, [])
            change = changes[-1] if changes else None
            rows.append(
                {
                    "measure": measure,
                    "means": means,
                    "first": next((m for m in means if m is not None), None),
                    "last": means[-1],
                    "low": interval.low,
                    "high": interval.high,
                    "reason": NO_VALUE_REASON if means[-1] is None else interval.reason or "",
                    "change": change.delta if change else None,
                    "p": change.p_holm if change else None,
                    "significant": sum(c.significant for c in changes),
                    "higher_is_better": last.higher_is_better.get(measure, True),
                    "intervals": [[i.low, i.high] for i in stats.intervals[measure]],
                }
            )
        series.append(
            {
                "id": f"s{index}",
                "title": f"{last.system} on {last.dataset_name} {last.dataset_version}",
                "sha": last.dataset_sha256[:8],
                "runs": [run_summary(run) for run in oldest],
                "total": sizes.get(key, len(oldest)),
                "rows": rows,
                "method": stats.method,
                "chart": {
                    "title": f"{last.system} on {last.dataset_name}: means by run",
                    "labels": [f"#{run.id}" for run in oldest],
                    "lines": [
                        {"label": r["measure"], "data": r["means"], "intervals": r["intervals"]}
                        for r in rows[:CHART_MEASURES]
                    ],
                },
            }
        )
    runs = store.runs(limit=RUNS_PAGE, offset=page * RUNS_PAGE) if page * RUNS_PAGE < total else []
    return {
        "series": series,
        "runs": [run_summary(run) for run in runs],
        "total": total,
        "page": page,
        "pages": max(1, -(-total // RUNS_PAGE)),
    }


def run_detail(store: Store, run_id: int, dataset: Dataset | None) -> dict[str, Any]:
    """One run: its summary, and every query's values (with its text when the dataset
    given to the dashboard is the run's)."""
    run = store.get(run_id)
    values = store.query_values(run_id)
    groups = _query_groups(store, run_id)
    texts = _query_texts(dataset, run.dataset_sha256)
    series = [r for r in store.runs(system=run.system) if r.dataset_sha256 == run.dataset_sha256]
    older = [r for r in series if (r.created_at, r.id) < (run.created_at, run.id)]
    intervals = _run_intervals(values, list(run.means))
    return {
        "run": run_summary(run),
        "measures": list(run.means),
        "means": [
            {
                "measure": measure,
                "mean": mean,
                "n": intervals[measure].n,
                "low": intervals[measure].low,
                "high": intervals[measure].high,
                "reason": NO_VALUE_REASON if mean is None else intervals[measure].reason or "",
                "higher_is_better": run.higher_is_better.get(measure, True),
            }
            for measure, mean in run.means.items()
        ],
        "categories": sorted({g["category"] for g in groups.values() if g["category"]}),
        "queries": [
            {"id": query, "text": texts.get(query), **groups.get(query, {}), "values": per}
            for query, per in values.items()
        ],
        "previous": older[0].id if older else None,
    }


NO_VALUE_REASON = "n = 0: no query has a value (none evaluated, or none with a relevant judgment)"
"""Why a mean is shown as "–"."""


def _run_intervals(values: dict[str, dict[str, float | None]], measures: list[str]) -> Any:
    """Each measure's 95% bootstrap interval of the run's mean (as `recallbench history`)."""
    stats = series_statistics([values], _scales(measures))
    return {measure: stats.intervals[measure][0] for measure in measures}


def _query_groups(store: Store, run_id: int) -> dict[str, dict[str, Any]]:
    columns = (eval_queries.c.query_id, eval_queries.c.category, eval_queries.c.intent)
    query = select(*columns, eval_queries.c.status, eval_queries.c.latency_ms).where(
        eval_queries.c.run_id == run_id, eval_queries.c.workspace_id == store.workspace
    )
    with transaction(store._engine) as connection:
        return {
            row.query_id: {
                "category": row.category,
                "intent": row.intent,
                "status": row.status,
                "latency": row.latency_ms,
            }
            for row in connection.execute(query)
        }


def _query_texts(dataset: Dataset | None, sha256: str) -> dict[str, str]:
    if dataset is None or dataset.sha256 != sha256:
        return {}
    return {query.id: query.text for query in dataset.queries}


def compare(
    store: Store,
    first_id: int,
    second_id: int,
    dataset: Dataset | None,
    focus: str = "",
) -> dict[str, Any]:
    """Two runs on the queries both scored: per measure the paired difference (second -
    first) with its interval, the randomisation test (Holm over the measures) and wins /
    ties / losses; every query's values side by side; and what changed on the ``focus``
    measure (the first when it names none of theirs)."""
    from recallbench.compare._family import verdict
    from recallbench.stats._multiple import adjust
    from recallbench.stats._paired import PairedSettings, paired_results

    first, second = store.get(first_id), store.get(second_id)
    out: dict[str, Any] = {"first": run_summary(first), "second": run_summary(second)}
    if first.dataset_sha256 != second.dataset_sha256:
        out["refused"] = (
            f"run #{first.id} is on {first.dataset_name} ({first.dataset_sha256[:8]}) and "
            f"#{second.id} on {second.dataset_name} ({second.dataset_sha256[:8]}): "
            "different datasets, so no query is paired"
        )
        return out
    measures = [m for m in first.means if m in second.means]
    a, b = store.query_values(first.id), store.query_values(second.id)
    settings = PairedSettings(resamples=RESAMPLES)
    paired: list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]] = []
    for measure in measures:
        both = [
            (x, y)
            for query, values in a.items()
            if (x := values.get(measure)) is not None
            and (y := b.get(query, {}).get(measure)) is not None
        ]
        data = np.array(both, dtype=np.float64).reshape(-1, 2)
        paired.append((data[:, 0], data[:, 1]))
    better = [first.higher_is_better.get(m, True) for m in measures]
    results = paired_results([p[0] for p in paired], [p[1] for p in paired], better, settings)
    held = adjust([r.p_randomisation for r in results], "holm")
    rows = [
        {
            "measure": measure,
            **asdict(result),
            "p_holm": p,
            "verdict": verdict(result.delta, p, up, settings.alpha),
        }
        if result.n
        else _untested(measure, result.n, _unpaired_reason(measure, a, b, first.id, second.id))
        for measure, result, p, up in zip(measures, results, held, better, strict=True)
    ]
    texts = _query_texts(dataset, first.dataset_sha256)
    groups = _query_groups(store, first.id)
    queries = []
    for query, values in a.items():
        other = b.get(query)
        if other is None:
            continue
        cells = {m: (values.get(m), other.get(m)) for m in measures}
        differs = any(x != y for x, y in cells.values())
        deltas = {m: None if x is None or y is None else y - x for m, (x, y) in cells.items()}
        queries.append(
            {
                "id": query,
                "text": texts.get(query),
                "category": groups.get(query, {}).get("category"),
                "intent": groups.get(query, {}).get("intent"),
                "cells": cells,
                "deltas": deltas,
                "direction": _direction(deltas, measures, better),
                "differs": differs,
            }
        )
    summary = _what_changed(a, b, measures, better, groups, focus)
    out.update(
        measures=measures,
        rows=rows,
        queries=queries,
        what_changed=summary,
        higher_is_better=dict(zip(measures, better, strict=True)),
        categories=sorted({str(g["category"]) for g in groups.values() if g["category"]}),
        intents=sorted({str(g["intent"]) for g in groups.values() if g["intent"]}),
        only_first=len(set(a) - set(b)),
        only_second=len(set(b) - set(a)),
        method=settings.describe()["interval"]
        + "; "
        + settings.describe()["randomisation"]
        + f"; Holm-corrected over the {len(measures)} measures",
        alpha=settings.alpha,
    )
    return out


def _direction(deltas: dict[str, float | None], measures: list[str], better: list[bool]) -> str:
    """ "worse", "better" or "same" by the first measure with a value on both sides."""
    from recallbench.stats._paired import TIE

    for measure, up in zip(measures, better, strict=True):
        delta = deltas.get(measure)
        if delta is not None:
            signed = delta if up else -delta
            return "better" if signed > TIE else "worse" if signed < -TIE else "same"
    return "same"


def _what_changed(
    first: dict[str, dict[str, float | None]],
    second: dict[str, dict[str, float | None]],
    measures: list[str],
    better: list[bool],
    groups: dict[str, dict[str, Any]],
    focus: str,
) -> dict[str, Any] | None:
    """The queries that got worse and better on the ``focus`` measure (else the first),
    grouped by category (``report._what_changed``); None without a measure."""
    from recallbench.report._what_changed import what_changed

    if not measures:
        return None
    index = measures.index(focus) if focus in measures else 0
    measure = measures[index]
    categories = {q: [g["category"]] if g.get("category") else [] for q, g in groups.items()}
    found = what_changed(
        {q: v.get(measure) for q, v in first.items()},
        {q: v.get(measure) for q, v in second.items()},
        categories,
        higher_is_better=better[index],
    )
    return {"measure": measure, **asdict(found)}


def _untested(measure: str, n: int, reason: str) -> dict[str, Any]:
    """A comparison row with no paired query: no mean, difference, interval or test."""
    return {
        "measure": measure,
        "n": n,
        **dict.fromkeys(("mean_baseline", "mean_system", "delta", "ci_low", "ci_high")),
        "p_holm": None,
        "wins": None,
        "verdict": "not tested",
        "reason": reason,
    }


def _unpaired_reason(
    measure: str,
    first: dict[str, dict[str, float | None]],
    second: dict[str, dict[str, float | None]],
    first_id: int,
    second_id: int,
) -> str:
    """Why no query of two runs has a value of ``measure`` in both."""
    scored = [
        {query for query, values in run.items() if values.get(measure) is not None}
        for run in (first, second)
    ]
    unscored = [
        f"#{i}" for i, queries in zip((first_id, second_id), scored, strict=True) if not queries
    ]
    if unscored:
        return (
            f"no query with a relevant judgment in {' and '.join(unscored)}: a query without "
            "one has no value of this measure"
        )
    return "no query has a value in both runs"


def shadow(store: Store) -> dict[str, Any]:
    """A/B tests and their shadow runs: per test (and for shadow runs outside any test)
    the number of shadowed queries, how often the top result changed, mean Kendall's tau
    and Jaccard overlap, and both sides' mean latency."""
    where = shadow_runs.c.workspace_id == store.workspace
    columns = (
        shadow_runs.c.ab_test_id,
        func.count(),
        func.avg(shadow_runs.c.kendall_tau),
        func.avg(shadow_runs.c.jaccard),
        func.sum(func.coalesce(cast(shadow_runs.c.top1_changed, Integer), 0)),
        func.avg(shadow_runs.c.control_latency_ms),
        func.avg(shadow_runs.c.treatment_latency_ms),
        func.min(shadow_runs.c.created_at),
        func.max(shadow_runs.c.created_at),
    )
    with transaction(store._engine) as connection:
        tests = (
            connection.execute(
                select(ab_tests)
                .where(ab_tests.c.workspace_id == store.workspace)
                .order_by(ab_tests.c.created_at.desc())
            )
            .mappings()
            .all()
        )
        shadows = connection.execute(
            select(*columns).where(where).group_by(shadow_runs.c.ab_test_id)
        ).all()
    summary = {
        row[0]: {
            "queries": row[1],
            "tau": row[2],
            "jaccard": row[3],
            "top1_changed": (row[4] or 0) / row[1] if row[1] else None,
            "control_ms": row[5],
            "treatment_ms": row[6],
            "since": row[7],
            "until": row[8],
        }
        for row in shadows
    }
    return {
        "tests": [{**dict(test), "shadow": summary.pop(test["id"], None)} for test in tests],
        "untested": summary.get(None),
        "orphans": {key: value for key, value in summary.items() if key is not None},
    }


def chart_json(data: object) -> str:
    """``data`` as JSON safe inside a ``<script>`` element (the report pages' escaping)."""
    from recallbench.render._html import embed_json

    return embed_json(json.loads(json.dumps(data, default=str)))
