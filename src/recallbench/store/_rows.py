"""Between a ``Report`` and the store's rows, both ways, with no database in sight."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import RowMapping

from recallbench.store._model import StoredRun
from recallbench.store._tables import as_utc

if TYPE_CHECKING:
    from recallbench.report import Report

Row = dict[str, Any]
T = TypeVar("T")


def finite(value: float | None) -> float | None:
    """NaN and infinities become NULL: SQLite would store NaN as NULL anyway, PostgreSQL
    would keep it; one rule for both."""
    return value if value is not None and math.isfinite(value) else None


def run_row(
    report: Report, workspace: str, source: str | None, accepted: bool, now: datetime
) -> Row:
    latency = report.latency_ms
    counts = report.counts
    judge = report.judge
    return {
        "workspace_id": workspace,
        "system": report.system.system,
        "system_settings": json.dumps(report.system.settings, ensure_ascii=False),
        "dataset_name": report.dataset.name,
        "dataset_version": report.dataset.version,
        "dataset_sha256": report.dataset.sha256.lower(),
        "dataset_loader": report.dataset.loader,
        "relevance_threshold": report.relevance_threshold,
        "k": report.system.k,
        "recallbench_version": report.recallbench_version,
        "git_revision": report.git_revision,
        "created_at": as_utc(report.created_at),
        "recorded_at": now,
        "accepted": accepted,
        "accepted_at": now if accepted else None,
        "queries": counts.queries,
        "evaluated": counts.evaluated,
        "failed": counts.failed,
        "missing": counts.missing,
        "no_relevant": counts.no_relevant,
        "latency_p50": finite(latency.p50) if latency else None,
        "latency_p95": finite(latency.p95) if latency else None,
        "latency_p99": finite(latency.p99) if latency else None,
        "source": source,
        "rules": json.dumps(report.rules, ensure_ascii=False),
        "judge_model": judge.model if judge else None,
        "judge_prompt": judge.prompt if judge else None,
        "llm_labels": report.labels.get("llm"),
        "judge_failure_rate": finite(judge.failure_rate) if judge else None,
        "judge_unreliable": judge.unreliable if judge else None,
        "judge_tokens": judge.tokens_in + judge.tokens_out if judge else None,
        "judge_cost": finite(judge.cost_usd) if judge else None,
    }


def measure_rows(report: Report, run_id: int, workspace: str) -> list[Row]:
    return [
        {
            "run_id": run_id,
            "workspace_id": workspace,
            "measure": info.name,
            "mean": finite(report.means.get(info.name)),
            "higher_is_better": info.higher_is_better,
            "position": position,
        }
        for position, info in enumerate(report.measures)
    ]


def query_rows(report: Report, run_id: int, workspace: str) -> list[Row]:
    return [
        {
            "run_id": run_id,
            "workspace_id": workspace,
            "query_id": query.id,
            "position": position,
            "category": query.category,
            "intent": query.intent,
            "status": query.status,
            "latency_ms": finite(query.latency_ms),
        }
        for position, query in enumerate(report.queries)
    ]


def value_rows(report: Report, run_id: int, workspace: str) -> list[Row]:
    """One row per query and measure, NULL where the query has no value (left out)."""
    names = [info.name for info in report.measures]
    return [
        {
            "run_id": run_id,
            "workspace_id": workspace,
            "query_id": query.id,
            "measure": name,
            "value": finite(query.values.get(name)),
        }
        for query in report.queries
        for name in names
    ]


def stored_run(row: RowMapping, measures: Sequence[RowMapping]) -> StoredRun:
    """A run row and its measure rows (in position order) as a :class:`StoredRun`."""
    return StoredRun(
        id=row["id"],
        workspace=row["workspace_id"],
        system=row["system"],
        dataset_name=row["dataset_name"],
        dataset_version=row["dataset_version"],
        dataset_sha256=row["dataset_sha256"],
        created_at=row["created_at"],
        recorded_at=row["recorded_at"],
        accepted=bool(row["accepted"]),
        accepted_at=row["accepted_at"],
        k=row["k"],
        recallbench_version=row["recallbench_version"],
        git_revision=row["git_revision"],
        source=row["source"],
        queries=row["queries"],
        evaluated=row["evaluated"],
        failed=row["failed"],
        missing=row["missing"],
        no_relevant=row["no_relevant"],
        error_rate=row["failed"] / row["queries"] if row["queries"] else 0.0,
        latency_p50=row["latency_p50"],
        latency_p95=row["latency_p95"],
        latency_p99=row["latency_p99"],
        means={m["measure"]: m["mean"] for m in measures},
        higher_is_better={m["measure"]: bool(m["higher_is_better"]) for m in measures},
        judge_model=row["judge_model"],
        judge_prompt=row["judge_prompt"],
        llm_labels=row["llm_labels"],
        judge_failure_rate=row["judge_failure_rate"],
        judge_unreliable=None if row["judge_unreliable"] is None else bool(row["judge_unreliable"]),
        judge_tokens=row["judge_tokens"],
        judge_cost=row["judge_cost"],
    )


def chunks(items: Sequence[T], size: int = 500) -> Iterable[Sequence[T]]:
    """Slices of ``items``: bound parameters per statement are limited (SQLite: 32766)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
