"""A small MCP memory server (official SDK, stdio) for the adapter's own logic: one text
block per hit, no ids in the answer (content matching), and errors reported as plain text
with is_error false, as some real servers do."""

from __future__ import annotations

import re

from mcp.server import MCPServer

server = MCPServer("example-notes")
NOTES: list[str] = []


@server.tool()
def write_note(content: str) -> str:
    """Store a note."""
    NOTES.append(content)
    return f"stored note {len(NOTES)}"


@server.tool()
def search_notes(query: str, limit: int = 10) -> list[str]:
    """Notes sharing a word with the query, most shared words first."""
    if query == "fail":
        return ["# Search Failed: the index is being rebuilt"]
    words = set(re.findall(r"\w+", query.lower()))
    scored = [(len(words & set(re.findall(r"\w+", note.lower()))), note) for note in NOTES]
    hits = [note.upper() for shared, note in sorted(scored, key=lambda s: -s[0]) if shared]
    if "extra" in words:  # a hit that is none of the stored notes
        hits.append("an unrelated system note")
    return hits[:limit]


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 2 and sys.argv[1] == "http":  # Streamable HTTP on the given port
        server.run(transport="streamable-http", port=int(sys.argv[2]))
    else:
        server.run()
