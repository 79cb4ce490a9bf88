"""Tiny retrievers for the Python and command adapters' tests (word overlap)."""

from __future__ import annotations

import json
import re
import sys
import time
from typing import Any


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


class Overlap:
    """A retriever object: ingest, then search by shared words (async search on purpose)."""

    def __init__(self) -> None:
        self.documents: list[dict[str, Any]] = []
        self.closed = False

    def ingest(self, documents: list[dict[str, Any]]) -> None:
        self.documents = documents

    async def search(self, text: str, k: int) -> list[tuple[str, float]]:
        scored = [(d["id"], float(len(words(text) & words(d["text"])))) for d in self.documents]
        return sorted((s for s in scored if s[1] > 0), key=lambda s: -s[1])[:k]


def fixed(text: str, k: int) -> list[str]:
    """A search function with nothing to ingest."""
    return ["fri", "pg"][:k]


def serve(crash_after: int | None = None) -> None:
    """The JSON-lines protocol over stdin/stdout."""
    retriever, searches = Overlap(), 0
    for line in sys.stdin:
        message = json.loads(line)
        if message["op"] == "ingest":
            retriever.ingest(message["documents"])
            answer: dict[str, Any] = {"ok": True}
        else:
            searches += 1
            if crash_after is not None and searches > crash_after:
                sys.exit(3)
            if message["query"] == "hang":
                time.sleep(60)
            if message["query"] == "garbage":
                print("<html>502 Bad Gateway</html>", flush=True)
                continue
            scored = [
                (d["id"], len(words(message["query"]) & words(d["text"])))
                for d in retriever.documents
            ]
            hits = [{"id": i, "score": s} for i, s in sorted(scored, key=lambda x: -x[1]) if s]
            answer = {"hits": hits[: message["k"]]}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    serve(int(sys.argv[1]) if len(sys.argv) > 1 else None)
