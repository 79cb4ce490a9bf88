"""Debugging a regression on the dashboard: one query as two runs answered it, side by side.

The store keeps each query's values, not its ranking; `recallbench run` and `bench` record
the folder they wrote (run.json, report.json) as the run's ``source``, and the rankings are
read from there: the whole ranking from run.json when the folder holds one, else the first
20 ids report.json keeps. Grades come from the dataset given to ``serve --dataset`` when it
is the runs' (every judged memory, with its text), else from the reports (the memories at or
above the relevance threshold). When a folder is gone, the page says which and why.

Each ranked memory gets its move from the first run to the second: ``↑3`` (three places
up), ``↓2``, ``new`` (not in the first run's shown list), and the first run's memories that
the second no longer shows are ``dropped``. The relevant memories a run missed are those
not in its shown list.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recallbench.core import ConfigError

if TYPE_CHECKING:
    from recallbench.core import Dataset
    from recallbench.report import Report
    from recallbench.store import Store

SHOWN = 20
"""Ranks shown per run (report.json keeps the first 20)."""


@dataclass(frozen=True, slots=True)
class Source:
    """One run's recorded folder, read; or why it cannot be."""

    run_id: int
    report: Report | None
    rankings: dict[str, list[str]]
    """Returned ids per query, best first."""
    reason: str = ""
    """Why there is no report (the folder is gone, or was never recorded)."""


def source(store: Store, run_id: int) -> Source:
    """Run ``run_id``'s report and rankings from its recorded folder, or the reason why not."""
    from recallbench.report._read import output_file

    recorded = store.get(run_id).source
    if not recorded:
        return Source(
            run_id,
            None,
            {},
            f"run #{run_id} has no recorded folder (recorded from Python, or before runs "
            "recorded theirs): its rankings are not known",
        )
    path = Path(recorded)
    if not path.exists():
        return Source(
            run_id,
            None,
            {},
            f"run #{run_id}'s folder {path} is gone (moved or deleted): its rankings are "
            "not known; run it again, or compare report files with `recallbench compare`",
        )
    try:
        report_path = output_file(path, ("report.json",))
        stamp = report_path.stat().st_mtime_ns
        report, rankings = _read(str(report_path), stamp)
    except (ConfigError, OSError) as error:
        return Source(run_id, None, {}, f"run #{run_id}'s folder {path}: {error}")
    return Source(run_id, report, rankings)


@lru_cache(maxsize=16)
def _read(path: str, stamp: int) -> tuple[Report, dict[str, list[str]]]:
    """A report.json and the rankings of the run.json beside it (cached per file version)."""
    from recallbench.core import RecallbenchError
    from recallbench.report._read import read_report
    from recallbench.serve._rankings import recorded_rankings

    report = read_report(Path(path))
    rankings = {query.id: list(query.returned) for query in report.queries}
    run_path = Path(path).with_name("run.json")
    if run_path.is_file():
        try:
            whole = recorded_rankings(run_path)
        except RecallbenchError:  # a damaged run.json: the report's first 20 ids still hold
            return report, rankings
        rankings.update({query: list(ids) for query, ids in whole.items()})
    return report, rankings


def moves(first: list[str], second: list[str]) -> tuple[dict[str, str], list[str]]:
    """Each of ``second``'s ids with its move from ``first`` ("↑3", "↓2", "=", "new"), and
    ``first``'s ids that ``second`` does not hold (dropped), in ``first``'s order."""
    before = {doc: rank for rank, doc in enumerate(first)}
    found: dict[str, str] = {}
    for rank, doc in enumerate(second):
        old = before.get(doc)
        if old is None:
            found[doc] = "new"
        elif old > rank:
            found[doc] = f"↑{old - rank}"
        elif old < rank:
            found[doc] = f"↓{rank - old}"
        else:
            found[doc] = "="
    held = set(second)
    return found, [doc for doc in first if doc not in held]


def query_sides(
    sources: list[Source], query_id: str, dataset: Dataset | None
) -> dict[str, Any] | None:
    """One query as each run answered it: its ranked memories with grades and moves, the
    relevant memories it missed, its values; None when no run's report holds the query."""
    reports = [s.report for s in sources if s.report is not None]
    if not reports:
        return None
    queries = [
        next((q for q in s.report.queries if q.id == query_id), None) if s.report else None
        for s in sources
    ]
    if all(q is None for q in queries):
        return None
    threshold = reports[0].relevance_threshold
    usable = dataset is not None and dataset.sha256 == reports[0].dataset.sha256
    grades: dict[str, int] = {}
    for query in queries:
        if query is not None:
            grades.update(query.relevant)
    texts: dict[str, str] = {}
    if usable and dataset is not None:
        grades = dict(dataset.qrels.get(query_id, {}))
        texts = {document.id: document.text for document in dataset.documents}
    rankings = [s.rankings.get(query_id, [])[:SHOWN] for s in sources]
    moved, dropped = moves(rankings[0], rankings[-1]) if len(rankings) == 2 else ({}, [])
    relevant = [doc for doc, grade in grades.items() if grade >= threshold]
    sides = []
    for index, (run, query, ranking) in enumerate(zip(sources, queries, rankings, strict=True)):
        last = index == len(sources) - 1 and len(sources) == 2
        first = index == 0 and len(sources) == 2
        sides.append(
            {
                "run": run.run_id,
                "reason": run.reason,
                "present": query is not None,
                "status": query.status if query else None,
                "values": query.values if query else {},
                "rows": [
                    {
                        "rank": rank,
                        "id": doc,
                        "grade": grades.get(doc),
                        "relevant": grades.get(doc, 0) >= threshold and doc in grades,
                        "move": moved.get(doc, "") if last else "",
                        "dropped": first and doc in dropped,
                        "text": texts.get(doc),
                    }
                    for rank, doc in enumerate(ranking, 1)
                ],
                "missed": [
                    {"id": doc, "grade": grades[doc], "text": texts.get(doc)}
                    for doc in relevant
                    if doc not in ranking
                ],
            }
        )
    known = next(q for q in queries if q is not None)
    return {
        "id": query_id,
        "text": known.text,
        "category": known.category,
        "intent": known.intent,
        "sides": sides,
        "measures": [m.name for m in reports[0].measures],
        "threshold": threshold,
        "graded_by": "the dataset's judgments (--dataset)"
        if usable
        else "the reports (memories at or above the relevance threshold; others ungraded)",
        "texts": usable,
        "shown": SHOWN,
        "dropped": dropped,
    }
