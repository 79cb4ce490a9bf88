"""Decision tests for memory writes: given stored memories and an incoming one, the
expected ``ADD`` / ``UPDATE`` / ``DELETE`` / ``NOOP`` (``recallbench.decisions/v1``), a
scorer, and a deterministic baseline decider.

The fixture rules are the memory-eval ADR's (``../shared/seeds``, "Fixture Strategy"):
exact duplicates -> ``NOOP``; clear paraphrases -> ``UPDATE``; different topics with
similar words -> ``ADD`` (the ADR's ``CREATE``). Contradictions follow the usual write
path: a new value for the same fact -> ``UPDATE``, a retraction with nothing in its place
-> ``DELETE``. The ADR's success targets are pass rates, not similarity thresholds: 95% for
exact-match detection (heuristic, "should be deterministic") and 80% for similarity
matching (LLM judgement has variance); :func:`score_decisions` reports both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, Literal

from pydantic import Field, model_validator
from rapidfuzz import fuzz

from recallbench.core import Problem
from recallbench.core._model import Record
from recallbench.core._validation import json_path, read_json, validate
from recallbench.extraction._normalise import normalise

DECISIONS_FORMAT: Final = "recallbench.decisions/v1"
ACTIONS: Final = ("ADD", "UPDATE", "DELETE", "NOOP")
Action = Literal["ADD", "UPDATE", "DELETE", "NOOP"]

EXACT_TARGET: Final = 0.95
"""The ADR's success metric for exact-match detection (share of exact-duplicate cases
answered ``NOOP``)."""
SIMILARITY_TARGET: Final = 0.80
"""The ADR's success metric for similarity matching (paraphrase -> UPDATE, false friend ->
ADD)."""
TARGETS: Final[Mapping[str, tuple[float, tuple[str, ...]]]] = {
    "exact_match": (EXACT_TARGET, ("exact_duplicate",)),
    "similarity": (SIMILARITY_TARGET, ("rewording", "false_friend")),
}
"""Seed targets: the pass rate each group of case kinds should reach."""

NOOP_AT: Final = 95.0
"""Baseline: rapidfuzz ``ratio`` of the normalised texts at or above which the incoming
memory is a duplicate (``NOOP``)."""
SAME_FACT_AT: Final = 60.0
"""Baseline: rapidfuzz ``token_set_ratio`` at or above which the incoming memory is about
the same fact (``UPDATE``, or ``DELETE`` when it retracts it)."""
_RETRACTION = re.compile(
    r"\b(no longer|not any more|cancel(?:l?ed)?|withdrawn|dropped|removed)\b", re.IGNORECASE
)


class Memory(Record):
    """A stored memory."""

    id: str = Field(min_length=1)
    content: str = Field(min_length=1)


class Decision(Record):
    """A write decision: the action and the stored memory it applies to (none for ADD)."""

    action: Action
    target: str | None = None


class DecisionCase(Record):
    """Stored memories, an incoming memory, and the decision a memory system should make."""

    id: str = Field(min_length=1)
    kind: str = Field(min_length=1)
    """``exact_duplicate``, ``rewording``, ``refinement``, ``contradiction``,
    ``retraction``, ``new_fact``, ``false_friend``."""
    existing: tuple[Memory, ...] = ()
    incoming: str = Field(min_length=1)
    expected: Decision
    note: str = ""

    @model_validator(mode="after")
    def _target_known(self) -> DecisionCase:
        target, action = self.expected.target, self.expected.action
        if action == "ADD" and target is not None:
            raise ValueError("an ADD has no target")
        if action != "ADD" and target not in {memory.id for memory in self.existing}:
            raise ValueError(f"{action} needs the id of an existing memory, got {target!r}")
        return self


class DecisionFixture(Record):
    """A ``recallbench.decisions/v1`` file."""

    format: Literal["recallbench.decisions/v1"] = DECISIONS_FORMAT
    name: str = Field(min_length=1)
    version: str = "1"
    description: str = ""
    cases: tuple[DecisionCase, ...] = Field(min_length=1)


class DecisionScores(Record):
    """Decisions scored against a fixture."""

    fixture: str
    system: str
    cases: int
    accuracy: float
    """Share of cases with the expected action."""
    target_accuracy: float
    """Share of cases with the expected action and, unless ADD, the expected memory."""
    per_action: dict[str, dict[str, float | None]]
    """Per action: precision, recall, F1 (None where undefined) and support."""
    confusion: dict[str, dict[str, int]]
    """``confusion[expected][predicted]``; ``MISSING`` for a case the system did not answer."""
    per_kind: dict[str, float]
    """Action accuracy per case kind."""
    targets: dict[str, dict[str, float | bool | None]]
    """The ADR's pass-rate targets: rate reached, target, met."""
    wrong: tuple[str, ...]
    """Ids of the cases whose action is wrong."""
    missing: tuple[str, ...] = ()


def _problems(data: object) -> list[Problem]:
    """Duplicate case ids and duplicate memory ids within a case."""
    problems: list[Problem] = []
    cases = data.get("cases") if isinstance(data, dict) else None
    seen: set[str] = set()
    for index, case in enumerate(cases if isinstance(cases, list) else []):
        if not isinstance(case, dict):
            continue
        if isinstance(case.get("id"), str):
            if case["id"] in seen:
                problems.append(Problem(json_path(["cases", index, "id"]), "duplicate case id"))
            seen.add(case["id"])
        memories = case.get("existing")
        ids = (
            [m.get("id") for m in memories if isinstance(m, dict)]
            if isinstance(memories, list)
            else []
        )
        if len(ids) != len(set(ids)):
            problems.append(Problem(json_path(["cases", index, "existing"]), "duplicate memory id"))
    return problems


