"""What `recallbench qa` reports: every answer with its verdicts, and per system the means
with bootstrap intervals under both conventions (answerable questions only, as mem0's
LoCoMo numbers; and every question, the unanswerable ones correct when declined), per
category with the category map, the adversarial questions apart, and every model call's
counts, failures, tokens and cost."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, Literal

import numpy as np
from pydantic import Field

from recallbench.core import DatasetRef
from recallbench.core._model import Record
from recallbench.judges._config import JudgeConfig
from recallbench.judges._run import JudgeRun
from recallbench.qa._pipeline import Answered, Batches
from recallbench.stats._resampling import mean_intervals

QA_FORMAT: Final = "recallbench.qa/v1"
RESAMPLES = 2_000
LEVEL = 0.95
SEED = 0

MEASURES: dict[str, Callable[[Answered], float | None]] = {
    "j_strict": lambda a: a.j_strict,
    "j_lenient": lambda a: a.j_lenient,
    "f1": lambda a: a.f1,
    "bleu1": lambda a: a.bleu1,
    "evidence_recall": lambda a: a.evidence_recall,
}
"""Per-question values, each None where it does not apply."""

POPULATIONS: dict[str, Callable[[Answered], bool]] = {
    "answerable": lambda a: not a.question.abstention,
    "all": lambda a: True,
}
"""``answerable``: LoCoMo categories 1-4 (mem0's convention) or LongMemEval without its
abstention questions; ``all``: every question, an unanswerable one correct when declined."""


class Mean(Record):
    n: int
    mean: float | None
    low: float | None = None
    high: float | None = None


class CategoryRow(Record):
    category: str
    category_id: int | None
    n: int
    means: dict[str, float | None]


class Adversarial(Record):
    """Unanswerable questions, apart: did the answer decline, did it take the trap."""

    n: int
    answered: int
    """Of those, questions the answer model answered (not failed)."""
    abstained: float | None
    """Share declined (the abstention judge; a failed judgment counts 0.5)."""
    trap_questions: int
    """Questions with a known trap answer (LoCoMo's adversarial_answer)."""
    trap_taken: float | None
    """Share of those whose answer the strict judge matched to the trap answer (a failed
    answer or verdict counts 0.5, as every failed judgment does)."""
    trap_unjudged: int = 0
    """Of the trap questions, those without a verdict (scored 0.5 in ``trap_taken``)."""


class SystemQA(Record):
    system: str
    k: int | None
    """Memories given to the answer model (None: the full context)."""
    questions: int
    answer_failures: int
    populations: dict[str, dict[str, Mean]]
    categories: list[CategoryRow]
    adversarial: Adversarial | None


class QuestionRow(Record):
    system: str
    query_id: str
    category: str | None
    category_id: int | None
    abstention: bool
    question: str
    gold: str
    memories: int
    answer: str | None
    j_strict: float
    j_lenient: float
    f1: float | None
    bleu1: float | None
    evidence_recall: float | None
    strict_reasoning: str | None = None
    lenient_reasoning: str | None = None
    abstained: bool | None = None
    trap_taken: bool | None = None
    failures: list[str] = Field(default_factory=list)
    """Failed calls for this question: ``task: reason``."""
    tokens_in: int
    """The answer model's tokens for this answer; 0 when another system's identical
    question and memories asked the same call (it is counted there)."""
    tokens_out: int
    latency_ms: float
    """The answer model's time for this answer (as recorded when replayed)."""


class Calls(Record):
    """One task's model calls."""

    task: str
    prompt: str
    model: str
    calls: int
    """Calls made now; identical inputs (two systems giving the same answer) are one."""
    replayed: int
    """Answers replayed from the cache, each once however many inputs share it."""
    failed: dict[str, int]
    failure_rate: float
    unreliable: bool
    tokens_in: int
    """Tokens of every distinct answer, made now or replayed (at what it cost when asked)."""
    tokens_out: int
    cost_usd: float


class Agreement(Record):
    """A rerun against a previous report: the share of the same strict verdicts."""

    previous: str
    compared: int
    same: int
    share: float | None


class QAReport(Record):
    format: Literal["recallbench.qa/v1"] = QA_FORMAT
    created_at: datetime
    recallbench_version: str
    dataset: DatasetRef
    rules: dict[str, str]
    category_map: dict[str, str]
    """LoCoMo's numeric category -> its name, as the dataset's loader read it."""
    reader: str
    judge: str
    intervals: str
    calls: list[Calls]
    systems: list[SystemQA]
    questions: list[QuestionRow]
    agreement: Agreement | None = None


def _means(items: Sequence[Answered]) -> dict[str, Mean]:
    samples = {}
    for name, value_of in MEASURES.items():
        values = [v for v in (value_of(a) for a in items) if v is not None]
        samples[name] = np.asarray(values, dtype=np.float64)
    order = [name for name in MEASURES if samples[name].size]
    intervals = mean_intervals([samples[n] for n in order], RESAMPLES, LEVEL, "bca", SEED)
    found = dict(zip(order, intervals, strict=True))
    result = {}
    for name in MEASURES:
        sample = samples[name]
        interval = found.get(name)
        result[name] = Mean(
            n=int(sample.size),
            mean=float(sample.mean()) if sample.size else None,
            low=None if interval is None else interval[0],
            high=None if interval is None else interval[1],
        )
    return result


def _plain_mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def system_summary(system: str, k: int | None, items: Sequence[Answered]) -> SystemQA:
    categories: dict[str, list[Answered]] = {}
    for item in items:
        categories.setdefault(item.question.query.category or "(none)", []).append(item)
    unanswerable = [a for a in items if a.question.abstention]
    with_trap = [a for a in unanswerable if a.question.trap is not None]
    answered = [a for a in unanswerable if a.answer is not None]
    return SystemQA(
        system=system,
        k=k,
        questions=len(items),
        answer_failures=sum(1 for a in items if a.answer is None),
        populations={
            name: _means([a for a in items if keep(a)]) for name, keep in POPULATIONS.items()
        },
        categories=[
            CategoryRow(
                category=name,
                category_id=members[0].question.category_id,
                n=len(members),
                means={m: _plain_mean([f(a) for a in members]) for m, f in MEASURES.items()},
            )
            for name, members in sorted(
                categories.items(), key=lambda kv: (kv[1][0].question.category_id or 99, kv[0])
            )
        ],
        adversarial=None
        if not unanswerable
        else Adversarial(
            n=len(unanswerable),
            answered=len(answered),
            abstained=_plain_mean([a.abstention.score for a in answered if a.abstention]),
            trap_questions=len(with_trap),
            trap_taken=_plain_mean(
                [0.5 if a.trap_taken is None else float(a.trap_taken) for a in with_trap]
            ),
            trap_unjudged=sum(1 for a in with_trap if a.trap_taken is None),
        ),
    )


def question_rows(items: Sequence[Answered]) -> list[QuestionRow]:
    rows = []
    for a in items:
        q = a.question
        failures = [
            f"{task}: {judgment.failure}"
            for task, judgment in (
                ("read", a.read),
                ("strict", a.strict),
                ("lenient", a.lenient),
                ("abstention", a.abstention),
                ("trap", a.trap),
            )
            if judgment is not None and judgment.failure is not None
        ]
        rows.append(
            QuestionRow(
                system=a.system,
                query_id=q.query.id,
                category=q.query.category,
                category_id=q.category_id,
                abstention=q.abstention,
                question=q.query.text,
                gold=q.gold,
                memories=a.memories,
                answer=a.answer,
                j_strict=a.j_strict,
                j_lenient=a.j_lenient,
                f1=a.f1,
                bleu1=a.bleu1,
                evidence_recall=a.evidence_recall,
                strict_reasoning=_reasoning(a.strict),
                lenient_reasoning=_reasoning(a.lenient),
                abstained=None
                if a.abstention is None or a.abstention.value is None
                else a.abstention.value.abstained,
                trap_taken=a.trap_taken,
                failures=failures,
                tokens_in=a.read.tokens_in,
                tokens_out=a.read.tokens_out,
                latency_ms=a.read.latency_ms,
            )
        )
    return rows


def _reasoning(judgment: Any) -> str | None:
    return None if judgment is None or judgment.value is None else judgment.value.reasoning


def call_counts(
    batches: Batches, prompts: Mapping[str, str], configs: Mapping[str, JudgeConfig]
) -> list[Calls]:
    """Per task: calls, replays, failures, tokens, cost (at the task's model's prices)."""
    counts = []
    for name, run in batches.runs.items():
        config = configs[name]
        counts.append(_calls(name, prompts[name], config, run))
    return counts


def _calls(name: str, prompt: str, config: JudgeConfig, run: JudgeRun[Any]) -> Calls:
    stats = run.stats
    tokens_in = sum(j.tokens_in for j in run.judgments)
    tokens_out = sum(j.tokens_out for j in run.judgments)
    return Calls(
        task=name,
        prompt=prompt,
        model=config.model,
        calls=stats.called,
        replayed=stats.cached,
        failed=dict(sorted(stats.failed.items())),
        failure_rate=stats.failure_rate,
        unreliable=stats.unreliable,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=config.cost(tokens_in, tokens_out),
    )


def agreement_with(previous: QAReport, source: str, rows: Sequence[QuestionRow]) -> Agreement:
    """The share of (system, question) pairs in both reports with the same strict verdict."""
    before = {(r.system, r.query_id): r.j_strict for r in previous.questions}
    shared = [
        (before[(r.system, r.query_id)], r.j_strict)
        for r in rows
        if (r.system, r.query_id) in before
    ]
    same = sum(1 for old, new in shared if old == new)
    return Agreement(
        previous=source,
        compared=len(shared),
        same=same,
        share=same / len(shared) if shared else None,
    )
