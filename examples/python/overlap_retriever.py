"""A retriever recallbench loads in-process: ``python:overlap_retriever:make``.

``make()`` returns an object with ``ingest(documents)`` (each document a dict with "id",
"text", "title", "metadata") and ``search(text, k)`` returning (id, score) pairs, best
first. ``close()`` is optional. Nothing from recallbench is imported.

Run from this folder (it is importable from there):
    recallbench run --dataset ../golden.json --system python:overlap_retriever:make
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


class Overlap:
    """Shared words between query and memory, weighted by how rare each word is (idf)."""

    def __init__(self) -> None:
        self.documents: dict[str, set[str]] = {}
        self.idf: dict[str, float] = {}

    def ingest(self, documents: list[dict[str, Any]]) -> None:
        self.documents = {d["id"]: set(words(f"{d['title'] or ''} {d['text']}")) for d in documents}
        counts = Counter(word for terms in self.documents.values() for word in terms)
        total = len(self.documents)
        self.idf = {word: math.log(1 + total / count) for word, count in counts.items()}

    def search(self, text: str, k: int) -> list[tuple[str, float]]:
        query = set(words(text))
        scored = [
            (doc_id, sum(self.idf[w] for w in query & terms))
            for doc_id, terms in self.documents.items()
        ]
        return sorted((s for s in scored if s[1] > 0), key=lambda s: (-s[1], s[0]))[:k]


def make() -> Overlap:
    """The factory recallbench calls once per run."""
    return Overlap()
