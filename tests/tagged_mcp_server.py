"""An MCP memory server (official SDK, stdio) that answers searches as JSON text, each hit
carrying its memory's id only inside a list (``{"results": [{"content", "score", "tags":
["d1"]}]}``), and refuses to store a memory it finds too generic (an error answer), one at
a time (``store``) or in batches (``store_many``)."""

from __future__ import annotations

import json
import re
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("tagged-notes")
NOTES: list[tuple[str, str]] = []


def _refuse(content: str) -> None:
    if "generic" in content:
        raise ToolError(
            json.dumps({"error": "VALIDATION_ERROR", "message": "Content appears too generic"})
        )


@server.tool()
def store(content: str, tag: str) -> str:
    """Store a memory under a tag."""
    _refuse(content)
    NOTES.append((tag, content))
    return "stored"


@server.tool()
def store_many(items: list[dict[str, Any]]) -> str:
    """Store memories, all or none."""
    for item in items:
        _refuse(item["content"])
    NOTES.extend((item["tag"], item["content"]) for item in items)
    return f"stored {len(items)}"


@server.tool()
def search(query: str, limit: int = 10) -> str:
    """Memories sharing a word with the query, scored by the words shared."""
    words = set(re.findall(r"\w+", query.lower()))
    found = []
    for tag, content in NOTES:
        shared = len(words & set(re.findall(r"\w+", content.lower())))
        if shared:
            found.append({"content": content, "score": shared, "tags": [tag, "memory"]})
    found.sort(key=lambda hit: -hit["score"])
    return json.dumps({"results": found[:limit]})


if __name__ == "__main__":
    server.run()
