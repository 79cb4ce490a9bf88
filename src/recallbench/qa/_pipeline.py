"""Answering questions from retrieved memories, and scoring the answers.

For each question with a gold answer, a system's top-k memories (or, for the reference
row, every memory of the question's conversation or haystack) go to the answer model (the
``read`` task), and the answer is scored:

- ``J strict`` and ``J lenient``: the ``answer`` and ``answer_lenient`` judges against the
  gold answer (1 correct, 0 not; a failed judgment 0.5, counted);
- an unanswerable question (LoCoMo's adversarial category, LongMemEval's ``_abs``) is
  correct when the answer declines (the ``abstention`` judge), for both J columns; where
  the dataset gives the trap answer (LoCoMo's ``adversarial_answer``, unless it is itself a
  decline), the strict judge also says whether the answer took it (a failed verdict 0.5,
  counted);
- token F1 and BLEU-1 as LoCoMo's own evaluation computes them (judge-free);
- the retrieval behind it: recall@k of the question's evidence in the same run, so that a
  wrong answer reads as a retrieval or a reading failure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from recallbench.core import Dataset, Document, Query, Run
from recallbench.judges._judgment import Judgment
from recallbench.judges._run import JudgeRun
from recallbench.judges._setup import JudgeSetup, judge_all
from recallbench.judges._task_kinds import (
    Abstention,
    AbstentionInput,
    AbstentionTask,
    AnswerInput,
    AnswerTask,
    AnswerVerdict,
    LenientAnswerTask,
    ReadAnswer,
    ReadInput,
    ReadTask,
)
from recallbench.measures import Rules, parse_measure
from recallbench.measures._dataset_eval import evaluate_dataset
from recallbench.qa._lexical import bleu1, is_decline, locomo_f1, token_f1

FULL_CONTEXT = "full-context"
"""The reference row's name: every memory of the question's conversation, no retrieval."""

DATE_KEYS = ("session_date", "date", "created_at")
"""Document metadata read as a memory's date, first found wins."""


@dataclass(frozen=True, slots=True)
class Question:
    query: Query
    gold: str
    """The gold answer (LoCoMo's adversarial questions: the trap answer)."""
    abstention: bool
    """Unanswerable: the right answer declines."""
    category_id: int | None
    """LoCoMo's numeric category, which its F1 rules depend on."""

    @property
    def trap(self) -> str | None:
        """The wrong answer an adversarial question invites, when the dataset gives it:
        LoCoMo's ``adversarial_answer`` (datasets converted before it was kept apart: the
        gold answer, which was the trap then). None when that text is itself a decline
        ("Not mentioned", conv-30 q79 and q103): declining, the right answer, would count as
        taking the trap."""
        if not (self.abstention and self.category_id == 5):
            return None
        trap = self.query.metadata.get("adversarial_answer", self.gold)
        if not isinstance(trap, str) or not trap.strip() or is_decline(trap):
            return None
        return trap


def qa_questions(
    dataset: Dataset, categories: Sequence[str] = (), units: Sequence[str] = ()
) -> list[Question]:
    """The dataset's questions that have a gold answer (``metadata.answer``), in order,
    optionally only some categories or units (conversations, haystacks)."""
    questions = []
    for query in dataset.queries:
        gold = query.metadata.get("answer")
        if gold is None or isinstance(gold, dict | list) or not str(gold).strip():
            continue
        if categories and query.category not in categories:
            continue
        if units and query.unit not in units:
            continue
        category_id = query.metadata.get("category_id")
        questions.append(
            Question(
                query,
                str(gold),
                query.unanswerable,
                category_id if isinstance(category_id, int) else None,
            )
        )
    return questions


def memory_text(document: Document) -> str:
    """A memory as the answer model reads it: its date first when it has one."""
    text = f"{document.title}\n{document.text}" if document.title else document.text
    for key in DATE_KEYS:
        date = document.metadata.get(key)
        if isinstance(date, str) and date:
            return f"({date}) {text}"
    return text


def question_text(query: Query) -> str:
    """The question, with the day it is asked when the dataset gives it (LongMemEval)."""
    asked = query.metadata.get("question_date")
    return f"(asked on {asked}) {query.text}" if isinstance(asked, str) and asked else query.text


def retrieved_context(dataset: Dataset, run: Run, k: int) -> dict[str, tuple[str, ...]]:
    """Each query's top-k memories in the run (memories the dataset lacks are skipped)."""
    documents = dataset.documents_by_id
    return {
        result.query_id: tuple(
            memory_text(documents[hit.doc_id]) for hit in result.hits[:k] if hit.doc_id in documents
        )
        for result in run.results
        if not result.failed
    }


def full_context(dataset: Dataset, questions: Sequence[Question]) -> dict[str, tuple[str, ...]]:
    """Every memory of each question's unit (its conversation or haystack), in the
    dataset's order; the whole corpus when the dataset has no units."""
    everything = tuple(memory_text(d) for d in dataset.documents)
    by_unit: dict[str, tuple[str, ...]] = {}
    context = {}
    for question in questions:
        unit = question.query.unit
        if unit is None or unit not in dataset.units:
            context[question.query.id] = everything
            continue
        if unit not in by_unit:
            by_unit[unit] = tuple(memory_text(d) for d in dataset.unit_documents(unit))
        context[question.query.id] = by_unit[unit]
    return context


