"""An MCP memory server (official SDK) that misbehaves on request, for the proxy's fault
tests: ``search("hang")`` never answers (and creates the file ``$FAULTY_HANG_MARKER``, when
set, so that a test knows the call arrived), ``crash()`` ends the process (status 3, a
message on standard error), ``search("big N")`` answers with one hit of N bytes, and
``write`` takes a memory of any size. Every other search answers with one hit per stored memory.
``python faulty_mcp_server.py [http PORT]``: stdio, or Streamable HTTP on PORT."""

from __future__ import annotations

import os
import sys
import time

from mcp.server import MCPServer

server = MCPServer("faulty-notes")
NOTES: list[str] = []
BIG = 64 * 1024 * 1024
"""Largest request over HTTP (the SDK's default, 4 MiB, would refuse a 5 MB memory)."""


@server.tool()
def write(content: str) -> str:
    """Store a memory."""
    NOTES.append(content)
    return f"stored {len(content)} characters"


@server.tool()
def search(query: str) -> list[str]:
    """The stored memories (or a fault, by query)."""
    if query == "hang":
        marker = os.environ.get("FAULTY_HANG_MARKER")
        if marker:
            open(marker, "w").close()
        time.sleep(3600)
    if query.startswith("big "):
        return ["x" * int(query.split()[1])]
    return [f"{query}: {note}" for note in NOTES] or [f"nothing about {query}"]


@server.tool()
def crash() -> str:
    """End the server at once."""
    print("faulty-notes: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run(transport="streamable-http", port=int(sys.argv[2]), max_request_body_size=BIG)
    else:
        server.run()
