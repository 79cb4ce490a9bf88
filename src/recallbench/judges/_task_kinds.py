"""The four judge tasks: relevance, faithfulness, merge and answer (prompts in ``prompts/``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from recallbench.judges._provider import UnparseableOutputError
from recallbench.judges._tasks import JudgeTask, numbered

Decision = Literal["ADD", "UPDATE", "DELETE", "NOOP"]
ClaimLabel = Literal["supported", "partial", "not"]


# ---------------------------------------------------------------- relevance


@dataclass(frozen=True, slots=True)
class RelevanceInput:
    query: str
    memory: str


@dataclass(frozen=True, slots=True)
class Relevance:
    grade: int
    """0-3, UMBRELA's scale."""
    confidence: float
    """The model's stated confidence, 0-1 (kept with the label in ``judgments``)."""
    reasoning: str


class RelevanceTask(JudgeTask[RelevanceInput, Relevance]):
    """UMBRELA-style 0-3 relevance of one memory to one query."""

    input_type = RelevanceInput
    name = "relevance"
    version = "1"

    def fields(self, item: RelevanceInput) -> Mapping[str, str]:
        return {"query": item.query, "memory": item.memory}

    def value(self, data: dict[str, Any], item: RelevanceInput, text: str) -> Relevance:
        return Relevance(int(data["grade"]), float(data["confidence"]), data["reasoning"])

    def score(self, value: Relevance) -> float:
        return value.grade / 3


# ---------------------------------------------------------------- faithfulness


@dataclass(frozen=True, slots=True)
class FaithfulnessInput:
    question: str
    answer: str
    memories: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Claim:
    claim: str
    label: ClaimLabel
    memories: tuple[int, ...]
    """1-based numbers of the supporting memories."""


@dataclass(frozen=True, slots=True)
class Faithfulness:
    claims: tuple[Claim, ...]

    @property
    def supported_share(self) -> float:
        supported = sum(claim.label == "supported" for claim in self.claims)
        return supported / len(self.claims)


class FaithfulnessTask(JudgeTask[FaithfulnessInput, Faithfulness]):
    """The answer's claims, each supported / partial / not by the retrieved memories;
    score = supported share (a partial claim is not supported)."""

    input_type = FaithfulnessInput
    name = "faithfulness"
    version = "1"

    def fields(self, item: FaithfulnessInput) -> Mapping[str, str]:
        return {
            "question": item.question,
            "answer": item.answer,
            "memories": numbered(item.memories),
        }

    def value(self, data: dict[str, Any], item: FaithfulnessInput, text: str) -> Faithfulness:
        claims = tuple(
            Claim(raw["claim"], cast(ClaimLabel, raw["label"]), tuple(raw["memories"]))
            for raw in data["claims"]
        )
        if not claims:
            # no share of nothing: an abstaining answer is not faithful or unfaithful
            raise UnparseableOutputError("the answer has no claims to check", text)
        for claim in claims:
            if claim.label == "not" and claim.memories:
                raise UnparseableOutputError(f"unsupported claim cites memories: {claim}", text)
            if claim.label != "not" and not claim.memories:
                raise UnparseableOutputError(f"{claim.label} claim cites no memory: {claim}", text)
            unknown = [number for number in claim.memories if number > len(item.memories)]
            if unknown:
                raise UnparseableOutputError(f"claim cites memory {unknown[0]}, not shown", text)
        return Faithfulness(claims)

    def score(self, value: Faithfulness) -> float:
        return value.supported_share


# ---------------------------------------------------------------- merge


@dataclass(frozen=True, slots=True)
class MergeInput:
    original: str
    incoming: str
    merged: str
    """The memory as stored after the decision (empty after a DELETE)."""
    decision: Decision


@dataclass(frozen=True, slots=True)
class MergeVerdict:
    kept_key_facts: bool
    missing_facts: tuple[str, ...]
    expected_decision: Decision
    decision_correct: bool
    reasoning: str


