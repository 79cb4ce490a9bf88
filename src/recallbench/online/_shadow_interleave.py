"""Interleaving in shadow mode (``--interleave``): the list the agent is shown for a sampled
search, the team-draft interleaving of the primary's ranking (A, control) and the
candidate's (B, treatment) (:func:`interleave_ids`), and the primary's answer rewritten to
show it in the primary's own shape (:func:`interleave_answer`, :func:`rewrite_answer`).
When that cannot be done safely, :class:`NotInterleaved` says why, and the agent gets the
primary's answer as it was.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from recallbench.online._hits import parsed_hits
from recallbench.stats._interleaving import Interleaving, team_draft_common_depth
from recallbench.systems._answers import fill, hit_text, select

if TYPE_CHECKING:
    from recallbench.systems._profile import Profile


class NotInterleaved(Exception):
    """The agent gets the primary's answer as it was; ``reason`` is counted."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def interleave_ids(
    control: Sequence[str], treatment: Sequence[str], query_id: str
) -> Interleaving[str]:
    """The shown list: the team-draft interleaving (Radlinski, Kurup & Joachims 2008) of
    ``control`` (A) and ``treatment`` (B) to the depth both reach, coins seeded by
    ``query_id``, then the rest of the longer list, ``L = max(|A|, |B|)`` distinct items in
    all (:func:`~recallbench.stats._interleaving.team_draft_common_depth`).

    Only the drafted part is credited (``credited``): documents below the depth both lists
    reach are shown, with the team whose list holds them, but a read of them credits no
    one. So a system is neither padded by its rival's results nor preferred for returning
    more of them, the agent is not shown fewer results than either system would give it,
    and an item both lists hold belongs to the team that placed it first."""
    limit = len(dict.fromkeys((*control, *treatment)))
    limit = min(limit, max(len(control), len(treatment)))
    return team_draft_common_depth(control, treatment, query_id, limit=limit)


def interleave_answer(
    primary: Profile,
    candidate: Profile,
    answer: dict[str, Any],
    candidate_answer: dict[str, Any] | None,
    query_id: str,
) -> tuple[dict[str, Any], Interleaving[str]]:
    """The primary's ``answer`` with its hits replaced by the interleaving of both lists
    (:func:`interleave_ids`), and that interleaving. The answer is the primary's
    own object when the interleaved order is the primary's. Raises :class:`NotInterleaved`
    (with the reason) when it cannot be done safely."""
    control = parsed_hits(primary, answer, quiet=True)
    if control is None:
        raise NotInterleaved("primary answer not a readable search")
    if candidate_answer is None:
        raise NotInterleaved("candidate failed")
    treatment = parsed_hits(candidate, candidate_answer, quiet=True)
    if treatment is None:
        raise NotInterleaved("candidate answer not a readable search")
    if any(hit_id is None for hit_id, _, _ in control):
        raise NotInterleaved("primary hit without an id")
    items: dict[str, Any] = {}
    control_ids: list[str] = []
    for hit_id, _, raw in control:
        assert hit_id is not None
        items.setdefault(hit_id, raw)
        control_ids.append(hit_id)
    treatment_ids: list[str] = []
    same_shape = _shape(primary) == _shape(candidate)
    for hit_id, text, raw in treatment:
        if hit_id is None:
            continue  # cannot be credited: not shown
        treatment_ids.append(hit_id)
        if hit_id not in items:
            items[hit_id] = raw if same_shape else as_primary_hit(primary, hit_id, text)
    interleaved = interleave_ids(control_ids, treatment_ids, query_id)
    shown = list(interleaved.items)
    if shown == control_ids:
        return answer, interleaved
    if any(items[doc_id] is None for doc_id in shown):
        raise NotInterleaved("candidate hit not expressible in the primary's shape")
    rewritten = rewrite_answer(primary, answer, [items[doc_id] for doc_id in shown])
    if rewritten is None:
        raise NotInterleaved("primary answer shape not rewritable")
    return rewritten, interleaved


def _shape(profile: Profile) -> tuple[Any, ...]:
    """What makes two servers' hits interchangeable: where they are and how they are read."""
    results = profile.results
    return (
        results.source,
        results.hits,
        profile.proxy.id or results.id,
        profile.proxy.text or results.text,
    )


def as_primary_hit(primary: Profile, doc_id: str, text: str) -> Any:
    """A candidate's hit in the primary's shape, or None when that cannot be done safely.

    A text-block server's hit is its text. Otherwise the primary's ingest item template is
    filled with the hit's id and text (the memory as the primary would hold it had the agent
    written it there: server-memory's entity) and kept only if the primary's own paths read
    the same id and text back from it."""
    if primary.results.source == "text_blocks":
        return {"text": text}
    id_path = primary.proxy.id or primary.results.id
    if not id_path:
        return None
    item = fill(primary.ingest.item, {"id": doc_id, "text": text, "title": ""})
    text_path = primary.proxy.text or primary.results.text
    if not isinstance(item, dict) or select(item, id_path) != doc_id:
        return None
    if hit_text(item, text_path) != text:
        return None
    return item


