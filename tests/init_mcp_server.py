"""A scripted MCP memory server (official SDK, stdio) with shapes that `systems init`
must find by probing, chosen by the first argument:

- ``nested``: hits nested in the text block's JSON (``data.matches``), each hit's id under
  ``ref.key`` beside a server-made ``id``, the text under ``body``;
- ``unmappable``: no tool takes a text to store or a query string.
"""

from __future__ import annotations

import json
import re
import sys

from mcp.server import MCPServer

MODE = sys.argv[1] if len(sys.argv) > 1 else "nested"
server = MCPServer(f"init-{MODE}")
STORED: list[dict[str, str]] = []

if MODE == "nested":

    @server.tool()
    def memorize(body: str, key: str, kind: str = "note") -> str:
        """Store a memory under a key of the caller's."""
        STORED.append({"key": key, "body": body})
        return f"stored #{len(STORED)}"

    @server.tool()
    def lookup(question: str, max_hits: int = 5) -> str:
        """Find memories that share a word with the question; JSON in the text."""
        words = set(re.findall(r"\w+", question.lower()))
        matches = [
            {"id": f"m{n}", "ref": {"key": item["key"]}, "body": item["body"], "score": 1.0}
            for n, item in enumerate(STORED)
            if words & set(re.findall(r"\w+", item["body"].lower()))
        ]
        return json.dumps({"data": {"matches": matches[:max_hits], "total": len(matches)}})

    @server.tool()
    def purge_keys(keys: list[str]) -> str:
        """Delete the memories under these keys."""
        STORED[:] = [item for item in STORED if item["key"] not in keys]
        return "ok"

else:

    @server.tool()
    def ping() -> str:
        """Answer pong."""
        return "pong"

    @server.tool()
    def stats(verbose: bool = False) -> dict[str, int]:
        """How many calls were made."""
        return {"calls": 1}


if __name__ == "__main__":
    server.run()
