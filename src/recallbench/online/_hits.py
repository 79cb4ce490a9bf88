"""What a search answer holds, read by the profile of the server that gave it: its hits'
ids and texts, found as the MCP adapter finds them (``[results]``), at ``[proxy].id`` and
``[proxy].text`` (default ``[results].id`` and ``.text``). A profile without an id path
(servers that answer with text only) identifies a hit by its text (:func:`text_id`).

The proxy's logging and the shadow read answers alike, through this module; the answer is
the JSON the server sent (:class:`AnswerView`), never rebuilt into the SDK's types.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from recallbench.core import SystemUnderTestError
from recallbench.online._wire import warn
from recallbench.systems._answers import answer_texts, hit_text, normalise, raw_hits, select
from recallbench.systems._profile import Profile


def query_path(template: Any, path: tuple[str, ...] = ()) -> tuple[str, ...] | None:
    """The path of the first string of an arguments template that contains ``{query}``."""
    if isinstance(template, str):
        return path if "{query}" in template else None
    if isinstance(template, dict):
        for key, value in template.items():
            found = query_path(value, (*path, str(key)))
            if found is not None:
                return found
    return None


def text_id(text: str) -> str:
    """The id of a hit that has none: ``text:`` and a hash of its normalised text."""
    return "text:" + hashlib.sha1(normalise(text).encode()).hexdigest()[:16]


def hits_of(
    profile: Profile, answer: dict[str, Any], quiet: bool = False
) -> list[tuple[str | None, str]] | None:
    """(id, text) of each hit of a search answer by ``profile``'s server; None when the
    answer is an error (said on standard error when it cannot be read, unless ``quiet``)."""
    found = parsed_hits(profile, answer, quiet)
    return None if found is None else [(hit_id, text) for hit_id, text, _ in found]


def parsed_hits(
    profile: Profile, answer: dict[str, Any], quiet: bool = False
) -> list[tuple[str | None, str, Any]] | None:
    """As :func:`hits_of`, with each hit's raw item as the server sent it (a JSON object,
    or ``{"text": ...}`` for a text block) third."""
    if is_error(answer):
        return None
    result = AnswerView(answer)
    texts = answer_texts(result)
    patterns = profile.results.error_patterns
    if any(re.search(pattern, text) for pattern in patterns for text in texts):
        return None
    try:
        found = raw_hits(result, profile.results, profile.name)
    except SystemUnderTestError as error:
        if not quiet:
            warn(f"search not logged: {error}")
        return None
    id_path = profile.proxy.id or profile.results.id
    text_path = profile.proxy.text or profile.results.text
    hits: list[tuple[str | None, str, Any]] = []
    for item in found:
        text = hit_text(item, text_path)
        if id_path:
            value = select(item, id_path)
            hits.append((None if value is None else str(value), text, item))
        else:  # a server that returns text only (content-matched profiles)
            hits.append((text_id(text) if text else None, text, item))
    return hits


class AnswerView:
    """What :func:`answer_texts` and :func:`raw_hits` read of a ``CallToolResult`` (its
    content blocks' types and texts, its structured content), straight from the answer's
    JSON: the SDK has checked the answer already, and building its types again cost a
    tenth of a millisecond per answer, on the logging thread and twice per shadow pair."""

    __slots__ = ("content", "structured_content")

    def __init__(self, answer: Mapping[str, Any]) -> None:
        content = answer.get("content")
        blocks = content if isinstance(content, list) else []
        self.content = [_Block(block) for block in blocks if isinstance(block, dict)]
        self.structured_content = answer.get("structuredContent")


class _Block:
    __slots__ = ("text", "type")

    def __init__(self, block: Mapping[str, Any]) -> None:
        self.type = block.get("type")
        text = block.get("text")
        self.text = text if isinstance(text, str) else ""


def is_error(answer: Mapping[str, Any]) -> bool:
    """Whether a tool's answer says it failed (``isError``)."""
    return bool(answer.get("isError"))
