"""The built-in reference systems: a lexical channel (SQLite FTS5, bm25), a dense channel
(wordllama embeddings, cosine), and their reciprocal rank fusion.

They are the embedded default, so that `recallbench run` works with nothing else installed,
and a baseline every external system can be compared with. Registered as
``builtin-lexical``, ``builtin-dense``, ``builtin-hybrid`` and ``builtin`` (= hybrid).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from recallbench.core import Document, Hit, Query, SystemUnderTestError
from recallbench.systems._embedders import Embedder, Matrix, make_embedder
from recallbench.systems._fusion import RRF_K, reciprocal_rank_fusion

_TOKEN = re.compile(r"\w+", re.UNICODE)
CHANNELS = ("lexical", "dense")
POOL = 100
"""Each channel's depth before fusion (at least k)."""


def match_expression(text: str) -> str | None:
    """An FTS5 query that matches any word of ``text``: ``"w1" OR "w2"``.

    Every token is quoted, so the user's punctuation (``C++``, ``$amount``, quotes) can never
    be read as FTS5 syntax. None when the text has no word at all.
    """
    tokens = dict.fromkeys(token.lower() for token in _TOKEN.findall(text))
    return " OR ".join(f'"{token}"' for token in tokens) or None


class LexicalChannel:
    """bm25 over title and text in an in-memory FTS5 table (Porter stemming, Unicode folding).

    Scores are ``-bm25()`` (SQLite's bm25 is negative, lower is better), so higher is better;
    ties are broken by ingestion order for a deterministic ranking.
    """

    def __init__(self, tokenizer: str = "porter unicode61 remove_diacritics 2") -> None:
        self.tokenizer = tokenizer
        self._db: sqlite3.Connection | None = None

    def index(self, documents: Sequence[Document]) -> None:
        self.close()
        db = sqlite3.connect(":memory:", check_same_thread=False)
        try:
            db.execute(
                f"CREATE VIRTUAL TABLE memory USING fts5(title, text, tokenize='{self.tokenizer}')"
            )
        except sqlite3.OperationalError as exc:
            db.close()
            raise SystemUnderTestError(f"this Python's SQLite lacks FTS5 ({exc})") from None
        db.executemany(
            "INSERT INTO memory(rowid, title, text) VALUES (?, ?, ?)",
            ((row, doc.title or "", doc.text) for row, doc in enumerate(documents)),
        )
        self._db = db

    def search(self, text: str, depth: int) -> list[tuple[int, float]]:
        if self._db is None:
            raise RuntimeError("lexical channel: search before index")
        expression = match_expression(text)
        if expression is None:
            return []
        rows = self._db.execute(
            "SELECT rowid, bm25(memory) AS score FROM memory WHERE memory MATCH ? "
            "ORDER BY score, rowid LIMIT ?",
            (expression, depth),
        ).fetchall()
        return [(row, -score) for row, score in rows]

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


class DenseChannel:
    """Cosine similarity between the query's and each document's embedding (title + text);
    ties broken by ingestion order."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._matrix: Matrix | None = None

    def index(self, documents: Sequence[Document]) -> None:
        texts = [f"{doc.title}\n{doc.text}" if doc.title else doc.text for doc in documents]
        self._matrix = self.embedder.embed(texts) if texts else None

    def search(self, text: str, depth: int) -> list[tuple[int, float]]:
        if self._matrix is None or not text.strip():
            return []
        scores = self._matrix @ self.embedder.embed([text])[0]
        top = np.lexsort((np.arange(len(scores)), -scores))[:depth]
        return [(int(row), float(scores[row])) for row in top]

    def close(self) -> None:
        self._matrix = None


class BuiltinSystem:
    """Lexical, dense or hybrid (reciprocal rank fusion, k = 60) retrieval in memory.

    Every hit carries the channels that found it; a hybrid hit's score is its fused score.
    """

    def __init__(
        self,
        channels: Sequence[str] = CHANNELS,
        embedder: str = "wordllama",
        name: str | None = None,
    ) -> None:
        unknown = [c for c in channels if c not in CHANNELS]
        if unknown or not channels:
            raise SystemUnderTestError(
                f"builtin: unknown channels {unknown}; choose from {', '.join(CHANNELS)}"
            )
        self.channels = tuple(channels)
        self.embedder_name = embedder
        self.name = name or (
            "builtin-hybrid" if len(self.channels) > 1 else f"builtin-{self.channels[0]}"
        )
        self._ids: list[str] = []
        self._lexical = LexicalChannel() if "lexical" in self.channels else None
        self._dense = DenseChannel(make_embedder(embedder)) if "dense" in self.channels else None

    def settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = {
            "channels": list(self.channels),
            "sqlite": sqlite3.sqlite_version,
        }
        if self._lexical is not None:
            settings |= {
                "lexical": "sqlite-fts5 bm25",
                "tokenizer": self._lexical.tokenizer,
                "sqlite": sqlite3.sqlite_version,
            }
        if self._dense is not None:
            settings |= {"dense": "cosine", "embedder": self.embedder_name}
        if len(self.channels) > 1:
            settings |= {"fusion": "reciprocal rank fusion", "rrf_k": RRF_K, "pool": POOL}
        return settings

    async def setup(self, documents: Sequence[Document]) -> None:
        self._ids = [doc.id for doc in documents]
        for channel in (self._lexical, self._dense):
            if channel is not None:
                channel.index(documents)

    async def search(self, query: Query, k: int) -> Sequence[Hit]:
        found = {
            name: channel.search(query.text, max(k, POOL) if len(self.channels) > 1 else k)
            for name, channel in (("lexical", self._lexical), ("dense", self._dense))
            if channel is not None
        }
        if len(found) == 1:
            name, ranked = next(iter(found.items()))
            return [
                Hit(doc_id=self._ids[row], score=score, channels=(name,)) for row, score in ranked
            ]
        fused = reciprocal_rank_fusion(
            {name: [self._ids[row] for row, _ in ranked] for name, ranked in found.items()}
        )
        return [
            Hit(doc_id=doc, score=score, channels=channels) for doc, score, channels in fused[:k]
        ]

    async def close(self) -> None:
        for channel in (self._lexical, self._dense):
            if channel is not None:
                channel.close()
