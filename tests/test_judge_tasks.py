"""Judge tasks: the prompt files and the strict parsers, on good and bad answers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from recallbench.judges._prompt import load_prompt, parse_prompt
from recallbench.judges._provider import Completion, UnparseableOutputError
from recallbench.judges._task_kinds import (
    TASKS,
    AnswerInput,
    AnswerTask,
    FaithfulnessInput,
    FaithfulnessTask,
    MergeInput,
    MergeTask,
    RelevanceInput,
    RelevanceTask,
)


def answer(data: Any, parsed: bool = False) -> Completion:
    """A completion carrying ``data`` as text (or, ``parsed``, as the provider's parse)."""
    text = data if isinstance(data, str) else json.dumps(data)
    return Completion(text, data if parsed else None, "fake", 1, 1, 1.0)


RELEVANCE = RelevanceInput("where does Ann work?", "Ann works at the harbour office.")
FAITH = FaithfulnessInput("where?", "Ann works at the harbour. She cycles.", ("Ann: harbour",))
MERGE = MergeInput("Ann lives in Oslo", "Ann moved to Bergen", "Ann lives in Bergen", "UPDATE")
ANSWER = AnswerInput("Where does Ann live?", "Bergen", "In Bergen, Norway.")


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_prompt_file_names_its_task_version_scale_schema_and_sources(name: str) -> None:
    task = TASKS[name]
    prompt = load_prompt(task.name, task.version)
    assert (prompt.task, prompt.version) == (name, "1")
    assert prompt.scale and "(20" in prompt.sources  # a dated citation
    assert prompt.schema["type"] == "object" and prompt.schema["additionalProperties"] is False


def test_messages_fill_every_placeholder_and_keep_dollars_and_braces() -> None:
    item = RelevanceInput("cost in $?", 'it is {"usd": 5} $x')
    system, user = RelevanceTask().messages(item)
    assert system["role"] == "system" and "0 to 3" in system["content"]
    assert user == {"role": "user", "content": 'Query:\ncost in $?\n\nMemory:\nit is {"usd": 5} $x'}


def test_a_prompt_file_without_its_sections_is_refused() -> None:
    with pytest.raises(ValueError, match="sections must be"):
        parse_prompt("---\ntask: x\nversion: 1\nscale: s\n---\n## System\nhi\n", "x.v1.md")


# ---------------------------------------------------------------- relevance


def test_relevance_reads_a_grade_and_confidence() -> None:
    task = RelevanceTask()
    value = task.parse(answer({"reasoning": "r", "grade": 3, "confidence": 0.8}), RELEVANCE)
    assert (value.grade, value.confidence, task.score(value)) == (3, 0.8, 1.0)
    assert (
        task.parse(answer({"reasoning": "r", "grade": 1, "confidence": 1}, True), RELEVANCE).grade
        == 1
    )


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ({"reasoning": "r", "grade": 4, "confidence": 0.5}, "not one of"),
        ({"reasoning": "r", "grade": -1, "confidence": 0.5}, "not one of"),
        ({"reasoning": "r", "grade": 2.5, "confidence": 0.5}, "expected integer"),
        ({"reasoning": "r", "grade": 2.0, "confidence": 0.5}, "expected integer"),
        ({"reasoning": "r", "grade": True, "confidence": 0.5}, "expected integer"),
        ({"reasoning": "r", "grade": "2", "confidence": 0.5}, "expected integer"),
        ({"reasoning": "r", "grade": 2, "confidence": 1.5}, "above the maximum"),
        ({"reasoning": "r", "grade": 2}, "missing required key 'confidence'"),
        ({"reasoning": "r", "grade": 2, "confidence": 0.5, "note": ""}, "unexpected key"),
        ('```json\n{"reasoning": "r", "grade": 2, "confidence": 0.5}\n```', "not JSON"),
        ('Grade: 2 {"reasoning": "r", "grade": 2, "confidence": 0.5}', "not JSON"),
        ("[2]", "expected a JSON object"),
    ],
)
def test_relevance_refuses_anything_off_the_scale_or_schema(bad: Any, why: str) -> None:
    with pytest.raises(UnparseableOutputError, match=why):
        RelevanceTask().parse(answer(bad), RELEVANCE)


