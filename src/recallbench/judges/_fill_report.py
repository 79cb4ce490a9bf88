"""What `recallbench judge` reports: the pool it judged, each judgment, and how every run's
means move when the judge's labels are added (``noise@k`` before and after)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Final, Literal

from rich.console import Console
from rich.table import Table

from recallbench.core import Dataset, DatasetRef, Run
from recallbench.core._model import Record
from recallbench.judges._fill import Filled, without_labels
from recallbench.judges._summary import JudgeSummary, describe
from recallbench.measures import Measure, Rules
from recallbench.measures._dataset_eval import evaluate_dataset

JUDGE_REPORT_FORMAT: Final = "recallbench.judge/v1"


class PairJudgment(Record):
    """One pooled pair and the judge's answer."""

    query_id: str
    doc_id: str
    rank: int
    systems: list[str]
    grade: int | None
    """The judge's label; null when the judgment failed."""
    confidence: float | None
    score: float
    """grade / 3, or the neutral 0.5 of a failed judgment."""
    failure: str | None
    detail: str = ""
    cached: bool
    tokens_in: int
    tokens_out: int
    cost_usd: float
    """At the configured prices (a replayed judgment at what it cost when asked)."""


class RunChange(Record):
    """One run's means with the dataset's labels only, and with the judge's added."""

    system: str
    pooled: int
    """Pairs of this run in the pool."""
    failed: int
    """Of those, judgments that failed."""
    judge_score: float | None
    """Mean judge score of its pooled pairs (grade / 3; a failed judgment counts 0.5)."""
    before: dict[str, float | None]
    after: dict[str, float | None]


class JudgeReport(Record):
    """`recallbench.judge/v1`."""

    format: Literal["recallbench.judge/v1"] = JUDGE_REPORT_FORMAT
    created_at: datetime
    recallbench_version: str
    dataset: DatasetRef
    judged_dataset: DatasetRef
    depth: int
    pool: dict[str, int]
    """pairs, unknown (results naming no memory of the dataset), skipped_queries."""
    labels_before: dict[str, int]
    labels_after: dict[str, int]
    judge: JudgeSummary
    endpoint: str | None
    """Where the model was asked this time (none for a local model)."""
    cached: int
    """Answers replayed from the cache in this invocation (pairs asking the same question
    share one)."""
    called: int
    """Calls made to the model in this invocation."""
    spent_usd: float | None
    """What this invocation's calls cost (replays cost nothing)."""
    measures: list[str]
    runs: list[RunChange]
    judgments: list[PairJudgment]


def run_changes(
    filled: Filled, runs: Sequence[Run], measures: Sequence[Measure], rules: Rules
) -> list[RunChange]:
    """Each run scored on the dataset without and with the judge's labels."""
    before_dataset = without_labels(filled.dataset)
    outcome = {
        (item.query_id, item.doc_id): judgment
        for item, judgment in zip(filled.pool.items, filled.judged.judgments, strict=True)
    }
    changes = []
    for run in runs:
        rankings = {r.query_id: [h.doc_id for h in r.hits] for r in run.results if not r.failed}
        mine = [
            judgment
            for item in filled.pool.items
            if run.spec.system in item.systems
            for judgment in [outcome[(item.query_id, item.doc_id)]]
        ]
        changes.append(
            RunChange(
                system=run.spec.system,
                pooled=len(mine),
                failed=sum(1 for judgment in mine if judgment.failed),
                judge_score=sum(j.score for j in mine) / len(mine) if mine else None,
                before=_means(before_dataset, rankings, measures, rules),
                after=_means(filled.dataset, rankings, measures, rules),
            )
        )
    return changes


def _means(
    dataset: Dataset, rankings: dict[str, list[str]], measures: Sequence[Measure], rules: Rules
) -> dict[str, float | None]:
    means = evaluate_dataset(dataset, rankings, measures, rules).means()
    return {name: (None if value != value else float(value)) for name, value in means.items()}


def pair_judgments(filled: Filled, price: Callable[[int, int], float]) -> list[PairJudgment]:
    return [
        PairJudgment(
            query_id=item.query_id,
            doc_id=item.doc_id,
            rank=item.rank,
            systems=list(item.systems),
            grade=None if judgment.value is None else judgment.value.grade,
            confidence=None if judgment.value is None else judgment.value.confidence,
            score=judgment.score,
            failure=judgment.failure,
            detail=judgment.detail,
            cached=judgment.cached,
            tokens_in=judgment.tokens_in,
            tokens_out=judgment.tokens_out,
            cost_usd=price(judgment.tokens_in, judgment.tokens_out),
        )
        for item, judgment in zip(filled.pool.items, filled.judged.judgments, strict=True)
    ]


def _rows(report: JudgeReport) -> list[tuple[str, ...]]:
    """(system, judged, judge score, measure, before, after, change) rows."""
    rows: list[tuple[str, ...]] = []
    for change in report.runs:
        head = (
            change.system,
            f"{change.pooled - change.failed}/{change.pooled}",
            _number(change.judge_score),
        )
        for index, measure in enumerate(report.measures):
            before, after = change.before[measure], change.after[measure]
            delta = None if before is None or after is None else after - before
            first = head if index == 0 else ("", "", "")
            rows.append(
                (*first, measure, _number(before), _number(after), _number(delta, signed=True))
            )
    return rows


_HEADER = ("system", "judged", "judge score", "measure", "before", "after", "change")


def render_terminal(report: JudgeReport, console: Console) -> None:
    console.print(describe(report.judge), highlight=False)
    pool = report.pool
    notes = [
        f"{report.cached} replayed from the cache, {report.called} asked",
        f"{pool['unknown']} results name no memory of the dataset" if pool["unknown"] else "",
        f"{pool['skipped_queries']} unanswerable queries skipped"
        if pool["skipped_queries"]
        else "",
    ]
    console.print(
        f"pool: {pool['pairs']} unjudged pairs in the top {report.depth} of "
        f"{len(report.runs)} run(s); " + "; ".join(note for note in notes if note),
        highlight=False,
    )
    table = Table(title="means with the dataset's labels (before) and the judge's added (after)")
    for index, name in enumerate(_HEADER):
        table.add_column(name, justify="left" if index in (0, 3) else "right")
    for row in _rows(report):
        table.add_row(*row)
    console.print(table)


def render_markdown(report: JudgeReport) -> str:
    lines = [
        f"# Judged: {report.dataset.name} {report.dataset.version}",
        "",
        describe(report.judge) + ".",
        "",
        f"Pool: {report.pool['pairs']} unjudged (query, memory) pairs in the top "
        f"{report.depth} of {len(report.runs)} run(s); labels before "
        f"{_labels(report.labels_before)}, after {_labels(report.labels_after)}. "
        f"Judged dataset: {report.judged_dataset.name} {report.judged_dataset.version} "
        f"(sha256 {report.judged_dataset.sha256[:12]}).",
        "",
        "A failed judgment gives no label (the pair stays unjudged) and counts 0.5 in the "
        "judge score. The judge's labels are a model's, not people's: see "
        "`recallbench judge calibrate` for how well it agrees with human labels.",
        "",
        "| " + " | ".join(_HEADER) + " |",
        "|---|---:|---:|---|---:|---:|---:|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in _rows(report)]
    return "\n".join(lines) + "\n"


def _labels(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {source}" for source, n in counts.items())


def _number(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.4f}" if signed else f"{value:.4f}"
