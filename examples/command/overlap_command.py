#!/usr/bin/env python3
"""A retriever as a process speaking recallbench's JSON-lines protocol on stdin/stdout,
the shape any language can take:

    {"op": "ingest", "documents": [{"id", "text", "title", "metadata"}, ...]} -> {"ok": true}
    {"op": "search", "query": "...", "k": 10} -> {"hits": [{"id": "...", "score": 2.5}]}
    anything it cannot do                     -> {"error": "why"}

One answer line per request, flushed at once; logs go to stderr (stdout is the protocol).
    recallbench run --dataset examples/golden.json \
        --system "command:python3 examples/command/overlap_command.py"
"""

import json
import re
import sys

documents: dict[str, set[str]] = {}


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def answer(message: dict) -> dict:
    if message.get("op") == "ingest":
        documents.clear()
        documents.update({d["id"]: words(d["text"]) for d in message["documents"]})
        return {"ok": True}
    if message.get("op") == "search":
        query = words(message["query"])
        scored = [(len(query & terms), doc_id) for doc_id, terms in documents.items()]
        ranked = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))
        return {"hits": [{"id": i, "score": s} for s, i in ranked[: message["k"]]]}
    return {"error": f"unknown op {message.get('op')!r}"}


for line in sys.stdin:
    print(json.dumps(answer(json.loads(line))), flush=True)
