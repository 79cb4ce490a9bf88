"""An LLM as the system under test of the write path: extraction (``extract`` prompt) and
write decisions (``decide`` prompt), through the judge provider layer.

Going through the judge layer gives the LLM extractor what judges have: any
OpenAI-compatible endpoint or a local GGUF (``[judge]`` of ``recallbench.toml``), the
cache keyed by the exact messages and schema (``--judge-cache``), ``--strict`` replay that
asks nothing, and failures counted by reason. The prompts are versioned files
(``judges/prompts/extract.v1.md``, ``decide.v1.md``); an answer must satisfy the prompt's
JSON Schema, including the bounds the generic parser leaves out (``anyOf``, ``maxItems``,
``maxLength``, ``format: date``), which :func:`bounds_problem` checks: the same schema
constrains generation on servers that support it (llama.cpp turns it into a grammar).

A failed call (unparseable, off the schema, timeout, connection) is counted against its
document (case), which then counts as nothing extracted (no decision, ``MISSING``): the
scores never contain a guess. The output's metadata names the model, the prompt version
and the failures; above ``[judge] max_failure_rate`` it says ``unreliable``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, Final, TypeVar

from pydantic import JsonValue

from recallbench.extraction._decisions import Decision, DecisionCase, target_problem
from recallbench.extraction._formats import (
    ExtractedDocument,
    ExtractedEntity,
    ExtractedEvent,
    ExtractedObservation,
    ExtractionOutput,
    GoldDocument,
)
from recallbench.judges._judgment import JudgeStats, Judgment
from recallbench.judges._provider import JsonSchema, UnparseableOutputError, schema_problem
from recallbench.judges._run import JudgeRun
from recallbench.judges._setup import JudgeSetup, judge_all
from recallbench.judges._tasks import JudgeTask

Progress = Callable[[int, int], None]
SHOWN_FAILURES: Final = 300
"""Characters of a failure's detail kept in the output's metadata."""


def bounds_problem(value: Any, schema: JsonSchema, where: str) -> str | None:
    """The first way ``value`` breaks the bounds of ``schema`` that
    :func:`~recallbench.judges._provider.schema_problem` does not check: ``anyOf`` (one
    branch must fit), ``maxItems``, ``maxLength`` and ``format: date`` (YYYY-MM-DD)."""
    if "anyOf" in schema:
        for branch in schema["anyOf"]:
            fits = schema_problem(value, branch, where) is None
            if fits and bounds_problem(value, branch, where) is None:
                return None
        return f"{where}: {json.dumps(value)[:60]} fits none of the allowed forms"
    if isinstance(value, str):
        return _string_problem(value, schema, where)
    if isinstance(value, list):
        limit = schema.get("maxItems")
        if limit is not None and len(value) > limit:
            return f"{where}: {len(value)} items, more than the {limit} allowed"
        items = schema.get("items")
        if isinstance(items, Mapping):
            for index, item in enumerate(value):
                problem = bounds_problem(item, items, f"{where}[{index}]")
                if problem is not None:
                    return problem
    if isinstance(value, dict):
        for key, sub in schema.get("properties", {}).items():
            problem = bounds_problem(value[key], sub, f"{where}.{key}") if key in value else None
            if problem is not None:
                return problem
    return None


def _string_problem(value: str, schema: JsonSchema, where: str) -> str | None:
    limit = schema.get("maxLength")
    if limit is not None and len(value) > limit:
        return f"{where}: {len(value)} characters, more than the {limit} allowed"
    if schema.get("format") == "date":
        try:
            date.fromisoformat(value)
        except ValueError:
            return f"{where}: {json.dumps(value)[:40]} is not a date (YYYY-MM-DD)"
        if len(value) != len("2025-01-31"):
            return f"{where}: {json.dumps(value)[:40]} is not a date (YYYY-MM-DD)"
    return None


def _non_empty(texts: Iterable[tuple[str, str]], text: str) -> None:
    for where, value in texts:
        if not value.strip():
            raise UnparseableOutputError(f"{where}: empty", text)


# ---------------------------------------------------------------- extract


@dataclass(frozen=True, slots=True)
class ExtractInput:
    """One document as the extraction prompt shows it (no gold)."""

    document_id: str
    title: str
    date: str
    text: str


def extract_input(document: GoldDocument) -> ExtractInput:
    """The prompt's view of ``document``: its title (else its id), its date (the
    metadata's ``date`` or ``date_time``, else ``unknown``) and its text."""
    when = document.metadata.get("date") or document.metadata.get("date_time") or "unknown"
    return ExtractInput(document.id, document.title or document.id, str(when), document.text)