def test_an_answer_the_provider_parsed_is_checked_again() -> None:
    bad = {"reasoning": "r", "grade": 7, "confidence": 0.5}
    with pytest.raises(UnparseableOutputError, match="not one of"):
        RelevanceTask().parse(answer(bad, parsed=True), RELEVANCE)


# ---------------------------------------------------------------- faithfulness


def claim(text: str, label: str, memories: list[int]) -> dict[str, Any]:
    return {"claim": text, "label": label, "memories": memories}


def test_faithfulness_scores_the_supported_share() -> None:
    task = FaithfulnessTask()
    claims = [claim("Ann works at the harbour", "supported", [1]), claim("Ann cycles", "not", [])]
    value = task.parse(answer({"claims": claims}), FAITH)
    assert [c.label for c in value.claims] == ["supported", "not"]
    assert task.score(value) == 0.5
    partial = [claim("a", "partial", [1]), claim("b", "partial", [1])]
    assert task.score(task.parse(answer({"claims": partial}), FAITH)) == 0.0


@pytest.mark.parametrize(
    ("claims", "why"),
    [
        ([], "no claims"),
        ([claim("a", "yes", [1])], "not one of"),
        ([claim("a", "not", [1])], "unsupported claim cites"),
        ([claim("a", "supported", [])], "cites no memory"),
        ([claim("a", "supported", [2])], "cites memory 2, not shown"),
        ([claim("a", "supported", [0])], "below the minimum"),
    ],
)
def test_faithfulness_refuses_inconsistent_claims(claims: list[Any], why: str) -> None:
    with pytest.raises(UnparseableOutputError, match=why):
        FaithfulnessTask().parse(answer({"claims": claims}), FAITH)


def test_faithfulness_numbers_the_memories_it_shows() -> None:
    two = FaithfulnessInput("q", "a", ("first", "second"))
    content = FaithfulnessTask().messages(two)[1]["content"]
    assert "[1] first\n\n[2] second" in content


# ---------------------------------------------------------------- merge


def verdict(expected: str, kept: bool, missing: list[str] | None = None) -> dict[str, Any]:
    return {
        "reasoning": "r",
        "expected_decision": expected,
        "kept_key_facts": kept,
        "missing_facts": missing or [],
    }


@pytest.mark.parametrize(
    ("expected", "kept", "score"),
    [("UPDATE", True, 1.0), ("ADD", True, 0.5), ("UPDATE", False, 0.5), ("NOOP", False, 0.0)],
)
def test_merge_compares_the_right_decision_with_the_one_taken(
    expected: str, kept: bool, score: float
) -> None:
    task = MergeTask()
    value = task.parse(answer(verdict(expected, kept)), MERGE)
    assert value.decision_correct == (expected == "UPDATE")
    assert task.score(value) == score


def test_merge_refuses_an_unknown_decision_and_says_a_deleted_memory_is_empty() -> None:
    with pytest.raises(UnparseableOutputError, match="not one of"):
        MergeTask().parse(answer(verdict("REPLACE", True)), MERGE)
    deleted = MergeInput("Ann lives in Oslo", "Ann never lived in Oslo", "", "DELETE")
    assert "(nothing: the memory was deleted)" in MergeTask().messages(deleted)[1]["content"]


# ---------------------------------------------------------------- answer


def test_answer_is_correct_or_not_and_nothing_else() -> None:
    task = AnswerTask()
    assert task.score(task.parse(answer({"reasoning": "r", "correct": True}), ANSWER)) == 1.0
    assert task.score(task.parse(answer({"reasoning": "r", "correct": False}), ANSWER)) == 0.0
    for bad in ({"reasoning": "r", "correct": "yes"}, {"reasoning": "r", "correct": 1}):
        with pytest.raises(UnparseableOutputError, match="expected boolean"):
            task.parse(answer(bad), ANSWER)