def validated_decisions(data: object, source: str) -> DecisionFixture:
    """Validate raw JSON as a decision fixture; every problem located, in one error."""
    return validate(DecisionFixture, data, source, _problems(data))


def load_decisions(path: Path) -> DecisionFixture:
    """Read and validate a ``recallbench.decisions/v1`` file."""
    return validated_decisions(read_json(path), str(path))


def bundled_decisions() -> DecisionFixture:
    """The bundled fixture (``data/decisions-sample.json``, 22 cases)."""
    return load_decisions(Path(__file__).parent / "data" / "decisions-sample.json")


def decide(existing: Sequence[Memory], incoming: str) -> Decision:
    """The baseline decider, deterministic: ``NOOP`` on the memory whose normalised text has
    rapidfuzz ``ratio >= NOOP_AT``; else, on the memory with the best ``token_set_ratio``
    when it is ``>= SAME_FACT_AT``, ``DELETE`` if the incoming text retracts (``no longer``,
    ``cancelled``, ...) and the memory does not, ``UPDATE`` otherwise; else ``ADD``. Ties go
    to the first memory."""
    if not existing:
        return Decision(action="ADD")
    new = normalise(incoming)
    texts = [normalise(memory.content) for memory in existing]
    ratios = [fuzz.ratio(new, text) for text in texts]
    best = max(range(len(texts)), key=lambda i: (ratios[i], -i))
    if ratios[best] >= NOOP_AT:
        return Decision(action="NOOP", target=existing[best].id)
    overlaps = [fuzz.token_set_ratio(new, text) for text in texts]
    best = max(range(len(texts)), key=lambda i: (overlaps[i], -i))
    if overlaps[best] < SAME_FACT_AT:
        return Decision(action="ADD")
    retracts = _RETRACTION.search(incoming) and not _RETRACTION.search(existing[best].content)
    return Decision(action="DELETE" if retracts else "UPDATE", target=existing[best].id)


def baseline_decisions(fixture: DecisionFixture) -> dict[str, Decision]:
    """The baseline's decision for every case of ``fixture``, by case id."""
    return {case.id: decide(case.existing, case.incoming) for case in fixture.cases}


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def score_decisions(
    fixture: DecisionFixture, decisions: Mapping[str, Decision], system: str = "system"
) -> DecisionScores:
    """Score ``decisions`` (by case id) against the fixture: accuracy, target accuracy,
    per-action precision/recall/F1, confusion matrix, per-kind accuracy and the ADR's
    targets. A case without a decision is wrong (``MISSING`` in the confusion matrix)."""
    labels = [*ACTIONS, "MISSING"]
    confusion = {want: dict.fromkeys(labels, 0) for want in ACTIONS}
    right: list[bool] = []
    on_target = 0
    by_kind: dict[str, list[bool]] = {}
    for case in fixture.cases:
        got = decisions.get(case.id)
        predicted = got.action if got is not None else "MISSING"
        confusion[case.expected.action][predicted] += 1
        correct = predicted == case.expected.action
        right.append(correct)
        by_kind.setdefault(case.kind, []).append(correct)
        if correct and got is not None and got.target == case.expected.target:
            on_target += 1
    per_action: dict[str, dict[str, float | None]] = {}
    for action in ACTIONS:
        hits = confusion[action][action]
        predicted_n = sum(confusion[want][action] for want in ACTIONS)
        support = sum(confusion[action].values())
        p, r = _ratio(hits, predicted_n), _ratio(hits, support)
        f1 = 2 * hits / (predicted_n + support) if predicted_n + support else None
        per_action[action] = {"precision": p, "recall": r, "f1": f1, "support": float(support)}
    targets: dict[str, dict[str, float | bool | None]] = {}
    for name, (target, kinds) in TARGETS.items():
        outcomes = [ok for kind in kinds for ok in by_kind.get(kind, [])]
        rate = _ratio(sum(outcomes), len(outcomes))
        met = None if rate is None else rate >= target
        targets[name] = {"rate": rate, "target": target, "met": met, "cases": float(len(outcomes))}
    n = len(fixture.cases)
    return DecisionScores(
        fixture=fixture.name,
        system=system,
        cases=n,
        accuracy=sum(right) / n,
        target_accuracy=on_target / n,
        per_action=per_action,
        confusion=confusion,
        per_kind={kind: sum(oks) / len(oks) for kind, oks in by_kind.items()},
        targets=targets,
        wrong=tuple(case.id for case, ok in zip(fixture.cases, right, strict=True) if not ok),
        missing=tuple(case.id for case in fixture.cases if case.id not in decisions),
    )


def target_problem(decision: Decision, known: Sequence[str]) -> str | None:
    """Why ``decision``'s target does not fit the stored memories (their ids ``known``):
    an ADD names no memory, any other action names one of them."""
    if decision.action == "ADD":
        return None if decision.target is None else "an ADD names no target (null)"
    if decision.target not in known:
        shown = ", ".join(known) or "none"
        return (
            f"{decision.action} needs the id of a stored memory ({shown}), got {decision.target!r}"
        )
    return None