def rewrite_answer(
    profile: Profile, answer: dict[str, Any], hits: Sequence[Any]
) -> dict[str, Any] | None:
    """``answer`` (a search answer of ``profile``'s server) with its list of hits replaced
    by ``hits`` (raw items in that server's shape), everything else kept; None when the
    shape is not one this can rewrite faithfully.

    * ``text_blocks``: every content block must be text and there must be no structured
      content; the new content is one text block per hit (an original block reused, with
      its annotations, for a hit it held).
    * ``structured`` / ``json_text``: the list at ``[results].hits`` is replaced in the
      structured content (when present) and in the JSON of the text blocks: a single
      block holding the whole JSON, or one block per hit holding that hit (as FastMCP 1.x
      answers). Text is re-serialised only in a formatting recognised by reproducing the
      server's text exactly from its parsed JSON (two-space indented, compact, or
      ``json.dumps`` default separators); otherwise None."""
    content = answer.get("content")
    if not isinstance(content, list) or not all(isinstance(b, dict) for b in content):
        return None
    results = profile.results
    if results.source == "text_blocks":
        if "structuredContent" in answer or any(b.get("type") != "text" for b in content):
            return None
        by_text = {b.get("text"): b for b in content}
        blocks = [
            by_text.get(h.get("text")) or {"type": "text", "text": h.get("text")} for h in hits
        ]
        return {**answer, "content": blocks}
    texts = [b for b in content if b.get("type") == "text"]
    new_content: list[Any] = list(content)
    structured = answer.get("structuredContent")
    rewritten: dict[str, Any] = dict(answer)
    if structured is not None and results.source != "json_text":
        new_structured = _replace_at(structured, results.hits, list(hits))
        if new_structured is None:
            return None
        rewritten["structuredContent"] = new_structured
    if texts:
        parsed = [_loads(b.get("text")) for b in texts]
        whole = parsed[0]
        if (
            len(texts) == 1
            and whole is not _NOT_JSON
            and isinstance(whole, (dict, list))
            and (structured is None or whole == structured or results.source == "json_text")
        ):
            replaced = _replace_at(whole, results.hits, list(hits))
            style = _style(texts[0].get("text"), whole)
            if replaced is None or style is None:
                return None
            block = {**texts[0], "text": _dumps(replaced, style)}
            new_content = [block if b is texts[0] else b for b in content]
        elif structured is not None and results.source != "json_text":
            old = select(structured, results.hits) if results.hits else structured
            if not isinstance(old, list) or len(old) != len(texts) or parsed != old:
                return None  # text blocks that are not one hit each: unknown
            styles = {_style(b.get("text"), item) for b, item in zip(texts, old, strict=True)}
            if len(styles) != 1 or None in styles or len(content) != len(texts):
                return None
            (style,) = styles
            assert style is not None
            template = {k: v for k, v in texts[0].items() if k != "text"}
            new_content = [{**template, "text": _dumps(hit, style)} for hit in hits]
        else:
            return None
    elif structured is None:
        return None
    rewritten["content"] = new_content
    return rewritten


_NOT_JSON = object()
_STYLES: dict[str, dict[str, Any]] = {
    "indent2": {"indent": 2, "ensure_ascii": False},
    "compact": {"separators": (",", ":"), "ensure_ascii": False},
    "python": {"ensure_ascii": False},
    "python-ascii": {},
    "indent2-ascii": {"indent": 2},
}


def _loads(text: Any) -> Any:
    if not isinstance(text, str):
        return _NOT_JSON
    try:
        return json.loads(text)
    except ValueError:
        return _NOT_JSON


def _style(text: Any, value: Any) -> str | None:
    """The name of the serialisation that reproduces ``text`` from ``value`` exactly."""
    for name, options in _STYLES.items():
        if json.dumps(value, **options) == text:
            return name
    return None


def _dumps(value: Any, style: str) -> str:
    return json.dumps(value, **_STYLES[style])


def _replace_at(value: Any, path: str, items: list[Any]) -> Any:
    """A copy of ``value`` with the list at dotted ``path`` replaced; None when no list is
    there."""
    parts = [part for part in path.split(".") if part]
    if not parts:
        return items if isinstance(value, list) else None
    copied = copy.deepcopy(value)
    node = copied
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, dict) or not isinstance(node.get(parts[-1]), list):
        return None
    node[parts[-1]] = items
    return copied
