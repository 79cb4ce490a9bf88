"""A scripted MCP server (official SDK, stdio) that validates what it stores as
@ai-devkit/memory 0.20.1 does: ``memory_storeKnowledge`` requires a ``title`` and a
``content`` of 50 characters or more, refuses content starting with "TODO " as too
generic, and answers a refusal as an error whose text is pretty-printed JSON (several
lines). ``memory_searchKnowledge`` answers JSON text ``{"results": [{"id", "title",
"content", "score"}]}`` with server-made ids.

With the argument ``strict``, titles must also be 10 characters or more (the real
server's minimum, which ``check-1`` is not).
"""

from __future__ import annotations

import json
import re
import sys
import uuid

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

MIN_TITLE = 10 if sys.argv[1:] == ["strict"] else 1
server = MCPServer("validating")
STORED: list[dict[str, str]] = []


def refuse(errors: list[str]) -> None:
    """Raise the server's validation error, as multi-line JSON."""
    message = "; ".join(errors)
    body = {"error": "VALIDATION_ERROR", "message": message, "details": {"errors": errors}}
    raise ToolError(json.dumps(body, indent=2))


@server.tool()
def memory_storeKnowledge(title: str, content: str, tags: list[str] | None = None) -> str:
    """Store a piece of knowledge: a title (required) and content (50-5000 chars)."""
    errors = []
    if not title.strip():
        errors.append("Title is required")
    elif len(title.strip()) < MIN_TITLE:
        errors.append(f"Title must be at least {MIN_TITLE} characters")
    if len(content.strip()) < 50:
        errors.append("Content must be at least 50 characters")
    if content.lower().startswith("todo "):
        errors.append("Content appears too generic. Please provide specific knowledge.")
    if errors:
        refuse(errors)
    item = {"id": str(uuid.uuid4()), "title": title, "content": content}
    STORED.append(item)
    return json.dumps({"success": True, "id": item["id"]})


@server.tool()
def memory_searchKnowledge(query: str, limit: int = 5) -> str:
    """Search knowledge by words of the query (3-500 chars); limit at most 20."""
    words = set(re.findall(r"\w+", query.lower()))
    results = []
    for item in STORED:
        said = re.findall(r"\w+", f"{item['title']} {item['content']}".lower())
        shared = len(words & set(said))
        if shared:
            results.append({**item, "tags": [], "score": float(shared)})
    results.sort(key=lambda hit: -float(hit["score"]))
    return json.dumps({"results": results[: min(limit, 20)], "query": query})


if __name__ == "__main__":
    server.run()
