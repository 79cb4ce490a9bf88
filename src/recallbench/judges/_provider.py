"""The contract every judge model provider meets, and what counts as a valid answer.

A provider turns chat messages into one :class:`Completion`. When a JSON schema is given
the answer must be exactly one JSON object that satisfies it: anything else (prose around
the JSON, a missing key, a wrong type) is an :class:`UnparseableOutputError`, never a guess.

Failures are values, not crashes: ``complete`` raises only :class:`ProviderError`
subclasses, and :func:`attempt` turns them into returned values, so a judge task can score
a failed call as neutral (0.5) and carry on.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from recallbench.core._errors import RecallbenchError

Message = Mapping[str, str]
"""One chat message: ``{"role": "system" | "user" | "assistant", "content": "..."}``."""

JsonSchema = Mapping[str, Any]
"""A JSON Schema for the answer object (the subset :func:`parse_structured` checks)."""


@dataclass(frozen=True, slots=True)
class Completion:
    """One model answer with what it cost."""

    text: str
    """The answer text as the model produced it."""
    parsed: dict[str, Any] | None
    """The answer parsed as JSON when a schema was asked for; ``None`` otherwise."""
    model: str
    """The model that answered, as the server names it."""
    tokens_in: int
    tokens_out: int
    latency_ms: float
    """Wall time of the successful call (retries and waits excluded)."""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """The provider's response body, for debugging and the cache."""


class ProviderError(RecallbenchError):
    """A call that produced no usable answer; judge tasks score it neutral."""

    retryable: bool = False
    """Whether trying the same request again may succeed."""


class ProviderTimeoutError(ProviderError):
    """No answer within the per-call timeout."""

    retryable = True


class ProviderConnectionError(ProviderError):
    """The endpoint could not be reached (refused, DNS, reset)."""

    retryable = True


class ProviderHTTPError(ProviderError):
    """The endpoint answered with an error status (4xx refusals, 5xx, 429 after retries)."""

    def __init__(
        self, message: str, status: int, retry_after: float | None = None, body: str = ""
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.body = body
        """The error response's text (servers explain rejected parameters there)."""
        # 408, 409, 429 and server errors are worth another try; other 4xx will not change.
        self.retryable = status in (408, 409, 429) or status >= 500


class UnparseableOutputError(ProviderError):
    """The model answered, but not with the structured output that was asked for."""

    def __init__(self, message: str, text: str, completion: Completion | None = None) -> None:
        super().__init__(message)
        self.text = text
        self.completion = completion
        """The answer as the provider returned it, with the usage it reported (the call was
        billed even though its text is unusable); None when only the text is known."""


class NotACompletionError(UnparseableOutputError):
    """A success status whose body is not a chat completion (a garbled body, a gateway's
    own JSON): nothing the model said, so never cached as its answer."""


@runtime_checkable
class Provider(Protocol):
    """Anything that answers chat messages: an OpenAI-compatible endpoint, a local model."""

    @property
    def model(self) -> str:
        """The model name completions are asked from."""
        ...

    async def complete(
        self, messages: Sequence[Message], *, schema: JsonSchema | None = None
    ) -> Completion:
        """One answer at temperature 0; raises only :class:`ProviderError` subclasses."""
        ...

    async def aclose(self) -> None:
        """Release connections or the loaded model."""
        ...


async def attempt(
    provider: Provider, messages: Sequence[Message], *, schema: JsonSchema | None = None
) -> Completion | ProviderError:
    """``provider.complete`` with a failure returned as a value instead of raised."""
    try:
        return await provider.complete(messages, schema=schema)
    except ProviderError as error:
        return error


def parse_structured(text: str, schema: JsonSchema) -> dict[str, Any]:
    """The answer as a JSON object satisfying ``schema``; anything else is an error.

    Strict on purpose: surrounding whitespace is the only tolerance. A model that wraps the
    JSON in prose or code fences has not followed the instruction, and guessing which part
    it meant would hide that from the agreement statistics.
    """
    try:
        value = json.loads(text)
    except ValueError as error:
        raise UnparseableOutputError(f"not JSON: {error}", text) from None
    problem = schema_problem(value, schema, "$")
    if problem is not None:
        raise UnparseableOutputError(problem, text)
    assert isinstance(value, dict)  # the schema's root is an object (checked above)
    return value


def with_parsed(completion: Completion, text: str, schema: JsonSchema | None) -> Completion:
    """``completion`` with its answer parsed against ``schema`` (unchanged without one); an
    answer off the schema raises carrying the completion, so its usage is still counted."""
    if schema is None:
        return completion
    try:
        parsed = parse_structured(text, schema)
    except UnparseableOutputError as error:
        raise UnparseableOutputError(str(error), text, completion) from None
    return replace(completion, parsed=parsed)


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "null": (type(None),),
}


def _is_type(value: Any, name: str) -> bool:
    # bool is an int in Python but never a number in JSON
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(float(value))
        )
    return isinstance(value, _TYPES.get(name, ()))


def schema_problem(value: Any, schema: JsonSchema, where: str) -> str | None:
    """The first way ``value`` breaks ``schema``, or ``None``.

    Checks the subset judge schemas use: ``type`` (one or a list), ``enum``, ``const``,
    ``properties``, ``required``, ``additionalProperties: false``, ``items``, ``minimum``,
    ``maximum``. Other keywords are ignored (a dependency on a full validator is not worth it
    for the flat objects judges return). The root must be an object.
    """
    if where == "$" and not isinstance(value, dict):
        return f"{where}: expected a JSON object, got {type(value).__name__}"
    expected = schema.get("type")
    if expected is not None:
        names = [expected] if isinstance(expected, str) else list(expected)
        if not any(_is_type(value, name) for name in names):
            return f"{where}: expected {' or '.join(names)}, got {json.dumps(value)[:40]}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where}: {json.dumps(value)[:40]} is not one of {json.dumps(schema['enum'])}"
    if "const" in schema and value != schema["const"]:
        return f"{where}: expected {json.dumps(schema['const'])}"
    if _is_type(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{where}: {value} is below the minimum {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{where}: {value} is above the maximum {schema['maximum']}"
    if isinstance(value, dict):
        return _object_problem(value, schema, where)
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            problem = schema_problem(item, schema["items"], f"{where}[{index}]")
            if problem is not None:
                return problem
    return None


def _object_problem(value: dict[str, Any], schema: JsonSchema, where: str) -> str | None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    for key in schema.get("required", ()):
        if key not in value:
            return f"{where}: missing required key {key!r}"
    if schema.get("additionalProperties") is False:
        extra = sorted(set(value) - set(properties))
        if extra:
            return f"{where}: unexpected key {extra[0]!r}"
    for key, sub in properties.items():
        if key in value:
            problem = schema_problem(value[key], sub, f"{where}.{key}")
            if problem is not None:
                return problem
    return None