class ExtractTask(JudgeTask[ExtractInput, ExtractedDocument]):
    """Events, entities and observations of one document (``extract`` prompt). Not a
    judgment: every answer that parses scores 1 (the scores come from the ground truth)."""

    input_type = ExtractInput
    name = "extract"
    version = "1"

    def fields(self, item: ExtractInput) -> Mapping[str, str]:
        return {"title": item.title, "date": item.date, "text": item.text}

    def value(self, data: dict[str, Any], item: ExtractInput, text: str) -> ExtractedDocument:
        problem = bounds_problem(data, self.schema, "$")
        if problem is not None:
            raise UnparseableOutputError(problem, text)
        _non_empty(
            [(f"$.events[{i}].description", e["description"]) for i, e in enumerate(data["events"])]
            + [(f"$.entities[{i}].name", e["name"]) for i, e in enumerate(data["entities"])]
            + [(f"$.observations[{i}]", o) for i, o in enumerate(data["observations"])],
            text,
        )
        return ExtractedDocument(
            id=item.document_id,
            events=tuple(ExtractedEvent(**event) for event in data["events"]),
            entities=tuple(
                ExtractedEntity(name=e["name"], type=e["type"], mentions=tuple(e["mentions"]))
                for e in data["entities"]
            ),
            observations=tuple(ExtractedObservation(text=o) for o in data["observations"]),
        )

    def score(self, value: ExtractedDocument) -> float:
        return 1.0

    def value_json(self, value: ExtractedDocument) -> Any:
        return value.model_dump(mode="json")


# ---------------------------------------------------------------- decide


@dataclass(frozen=True, slots=True)
class DecideInput:
    """One decision case as the decide prompt shows it (no expected answer)."""

    existing: tuple[tuple[str, str], ...]
    """(id, content) of each stored memory."""
    incoming: str


def decide_input(case: DecisionCase) -> DecideInput:
    return DecideInput(tuple((m.id, m.content) for m in case.existing), case.incoming)


class DecideTask(JudgeTask[DecideInput, Decision]):
    """ADD / UPDATE / DELETE / NOOP and its target (``decide`` prompt); an answer naming a
    memory that was not shown, or a target for an ADD, does not parse."""

    input_type = DecideInput
    name = "decide"
    version = "1"

    def fields(self, item: DecideInput) -> Mapping[str, str]:
        shown = "\n".join(f"[{memory_id}] {content}" for memory_id, content in item.existing)
        return {"existing": shown or "(none)", "incoming": item.incoming}

    def value(self, data: dict[str, Any], item: DecideInput, text: str) -> Decision:
        decision = Decision(action=data["action"], target=data["target"])
        problem = target_problem(decision, [memory_id for memory_id, _ in item.existing])
        if problem is not None:
            raise UnparseableOutputError(f"$.target: {problem}", text)
        return decision

    def score(self, value: Decision) -> float:
        return 1.0

    def value_json(self, value: Decision) -> Any:
        return value.model_dump(mode="json")


EXTRACT: Final = ExtractTask()
DECIDE: Final = DecideTask()


# ---------------------------------------------------------------- the systems


