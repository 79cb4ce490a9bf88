"""A scripted MCP server (official SDK, stdio) that answers searches as mcp-memory-keeper
0.14.1 does: prose by default, JSON ``{"items": [{"key", "value", ...}]}`` when called
with ``includeMetadata = true``, and the plain text ``No results found for: "..."`` when
nothing matches (whatever was asked for). It matches as the real one does: the whole query,
case-insensitively, inside a key or a value.

With the argument ``prose``, the search tool has no ``includeMetadata``: prose only.
"""

from __future__ import annotations

import json
import sys

from mcp.server import MCPServer

PROSE_ONLY = sys.argv[1:] == ["prose"]
server = MCPServer("keeper")
STORED: dict[str, dict[str, str]] = {}


@server.tool()
def context_save(
    key: str, value: str, category: str | None = None, priority: str = "normal"
) -> str:
    """Save a context item under a key."""
    STORED[key] = {"value": value, "category": category or "", "priority": priority}
    return f"Saved: {key}"


def search(query: str, limit: int | None, metadata: bool) -> str:
    """The answer of memory-keeper's ``context_search``."""
    wanted = query.lower()
    found = [
        (key, item)
        for key, item in STORED.items()
        if wanted in key.lower() or wanted in item["value"].lower()
    ][: limit or None]
    if not found:
        return f'No results found for: "{query}"'
    if metadata:
        items = [
            {
                "key": key,
                "value": item["value"],
                "category": item["category"] or None,
                "priority": item["priority"],
                "metadata": None,
                "size": len(item["value"]),
            }
            for key, item in found
        ]
        return json.dumps({"items": items, "totalCount": len(items), "query": query}, indent=2)
    shown = "\n\n".join(
        f"• [{item['priority']}] {key} ({item['category'] or 'none'})\n  {item['value'][:100]}"
        for key, item in found
    )
    return f'Found {len(found)} results for "{query}":\n\n{shown}'


if PROSE_ONLY:

    @server.tool()
    def context_search(query: str, limit: int | None = None) -> str:
        """Search context items by key or value."""
        return search(query, limit, False)

else:

    @server.tool()
    def context_search(  # type: ignore[misc]
        query: str,
        limit: int | None = None,
        includeMetadata: bool = False,
    ) -> str:
        """Search context items by key or value (includeMetadata: timestamps and size)."""
        return search(query, limit, includeMetadata)


@server.tool()
def context_delete(key: str) -> str:
    """Delete a context item by key."""
    return "Deleted" if STORED.pop(key, None) is not None else f"No item: {key}"


if __name__ == "__main__":
    server.run()
