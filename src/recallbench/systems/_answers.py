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
    exactly one placeholder takes the value's own type (``"{k}"`` -> 10). A document's
    ``{title}`` is its id when it has none (values with an ``id`` and an empty or no
    ``title``), in every template: ``[ingest] item`` as ``[ingest.files]``."""
    if "id" in values and not values.get("title"):
        values = {**values, "title": values["id"]}
    return _fill(template, values)


def _fill(template: Any, values: dict[str, Any]) -> Any:
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        if whole and whole.group(1) in values:
            return values[whole.group(1)]
        return _PLACEHOLDER.sub(lambda m: str(values.get(m.group(1), m.group(0))), template)
    if isinstance(template, list):
        return [_fill(item, values) for item in template]
    if isinstance(template, dict):
        return {key: _fill(value, values) for key, value in template.items()}
    return template


_STEP = re.compile(r"\[(-?\d*)\]|([^.\[\]]+)")


def select(value: Any, path: str) -> Any:
    """Follow a path into JSON: dotted keys (``entities``, ``result.hits``), a list's item
    by position (``tags.0`` or ``tags[0]``, ``tags[-1]`` the last), ``[]`` the list itself
    (``tags[]`` is ``tags``); "" is the value. A step that does not fit the JSON (a key of
    a list, a position past its end) gives None."""
    for match in _STEP.finditer(path):
        position, key = match.groups()
        if key is not None and isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, list) and (position or _is_position(key)):
            index = int(position or key or 0)
            value = value[index] if -len(value) <= index < len(value) else None
        elif not (position == "" and isinstance(value, list)):  # "[]" keeps a list
            value = None
    return value


def _is_position(key: str | None) -> bool:
    return key is not None and key.lstrip("-").isdigit()


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


def raw_hits(result: Any, spec: Results, name: str, where: str | None = None) -> list[Any]:
    """The hits of a search answer as the server returned them, in its order: one
    ``{"text": ...}`` per text block, or the list at ``spec.hits`` in the structured content
    (or in the JSON of the first text block). A text answer matching one of ``spec.empty``
    has no hits. Raises SystemUnderTestError when JSON was expected and the answer has
    none; the message names ``where`` (the profile's file) as the place to say so."""
    texts = answer_texts(result)
    if spec.source == "text_blocks":
        return [] if says_empty(texts, spec) else [{"text": text} for text in texts]
    structured = getattr(result, "structured_content", None)
    if structured is None:
        structured = getattr(result, "structuredContent", None)
    if spec.source == "json_text" or structured is None:
        try:
            structured = json.loads(texts[0]) if texts else None
        except json.JSONDecodeError:
            if says_empty(texts, spec):
                return []
            raise SystemUnderTestError(not_json(name, texts[0], where)) from None
    found = select(structured, spec.hits)
    return found if isinstance(found, list) else []


def says_empty(texts: list[str], spec: Results) -> bool:
    """Whether a text answer is how the server says it found nothing (``spec.empty``)."""
    return any(re.search(pattern, text) for pattern in spec.empty for text in texts)


def not_json(name: str, text: str, where: str | None) -> str:
    """The one-line error for a text answer where JSON was expected, saying what to do."""
    start = " ".join(text.split())[:80]
    return (
        f"{name}: expected JSON in the answer, got {start!r}; if this is how the server says "
        f"it found nothing, add a pattern for it to [results] empty in {where or 'its profile'}"
    )


def hit_text(item: Any, path: str | None) -> str:
    """The text of one raw hit: the field at ``path``, else its ``text`` field."""
    if path:
        return text_of(select(item, path))
    return text_of(item.get("text") if isinstance(item, dict) else None)