def run_metadata(
    kind: str,
    task: JudgeTask[Any, Any],
    setup: JudgeSetup,
    judgments: Sequence[Judgment[Any]],
    stats: JudgeStats,
    failures: list[dict[str, JsonValue]],
) -> dict[str, JsonValue]:
    """What names an LLM system's result: model, provider, prompt version, call
    parameters, and its failures. Only what a replay reproduces (no latencies, no count
    of cached against called), so that a replayed output is byte for byte the recorded."""
    config = setup.config
    return {
        "extractor": kind,
        "model": config.model,
        "provider": config.provider,
        "prompt": {"task": task.name, "version": task.prompt.version},
        "params": dict(setup.params),
        "asked": stats.asked,
        "failed": len(failures),
        "failure_rate": stats.failure_rate,
        "max_failure_rate": stats.max_failure_rate,
        "unreliable": stats.unreliable,
        "failed_by_reason": dict(sorted(stats.failed.items())),
        "tokens_in": sum(j.tokens_in for j in judgments),
        "tokens_out": sum(j.tokens_out for j in judgments),
        "failures": list(failures),
    }


def _failure(key: str, ident: str, judgment: Judgment[Any]) -> dict[str, JsonValue]:
    return {key: ident, "reason": judgment.failure, "detail": judgment.detail[:SHOWN_FAILURES]}


I = TypeVar("I")  # noqa: E741 - the conventional name of an input type variable
V = TypeVar("V")


class _ModelSystem:
    """The configured model answering one task per item, through the judge's cache."""

    def __init__(
        self, setup: JudgeSetup, *, strict: bool = False, progress: Progress | None = None
    ) -> None:
        self.setup = setup
        self.strict = strict
        self.progress = progress
        self.name = f"llm:{setup.config.model}"

    def _ask(self, task: JudgeTask[I, V], inputs: Sequence[I]) -> JudgeRun[V]:
        """The task run over ``inputs`` (its judgments, in order, and its statistics)."""
        return asyncio.run(
            judge_all(task, inputs, self.setup, strict=self.strict, progress=self.progress)
        )


class LLMExtractor(_ModelSystem):
    """The configured model extracting each document (``--extractor llm``)."""

    def extract(self, documents: Iterable[GoldDocument]) -> ExtractionOutput:
        """Every document's extraction; a failed one is kept as nothing extracted."""
        corpus = list(documents)
        run = self._ask(EXTRACT, [extract_input(document) for document in corpus])
        extracted: list[ExtractedDocument] = []
        failures: list[dict[str, JsonValue]] = []
        for document, judgment in zip(corpus, run.judgments, strict=True):
            if judgment.value is None:
                failures.append(_failure("document", document.id, judgment))
                extracted.append(ExtractedDocument(id=document.id))
            else:
                extracted.append(judgment.value)
        metadata = run_metadata("llm", EXTRACT, self.setup, run.judgments, run.stats, failures)
        return ExtractionOutput(system=self.name, documents=tuple(extracted), metadata=metadata)


class LLMDecider(_ModelSystem):
    """The configured model deciding each case (``--decider llm``); a failed case gets no
    decision. :attr:`metadata` describes the last :meth:`decide`."""

    def __init__(
        self, setup: JudgeSetup, *, strict: bool = False, progress: Progress | None = None
    ) -> None:
        super().__init__(setup, strict=strict, progress=progress)
        self.metadata: dict[str, JsonValue] = {}

    def decide(self, cases: Sequence[DecisionCase]) -> dict[str, Decision]:
        run = self._ask(DECIDE, [decide_input(case) for case in cases])
        decisions: dict[str, Decision] = {}
        failures: list[dict[str, JsonValue]] = []
        for case, judgment in zip(cases, run.judgments, strict=True):
            if judgment.value is None:
                failures.append(_failure("case", case.id, judgment))
            else:
                decisions[case.id] = judgment.value
        self.metadata = run_metadata("llm", DECIDE, self.setup, run.judgments, run.stats, failures)
        return decisions
