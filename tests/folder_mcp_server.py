"""A read-only MCP indexer (official SDK, stdio) for ``[ingest] files``: it has no tool to
write, only reads the Markdown files of a folder (``NOTES_DIR``) into its index, at start
and when ``reindex`` is called, never on its own. Each file's front matter ``id`` names
the hit; without one, the file's name does. ``search`` ranks files by the query words they
share and returns JSON ``{"hits": [{"id", "text", "shared"}]}``."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from mcp.server import MCPServer

server = MCPServer("folder-notes")
FOLDER = Path(os.environ["NOTES_DIR"])
INDEX: dict[str, str] = {}


def _read() -> int:
    INDEX.clear()
    for path in sorted(FOLDER.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        name = path.stem
        if text.startswith("---\n"):
            head, _, text = text[4:].partition("\n---\n")
            for line in head.splitlines():
                key, _, value = line.partition(": ")
                if key == "id":
                    name = json.loads(value)
        INDEX[name] = text
    return len(INDEX)


@server.tool()
def reindex() -> str:
    """Read the folder again."""
    return f"indexed {_read()} files"


@server.tool()
def search(query: str, limit: int = 10) -> str:
    """Files sharing a word with the query, most shared words first."""
    words = set(re.findall(r"\w+", query.lower()))
    scored = [(len(words & set(re.findall(r"\w+", t.lower()))), n, t) for n, t in INDEX.items()]
    hits = [
        {"id": name, "text": text, "shared": shared}
        for shared, name, text in sorted(scored, key=lambda s: (-s[0], s[1]))
        if shared
    ]
    return json.dumps({"hits": hits[:limit]})


if __name__ == "__main__":
    _read()
    server.run()
