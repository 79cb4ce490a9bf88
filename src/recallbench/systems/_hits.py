"""Turn whatever an adapter's retriever returns into hits."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from recallbench.core import Hit, SystemUnderTestError


def to_hits(answer: Iterable[Any], channel: str) -> list[Hit]:
    """Accepts ids (``"d1"``), ``(id, score)`` pairs, mappings with ``id`` / ``doc_id``
    and optional ``score`` and ``channels``, or :class:`Hit` objects; order is kept. A score
    that is not a finite number fails the query (SystemUnderTestError naming the result)."""
    hits = []
    for position, item in enumerate(answer):
        if isinstance(item, Hit):
            hits.append(item)
        elif isinstance(item, str):
            hits.append(Hit(doc_id=item, channels=(channel,)))
        elif isinstance(item, tuple | list) and len(item) == 2:
            hits.append(
                Hit(doc_id=str(item[0]), score=_finite(item[1], position), channels=(channel,))
            )
        elif isinstance(item, dict) and ("id" in item or "doc_id" in item):
            given = item.get("score")
            channels = tuple(item.get("channels") or (channel,))
            hits.append(
                Hit(
                    doc_id=str(item.get("doc_id", item.get("id"))),
                    score=None if given is None else _finite(given, position),
                    channels=channels,
                )
            )
        else:
            raise SystemUnderTestError(
                f"result {position}: expected an id, (id, score) or {{'id': ...}}, got {item!r:.80}"
            )
    return hits


def _finite(score: Any, position: int) -> float:
    try:
        value = float(score)
    except (TypeError, ValueError):
        raise SystemUnderTestError(
            f"result {position}: score {score!r:.40} is not a number"
        ) from None
    if not math.isfinite(value):
        raise SystemUnderTestError(f"result {position}: score {score!r} is not a finite number")
    return value
