"""The built-in reference system: SQLite FTS5 with bm25 ranking.

It is the embedded default, so that `recallbench run` works with nothing else installed.
Channels: ``lexical`` today; dense and hybrid channels will add to ``_channels``.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from typing import Any

from recallbench.core import Document, Hit, Query, SystemUnderTestError

_TOKEN = re.compile(r"\w+", re.UNICODE)


def match_expression(text: str) -> str | None:
    """An FTS5 query that matches any word of ``text``: ``"w1" OR "w2"``.

    Every token is quoted, so the user's punctuation (``C++``, ``$amount``, quotes) can never
    be read as FTS5 syntax. None when the text has no word at all.
    """
    tokens = dict.fromkeys(token.lower() for token in _TOKEN.findall(text))
    return " OR ".join(f'"{token}"' for token in tokens) or None


class BuiltinSystem:
    """bm25 over title and text in an in-memory FTS5 table (Porter stemming, Unicode folding).

    Scores are ``-bm25()`` (SQLite's bm25 is negative, lower is better), so higher is better;
    ties are broken by document order of ingestion for a deterministic ranking.
    """

    name = "builtin"

    def __init__(self, tokenizer: str = "porter unicode61 remove_diacritics 2") -> None:
        self._tokenizer = tokenizer
        self._db: sqlite3.Connection | None = None
        self._ids: list[str] = []

    def settings(self) -> dict[str, Any]:
        return {
            "channels": ["lexical"],
            "index": "sqlite-fts5",
            "ranking": "bm25",
            "tokenizer": self._tokenizer,
            "sqlite": sqlite3.sqlite_version,
        }

    async def setup(self, documents: Sequence[Document]) -> None:
        await self.close()
        db = sqlite3.connect(":memory:", check_same_thread=False)
        try:
            db.execute(
                f"CREATE VIRTUAL TABLE memory USING fts5(title, text, tokenize='{self._tokenizer}')"
            )
        except sqlite3.OperationalError as exc:
            db.close()
            raise SystemUnderTestError(
                f"builtin system: this Python's SQLite lacks FTS5 ({exc})"
            ) from None
        db.executemany(
            "INSERT INTO memory(rowid, title, text) VALUES (?, ?, ?)",
            ((row, doc.title or "", doc.text) for row, doc in enumerate(documents)),
        )
        self._ids = [doc.id for doc in documents]
        self._db = db

    async def search(self, query: Query, k: int) -> Sequence[Hit]:
        if self._db is None:
            raise RuntimeError("builtin system: search before setup")
        expression = match_expression(query.text)
        if expression is None:
            return []
        rows = self._db.execute(
            "SELECT rowid, bm25(memory) AS score FROM memory WHERE memory MATCH ? "
            "ORDER BY score, rowid LIMIT ?",
            (expression, k),
        ).fetchall()
        return [
            Hit(doc_id=self._ids[row], score=-score, channels=("lexical",)) for row, score in rows
        ]

    async def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
