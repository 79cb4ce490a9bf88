"""Profile templates in, tool answers out: how a profile fills a tool's arguments and where
it finds the hits in the answer. Shared by the MCP adapter (which maps hits to dataset
documents) and the MCP proxy (which logs the ids and texts an agent was shown).
"""

from __future__ import annotations

import json
import re
from typing import Any

from recallbench.core import SystemUnderTestError
from recallbench.systems._profile import Results

_PLACEHOLDER = re.compile(r"\{([a-z_.]+)\}")


def fill(template: Any, values: dict[str, Any]) -> Any:
    """Replace ``{name}`` placeholders in every string of a JSON template; a string that is
    exactly one placeholder takes the value's own type (``"{k}"`` -> 10)."""
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        if whole and whole.group(1) in values:
            return values[whole.group(1)]
        return _PLACEHOLDER.sub(lambda m: str(values.get(m.group(1), m.group(0))), template)
    if isinstance(template, list):
        return [fill(item, values) for item in template]
    if isinstance(template, dict):
        return {key: fill(value, values) for key, value in template.items()}
    return template


def select(value: Any, path: str) -> Any:
    """Follow a dotted path (``entities`` or ``result.hits``) into JSON; "" is the value."""
    for part in filter(None, path.split(".")):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def normalise(text: str) -> str:
    """Lower-cased words separated by single spaces (punctuation dropped)."""
    return " ".join(re.findall(r"\w+", text.lower()))


def text_of(value: Any) -> str:
    """A hit's text field as one string (a list of observations is joined by spaces)."""
    if isinstance(value, list):
        return " ".join(map(str, value))
    return "" if value is None else str(value)


def answer_texts(result: Any) -> list[str]:
    """The text blocks of a ``CallToolResult``, in order."""
    return [
        block.text
        for block in getattr(result, "content", [])
        if getattr(block, "type", "") == "text"
    ]


def raw_hits(result: Any, spec: Results, name: str) -> list[Any]:
    """The hits of a search answer as the server returned them, in its order: one
    ``{"text": ...}`` per text block, or the list at ``spec.hits`` in the structured content
    (or in the JSON of the first text block). Raises SystemUnderTestError when JSON was
    expected and the answer has none."""
    texts = answer_texts(result)
    if spec.source == "text_blocks":
        return [{"text": text} for text in texts]
    structured = getattr(result, "structured_content", None)
    if structured is None:
        structured = getattr(result, "structuredContent", None)
    if spec.source == "json_text" or structured is None:
        try:
            structured = json.loads(texts[0]) if texts else None
        except json.JSONDecodeError:
            raise SystemUnderTestError(
                f"{name}: expected JSON in the answer, got {texts[0][:120]!r}"
            ) from None
    found = select(structured, spec.hits)
    return found if isinstance(found, list) else []


def hit_text(item: Any, path: str | None) -> str:
    """The text of one raw hit: the field at ``path``, else its ``text`` field."""
    if path:
        return text_of(select(item, path))
    return text_of(item.get("text") if isinstance(item, dict) else None)
