"""Where a search answer keeps its hits, and which fields of a hit hold the id and the
text: found by looking for a document that was ingested into the answer (``systems
init``). The result is a ``[results]`` table that :func:`._answers.raw_hits` reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from recallbench.core import Document
from recallbench.systems._answers import answer_texts, normalise, select, text_of
from recallbench.systems._profile import Results
from recallbench.systems._profile_guess import ID_NAMES, key

SCORE_NAMES = ("score", "relevancescore", "similarity", "relevance", "rrfscore", "bm25", "rank")
FUZZY_CUTOFF = 90.0
"""The adapter's default ``fuzzy_cutoff``: a hit text this close to a document maps to it."""


@dataclass(frozen=True, slots=True)
class Located:
    """Where the hits are and how a hit maps to a document."""

    source: Literal["structured", "json_text", "text_blocks"]
    hits: str
    id: str | None
    text: str | None
    score: str | None
    match: Literal["id", "content", "fuzzy"]

    def same_shape(self, other: Located) -> bool:
        """Both answers read the same way."""
        return (self.source, self.hits, self.id, self.text, self.match) == (
            other.source,
            other.hits,
            other.id,
            other.text,
            other.match,
        )

    def results(self, empty: list[str] | None = None) -> Results:
        """The ``[results]`` table that reads answers this way (ranked when scored)."""
        return Results(
            source=self.source,
            hits=self.hits,
            id=self.id,
            text=self.text,
            score=self.score,
            match=self.match,
            ranked=self.score is not None,
            empty=empty or [],
        )

    def describe(self) -> str:
        """One line for the profile's comment."""
        where = {
            "structured": "structured content",
            "json_text": "JSON in the first text block",
            "text_blocks": "one text block per hit",
        }[self.source]
        at = f" at {self.hits!r}" if self.source != "text_blocks" else ""
        how = {
            "id": f"ids at {self.id!r} (equal to the ingested ids)",
            "content": "matched by their text (no field holds the ingested id)",
            "fuzzy": "matched by the most similar text (no field holds the ingested id)",
        }[self.match]
        return f"hits in {where}{at}; {how}"


def _roots(result: Any) -> Iterator[tuple[Literal["structured", "json_text"], Any]]:
    structured = getattr(result, "structured_content", None)
    if structured is None:
        structured = getattr(result, "structuredContent", None)
    if structured is not None:
        yield "structured", structured
    texts = answer_texts(result)
    if texts:
        try:
            yield "json_text", json.loads(texts[0])
        except json.JSONDecodeError:
            return


def _lists(value: Any, path: str = "") -> Iterator[tuple[str, list[Any]]]:
    """Every list reachable through objects only (what a dotted ``hits`` path can name)."""
    if isinstance(value, list):
        yield path, value
    elif isinstance(value, dict):
        for name, inner in value.items():
            if isinstance(name, str) and "." not in name:
                yield from _lists(inner, f"{path}.{name}" if path else name)


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every value inside an object, with its dotted path (lists are leaves)."""
    if isinstance(value, dict):
        for name, inner in value.items():
            if isinstance(name, str) and "." not in name:
                yield from _leaves(inner, f"{path}.{name}" if path else name)
    elif path:
        yield path, value


def _id_rank(path: str) -> tuple[int, int]:
    last = key(path.rsplit(".", 1)[-1])
    order = ID_NAMES.index(last) if last in ID_NAMES else len(ID_NAMES)
    return order, path.count(".")


def _closeness(found: str, wanted: str) -> float:
    from rapidfuzz import fuzz

    return float(fuzz.ratio(found, wanted))


def _in_hit(hit: dict[str, Any], document: Document) -> tuple[str | None, str | None, str | None]:
    """The paths of the id, the text and the score inside one hit (None when absent)."""
    wanted = normalise(document.text)
    ids, exact, close, scores = [], [], [], []
    for path, value in _leaves(hit):
        plain = isinstance(value, str | int) and not isinstance(value, bool)
        if plain and str(value) == document.id:
            ids.append(path)
        if isinstance(value, str | list):
            found = normalise(text_of(value))
            if found == wanted:
                exact.append(path)
            elif found and _closeness(found, wanted) >= FUZZY_CUTOFF:
                close.append(path)
        last = key(path.rsplit(".", 1)[-1])
        if isinstance(value, int | float) and not isinstance(value, bool) and last in SCORE_NAMES:
            scores.append((SCORE_NAMES.index(last), path))
    id_path = min(ids, key=_id_rank) if ids else None
    text_path = exact[0] if exact else close[0] if close else None
    return id_path, text_path, (min(scores)[1] if scores else None)


def locate(result: Any, document: Document) -> Located | None:
    """How to read ``document`` back out of the search answer ``result``; None when the
    answer does not hold it in a shape the adapter can read."""
    best: tuple[int, Located] | None = None
    for source, root in _roots(result):
        for path, items in _lists(root):
            for item in items:
                if not isinstance(item, dict):
                    continue
                id_path, text_path, score = _in_hit(item, document)
                if id_path is None and text_path is None:
                    continue
                exact = text_path is not None and normalise(
                    text_of(select(item, text_path))
                ) == normalise(document.text)
                match: Literal["id", "content", "fuzzy"] = (
                    "id" if id_path else "content" if exact else "fuzzy"
                )
                rank = {"id": 0, "content": 1, "fuzzy": 2}[match]
                found = Located(source, path, id_path, text_path, score, match)
                if best is None or rank < best[0]:
                    best = (rank, found)
        if best is not None:
            return best[1]
    return _in_blocks(result, document)


def _in_blocks(result: Any, document: Document) -> Located | None:
    """One text block per hit: a block whose text is the document's."""
    wanted = normalise(document.text)
    for block in answer_texts(result):
        found = normalise(block)
        if found == wanted:
            return Located("text_blocks", "", None, None, None, "content")
        if found and _closeness(found, wanted) >= FUZZY_CUTOFF:
            return Located("text_blocks", "", None, None, None, "fuzzy")
    return None