class MergeTask(JudgeTask[MergeInput, MergeVerdict]):
    """Whether a memory merge kept the key facts and took the right decision; score = mean
    of the two (1, 0.5 or 0). The model names the right decision; we compare it with the
    one taken, so that the two can never disagree."""

    input_type = MergeInput
    name = "merge"
    version = "1"

    def fields(self, item: MergeInput) -> Mapping[str, str]:
        return {
            "original": item.original,
            "incoming": item.incoming,
            "merged": item.merged or "(nothing: the memory was deleted)",
            "decision": item.decision,
        }

    def value(self, data: dict[str, Any], item: MergeInput, text: str) -> MergeVerdict:
        expected = cast(Decision, data["expected_decision"])
        return MergeVerdict(
            kept_key_facts=data["kept_key_facts"],
            missing_facts=tuple(data["missing_facts"]),
            expected_decision=expected,
            decision_correct=expected == item.decision,
            reasoning=data["reasoning"],
        )

    def score(self, value: MergeVerdict) -> float:
        return (value.kept_key_facts + value.decision_correct) / 2


# ---------------------------------------------------------------- answer


@dataclass(frozen=True, slots=True)
class AnswerInput:
    question: str
    gold: str
    answer: str


@dataclass(frozen=True, slots=True)
class AnswerVerdict:
    correct: bool
    reasoning: str


class AnswerTask(JudgeTask[AnswerInput, AnswerVerdict]):
    """Whether a generated answer is correct against the gold answer; score 1 or 0."""

    input_type = AnswerInput
    name = "answer"
    version = "1"

    def fields(self, item: AnswerInput) -> Mapping[str, str]:
        return {"question": item.question, "gold": item.gold, "answer": item.answer}

    def value(self, data: dict[str, Any], item: AnswerInput, text: str) -> AnswerVerdict:
        return AnswerVerdict(correct=data["correct"], reasoning=data["reasoning"])

    def score(self, value: AnswerVerdict) -> float:
        return float(value.correct)


class LenientAnswerTask(AnswerTask):
    """The answer judged leniently (one item of a list, a date within two weeks, the same
    topic): the kind of judge behind published LoCoMo "J" scores, beside the strict one."""

    name = "answer_lenient"
    version = "1"


# ---------------------------------------------------------------- abstention


@dataclass(frozen=True, slots=True)
class AbstentionInput:
    question: str
    answer: str


@dataclass(frozen=True, slots=True)
class Abstention:
    abstained: bool
    reasoning: str


class AbstentionTask(JudgeTask[AbstentionInput, Abstention]):
    """Whether an answer to an unanswerable question declined to answer; score 1 or 0."""

    input_type = AbstentionInput
    name = "abstention"
    version = "1"

    def fields(self, item: AbstentionInput) -> Mapping[str, str]:
        return {"question": item.question, "answer": item.answer}

    def value(self, data: dict[str, Any], item: AbstentionInput, text: str) -> Abstention:
        return Abstention(abstained=data["abstained"], reasoning=data["reasoning"])

    def score(self, value: Abstention) -> float:
        return float(value.abstained)


# ---------------------------------------------------------------- read (answering)


@dataclass(frozen=True, slots=True)
class ReadInput:
    question: str
    memories: tuple[str, ...]
    """The retrieved memories, best first, each with its date when known."""


@dataclass(frozen=True, slots=True)
class ReadAnswer:
    answer: str


class ReadTask(JudgeTask[ReadInput, ReadAnswer]):
    """Not a judgment: the answer model reads the memories and answers the question, through
    the same provider, cache and replay as the judges. Its score is 1 for any answer (a
    failed call scores the neutral 0.5 like every task, and is counted)."""

    input_type = ReadInput
    name = "read"
    version = "1"

    def fields(self, item: ReadInput) -> Mapping[str, str]:
        return {"question": item.question, "memories": numbered(item.memories)}

    def value(self, data: dict[str, Any], item: ReadInput, text: str) -> ReadAnswer:
        answer = data["answer"].strip()
        if not answer:
            raise UnparseableOutputError("$.answer: empty", text)
        return ReadAnswer(answer)

    def score(self, value: ReadAnswer) -> float:
        return 1.0


TASKS: dict[str, JudgeTask[Any, Any]] = {
    task.name: task
    for task in (
        RelevanceTask(),
        FaithfulnessTask(),
        MergeTask(),
        AnswerTask(),
        LenientAnswerTask(),
        AbstentionTask(),
        ReadTask(),
    )
}
"""Every judge task by name, at its current prompt version."""
