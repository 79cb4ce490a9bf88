"""A BM25 search service in the standard library: POST /documents {"documents": [{"id",
"text"}]} adds, POST /search {"query", "k"} ranks, DELETE /documents empties.
Run: python bm25_service.py --port 8080"""

import argparse
import json
import math
import re
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DOCS: dict[str, Counter[str]] = {}


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def bm25(query: str, k: int, k1: float = 1.2, b: float = 0.75) -> list[dict[str, object]]:
    average = sum(sum(c.values()) for c in DOCS.values()) / max(len(DOCS), 1)
    scores: Counter[str] = Counter()
    for term in set(words(query)):
        having = [d for d, counts in DOCS.items() if term in counts]
        idf = math.log(1 + (len(DOCS) - len(having) + 0.5) / (len(having) + 0.5))
        for d in having:
            tf, length = DOCS[d][term], sum(DOCS[d].values())
            scores[d] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average))
    return [{"id": d, "score": round(s, 4)} for d, s in scores.most_common(k)]


class Handler(BaseHTTPRequestHandler):
    def reply(self, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # readiness: {"documents": N}
        self.reply({"documents": len(DOCS)})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/documents":
            DOCS.update({d["id"]: Counter(words(d["text"])) for d in body["documents"]})
            self.reply({"ok": True})
        else:
            self.reply({"hits": bm25(body["query"], int(body.get("k", 10)))})

    def do_DELETE(self) -> None:
        DOCS.clear()
        self.reply({"ok": True})


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8080)
    port = parser.parse_args().port
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