def shown(result: Any) -> str:
    """The start of an answer, for a reason that says what the server returned."""
    texts = answer_texts(result)
    text = " ".join(texts) if texts else repr(getattr(result, "structured_content", None))
    return " ".join(text.split())[:160]


PROSE = (
    "appears only in prose: no JSON or per-hit structure to read ids from; if the server "
    "has an option for structured output, set it in [search] arguments"
)


def unreadable(result: Any, document: Document) -> str | None:
    """Why an answer that :func:`locate` cannot read still holds ``document`` (its id or
    its text): only inside prose, or as a JSON value outside any list of hits. None when
    the answer does not mention the document at all."""
    texts = answer_texts(result)
    joined = " ".join(texts)
    named = re.search(rf"(?<![\w-]){re.escape(document.id)}(?![\w-])", joined) is not None
    if not (named or normalise(document.text) in normalise(joined)):
        return None
    if any(_holds(root, document.id) for _, root in _roots(result)):
        return "is in the answer's JSON, but not as a field of a hit: set [results] by hand"
    return PROSE


def _holds(value: Any, wanted: str) -> bool:
    """Whether a JSON value has ``wanted`` as a value of its own (not inside a longer text)."""
    if isinstance(value, dict):
        return any(_holds(inner, wanted) for inner in value.values())
    if isinstance(value, list):
        return any(_holds(inner, wanted) for inner in value)
    return isinstance(value, str | int) and not isinstance(value, bool) and str(value) == wanted


MIN_EMPTY = 4
"""The fewest characters a proposed ``[results] empty`` pattern keeps (shorter would match
too much)."""


def empty_pattern(answers: list[tuple[str, str]]) -> str | None:
    """A ``[results] empty`` pattern from the answers (query, text) to searches that found
    nothing: the start their first lines share before the query text, regex-escaped and
    anchored (``No results found for: "zqx"`` -> ``^No results found for:``). None when
    they share too little."""
    heads = []
    for query, text in answers:
        lines = text.splitlines()
        first = lines[0] if lines else ""
        at = first.lower().find(query.lower())
        heads.append(first[:at] if at >= 0 else first)
    common = heads[0] if heads else ""
    for head in heads[1:]:
        size = next((n for n, (a, b) in enumerate(zip(common, head, strict=False)) if a != b), None)
        common = common[: min(len(common), len(head)) if size is None else size]
    cut = [head[len(common)] for head in heads if len(head) > len(common)]
    if any(char.isalnum() or char == "_" for char in cut):  # they differ inside a word
        common = re.sub(r"\w+$", "", common)
    common = common.rstrip(" \t\"'`([{<\u201c\u2018")
    if len(common.strip()) < MIN_EMPTY or not re.search(r"[A-Za-z]", common):
        return None
    pattern = "^" + re.escape(common).replace("\\ ", " ")
    return pattern if all(re.search(pattern, text) for _, text in answers) else None
