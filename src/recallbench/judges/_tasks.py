"""Judge tasks: a versioned prompt, the input it is filled from, and a strict parser.

A task turns one input into chat messages and one :class:`Completion` into a value on its
scale, or refuses it: the answer must satisfy the prompt's JSON Schema (type, enum,
range, no extra keys) and the task's own checks. Nothing is rounded, clipped or guessed,
because a guessed label would pass for the model's judgment in the agreement statistics.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Generic, TypeVar

from recallbench.judges._prompt import Prompt, load_prompt
from recallbench.judges._provider import (
    Completion,
    JsonSchema,
    Message,
    UnparseableOutputError,
    parse_structured,
    schema_problem,
)

I = TypeVar("I")  # noqa: E741 - the conventional name of an input type variable
V = TypeVar("V")


class JudgeTask(ABC, Generic[I, V]):
    """One kind of judgment. Subclasses name their prompt and fill and read it."""

    name: ClassVar[str]
    version: ClassVar[str]
    input_type: ClassVar[type[Any]]
    """The input dataclass (what a line of `recallbench judge task` holds)."""

    @property
    def prompt(self) -> Prompt:
        return load_prompt(self.name, self.version)

    @property
    def schema(self) -> JsonSchema:
        return self.prompt.schema

    def messages(self, item: I) -> list[Message]:
        return self.prompt.messages(self.fields(item))

    def input_json(self, item: I) -> Any:
        """The input as plain JSON data: what the cache key hashes."""
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            return dataclasses.asdict(item)
        raise TypeError(f"{self.name}: inputs must be dataclass instances, not {item!r}")

    def parse(self, completion: Completion, item: I) -> V:
        """The value of the answer to ``item``; UnparseableOutputError when it is off the
        schema or the scale. The input is needed to check an answer against it (a cited
        memory that was never shown). A provider that already parsed the JSON is checked
        again (cheap): a cached answer may come from a provider that did not."""
        data = completion.parsed
        if data is None:
            data = parse_structured(completion.text, self.schema)
        else:
            problem = schema_problem(data, self.schema, "$")
            if problem is not None:
                raise UnparseableOutputError(problem, completion.text)
        return self.value(data, item, completion.text)

    @abstractmethod
    def fields(self, item: I) -> Mapping[str, str]:
        """The prompt's placeholders filled from one input."""

    @abstractmethod
    def value(self, data: dict[str, Any], item: I, text: str) -> V:
        """The value of a schema-valid answer to ``item`` (``text`` for errors); checks the
        schema cannot express raise UnparseableOutputError."""

    @abstractmethod
    def score(self, value: V) -> float:
        """The value on 0-1, higher is better (a failed judgment scores 0.5)."""

    def value_json(self, value: V) -> Any:
        """The value as JSON data (stored in the cache for people and SQL to read)."""
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return dataclasses.asdict(value)
        return value


def numbered(texts: tuple[str, ...]) -> str:
    """Memories as ``[1] text`` paragraphs: the faithfulness answer cites the numbers."""
    return "\n\n".join(f"[{number}] {text}" for number, text in enumerate(texts, 1)) or "(none)"