def evidence_recall(
    dataset: Dataset, run: Run, k: int, questions: Sequence[Question]
) -> dict[str, float | None]:
    """recall@k of each answerable question's evidence (its relevant memories) in ``run``."""
    measure = parse_measure(f"recall@{k}")
    rankings = {r.query_id: [h.doc_id for h in r.hits] for r in run.results if not r.failed}
    evaluation = evaluate_dataset(
        dataset, rankings, [measure], Rules(relevance_threshold=dataset.relevance_threshold)
    )
    values = evaluation.values[str(measure)]
    population = evaluation.population(str(measure))
    index = {query.id: i for i, query in enumerate(dataset.queries)}
    wanted = {q.query.id for q in questions if not q.abstention}
    return {
        query_id: float(values[i]) if population[i] else None
        for query_id, i in index.items()
        if query_id in wanted
    }


@dataclass(slots=True)
class Answered:
    """One question answered by one system and scored."""

    question: Question
    system: str
    memories: int
    """How many memories the answer model read."""
    read: Judgment[ReadAnswer]
    strict: Judgment[AnswerVerdict] | None = None
    lenient: Judgment[AnswerVerdict] | None = None
    abstention: Judgment[Abstention] | None = None
    trap: Judgment[AnswerVerdict] | None = None
    evidence_recall: float | None = None

    @property
    def answer(self) -> str | None:
        return None if self.read.value is None else self.read.value.answer

    @property
    def j_strict(self) -> float:
        return self._j(self.strict)

    @property
    def j_lenient(self) -> float:
        return self._j(self.lenient)

    def _j(self, verdict: Judgment[AnswerVerdict] | None) -> float:
        if self.answer is None:
            return self.read.score  # the neutral 0.5 of a failed answer
        if self.question.abstention:
            assert self.abstention is not None
            return self.abstention.score
        assert verdict is not None
        return verdict.score

    @property
    def f1(self) -> float | None:
        """LoCoMo's F1 (its category rules when the category is LoCoMo's); None for an
        unanswerable question without LoCoMo's rule for it, or without an answer."""
        if self.answer is None:
            return None
        category = self.question.category_id
        if category is not None:
            return locomo_f1(self.answer, self.question.gold, category)
        if self.question.abstention:
            return None
        return token_f1(self.answer, self.question.gold)

    @property
    def bleu1(self) -> float | None:
        if self.answer is None or self.question.abstention:
            return None
        return bleu1(self.answer, self.question.gold)

    @property
    def trap_taken(self) -> bool | None:
        if self.trap is None or self.trap.value is None:
            return None
        return self.trap.value.correct


@dataclass(slots=True)
class Batches:
    """Every model call of a QA run, by task, for counts, failures and cost."""

    runs: dict[str, JudgeRun[Any]] = field(default_factory=dict)


async def answer_and_judge(
    questions: Sequence[Question],
    contexts: Mapping[str, Mapping[str, tuple[str, ...]]],
    recalls: Mapping[str, Mapping[str, float | None]],
    reader: JudgeSetup,
    judge: JudgeSetup,
    *,
    strict: bool = False,
    progress: Callable[[str], Callable[[int, int], None] | None] | None = None,
) -> tuple[dict[str, list[Answered]], Batches]:
    """Answer every question with every system's context, then judge the answers.

    ``contexts``: system -> query id -> memories (a query missing from a system's
    context failed in its run: it is answered from no memories). Returns the answered
    questions per system, in question order, and the batches by task."""
    batches = Batches()
    systems = list(contexts)
    pairs = [(system, question) for system in systems for question in questions]
    reads = await judge_all(
        ReadTask(),
        [
            ReadInput(question_text(q.query), contexts[system].get(q.query.id, ()))
            for system, q in pairs
        ],
        reader,
        strict=strict,
        progress=progress("answering") if progress else None,
    )
    batches.runs["read"] = reads
    answered = [
        Answered(
            question,
            system,
            len(contexts[system].get(question.query.id, ())),
            read,
            evidence_recall=recalls.get(system, {}).get(question.query.id),
        )
        for (system, question), read in zip(pairs, reads.judgments, strict=True)
    ]
    given = [a for a in answered if a.answer is not None]
    answerable = [a for a in given if not a.question.abstention]
    declined = [a for a in given if a.question.abstention]
    trapped = [a for a in declined if a.question.trap is not None]

    def verdicts(items: list[Answered], gold: Callable[[Answered], str]) -> list[AnswerInput]:
        return [AnswerInput(a.question.query.text, gold(a), a.answer or "") for a in items]

    plan: list[tuple[str, Any, list[Any], list[Answered], str]] = [
        (
            "strict",
            AnswerTask(),
            verdicts(answerable, lambda a: a.question.gold),
            answerable,
            "strict",
        ),
        (
            "lenient",
            LenientAnswerTask(),
            verdicts(answerable, lambda a: a.question.gold),
            answerable,
            "lenient",
        ),
        (
            "abstention",
            AbstentionTask(),
            [AbstentionInput(a.question.query.text, a.answer or "") for a in declined],
            declined,
            "abstention",
        ),
        ("trap", AnswerTask(), verdicts(trapped, lambda a: a.question.trap or ""), trapped, "trap"),
    ]
    for name, task, inputs, items, attribute in plan:
        if not inputs:
            continue
        judged = await judge_all(
            task,
            inputs,
            judge,
            strict=strict,
            progress=progress(f"judging ({name})") if progress else None,
        )
        batches.runs[name] = judged
        for item, judgment in zip(items, judged.judgments, strict=True):
            setattr(item, attribute, judgment)
    by_system: dict[str, list[Answered]] = {system: [] for system in systems}
    for item in answered:
        by_system[item.system].append(item)
    return by_system, batches
