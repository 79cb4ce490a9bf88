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

from recallbench.core import Document, Hit, Query, SystemUnderTestError, UnknownNameError
from recallbench.systems._embedders import Embedder, Matrix, make_embedder, normalise
from recallbench.systems._fusion import RRF_K, reciprocal_rank_fusion
from recallbench.systems._off_loop import Worker
from recallbench.systems._session_context import (
    HISTORY_WEIGHT,
    RULE,
    SessionMemory,
    weighted_fusion,
)

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


def _ranks(ranking: Sequence[str]) -> dict[str, int]:
    """Each id's 1-based rank in ``ranking`` (its first, should it repeat)."""
    ranks: dict[str, int] = {}
    for rank, doc in enumerate(ranking, start=1):
        ranks.setdefault(doc, rank)
    return ranks


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

    def search_in_session(self, text: str, history: str, depth: int) -> list[tuple[int, float]]:
        """``text``'s and ``history``'s bm25 rankings (each ``max(depth, POOL)`` deep) fused by
        weighted reciprocal rank fusion; nothing when ``text`` has no word."""
        if match_expression(text) is None:
            return []
        pool = max(depth, POOL)
        return weighted_fusion(self.search(text, pool), self.search(history, pool), depth)

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

    def search_in_session(self, text: str, history: str, depth: int) -> list[tuple[int, float]]:
        """Cosine with the renormalised mix ``(1 - w) e(text) + w e(history)``, ``w`` =
        HISTORY_WEIGHT; nothing when ``text`` is blank."""
        if self._matrix is None or not text.strip():
            return []
        current, earlier = self.embedder.embed([text, history])
        mixed = normalise(((1 - HISTORY_WEIGHT) * current + HISTORY_WEIGHT * earlier)[None, :])
        scores = self._matrix @ mixed[0]
        top = np.lexsort((np.arange(len(scores)), -scores))[:depth]
        return [(int(row), float(scores[row])) for row in top]

    def close(self) -> None:
        self._matrix = None


class BuiltinSystem:
    """Lexical, dense or hybrid (reciprocal rank fusion, k = 60) retrieval in memory.

    Every hit carries the channels that found it and its rank in each channel's own ranking;
    a hybrid hit's score is its fused score.

    With ``session_context`` (the default) a query with a ``session_id`` is expanded with the
    session's earlier queries since the last ``setup()``, at weight 0.25 against 0.75 for the
    query itself (lexical: weighted reciprocal rank fusion of the two bm25 rankings; dense:
    the weighted mean of the two embeddings; hybrid: each channel so, then fused as usual;
    rule in ``_session_context``). A query without a session, or the first of its session,
    is searched exactly as without the option. After an expanded search,
    ``last_pre_expansion`` holds the ids the query alone would have returned (else None).
    """

    accepts_session: bool = True
    """Whether the system uses ``Query.session_id`` (checked by ``run --session-lift``)."""

    max_concurrency: int = 1
    """Searches are computed in one worker thread (the index's connection lives there):
    calls sent at once would only queue, and each latency would count the wait."""

    def __init__(
        self,
        channels: Sequence[str] = CHANNELS,
        embedder: str = "wordllama",
        name: str | None = None,
        session_context: bool = True,
    ) -> None:
        unknown = [c for c in channels if c not in CHANNELS]
        if unknown or not channels:
            raise UnknownNameError(  # bad input (exit 2), known before anything starts
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
        self.session_context = session_context
        self.accepts_session = session_context
        self._sessions = SessionMemory()
        self._worker = Worker()
        self._unexpanded: tuple[str, int] | None = None
        self._pre_expansion: tuple[str, ...] | None = None

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
        settings["session_context"] = RULE if self.session_context else False
        return settings

    async def setup(self, documents: Sequence[Document]) -> None:
        self._ids = [doc.id for doc in documents]
        self._sessions.reset()
        self._unexpanded, self._pre_expansion = None, None
        await self._worker.run(self._index, documents)  # indexing can take many seconds

    def _index(self, documents: Sequence[Document]) -> None:
        for channel in (self._lexical, self._dense):
            if channel is not None:
                channel.index(documents)

    async def search(self, query: Query, k: int) -> Sequence[Hit]:
        history = self._sessions.history(query) if self.session_context else None
        self._pre_expansion = None
        self._unexpanded = None if history is None else (query.text, k)
        return await self._worker.run(self._search, query.text, history, k)

    @property
    def last_pre_expansion(self) -> tuple[str, ...] | None:
        """The ids the last search would have returned without its session's history; None
        when it was not expanded. Computed when first read, so that the runner's timing of
        ``search`` does not include it."""
        if self._unexpanded is not None:
            text, k = self._unexpanded
            self._pre_expansion = tuple(hit.doc_id for hit in self._search(text, None, k))
            self._unexpanded = None
        return self._pre_expansion

    def _search(self, text: str, history: str | None, k: int) -> list[Hit]:
        """``text`` in every channel (expanded with ``history`` when given), then fused."""
        depth = max(k, POOL) if len(self.channels) > 1 else k
        found = {
            name: channel.search(text, depth)
            if history is None
            else channel.search_in_session(text, history, depth)
            for name, channel in (("lexical", self._lexical), ("dense", self._dense))
            if channel is not None
        }
        if len(found) == 1:
            name, ranked = next(iter(found.items()))
            return [
                Hit(
                    doc_id=self._ids[row], score=score, channels=(name,), channel_ranks={name: rank}
                )
                for rank, (row, score) in enumerate(ranked, start=1)
            ]
        rankings = {name: [self._ids[row] for row, _ in ranked] for name, ranked in found.items()}
        ranks = {name: _ranks(ranking) for name, ranking in rankings.items()}
        return [
            Hit(
                doc_id=doc,
                score=score,
                channels=channels,
                channel_ranks={name: ranks[name][doc] for name in channels},
            )
            for doc, score, channels in reciprocal_rank_fusion(rankings)[:k]
        ]

    async def close(self) -> None:
        self._worker.stop()
        for channel in (self._lexical, self._dense):
            if channel is not None:
                channel.close()
