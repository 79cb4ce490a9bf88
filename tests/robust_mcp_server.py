"""A small MCP memory server (official SDK, stdio) that misbehaves on purpose, for
tests/test_run_robust*.py.

    robust_mcp_server.py MODE [MARKER]

MODE: ``garbage`` prints a line that is not JSON-RPC on stdout before serving; ``hang``
never answers a search for "hang"; ``slow`` takes 0.2 s per search. MARKER, when given, is
a file created when the first search arrives.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from mcp.server import MCPServer

server = MCPServer("robust-notes")
NOTES: list[str] = []
MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
MARKER = Path(sys.argv[2]) if len(sys.argv) > 2 else None


@server.tool()
def write_note(content: str) -> str:
    """Store a note."""
    NOTES.append(content)
    return "stored"


@server.tool()
async def search_notes(query: str) -> list[str]:
    """Every note containing a word of the query."""
    if MARKER is not None:
        MARKER.touch()
    if MODE == "hang" and query == "hang":
        await asyncio.sleep(3600)
    if MODE == "slow":
        await asyncio.sleep(0.2)
    words = set(query.lower().split())
    return [note for note in NOTES if words & set(note.lower().split())]


if __name__ == "__main__":
    if MODE == "garbage":
        print("robust-notes 1.0 ready, listening on stdio", flush=True)
    server.run()
