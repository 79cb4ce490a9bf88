"""Ingest as files: each document written into a folder a server indexes (``[ingest]
files``), for a read-only indexer that has no tool to write; then made to index them
(``[ingest.index]``) and waited for until a search finds them (``[ingest.ready]``).

The MCP adapter drives the server; this module writes and removes the files and runs the
waiting loop, given a way to search.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from recallbench.core import Document, SystemUnderTestError
from recallbench.systems._answers import fill
from recallbench.systems._profile import IngestFiles, IngestReady

_NOT_IN_NAMES = re.compile(r"[/\\\0]")


def document_values(document: Document) -> dict[str, Any]:
    """What ``{id}``, ``{text}``, ``{title}`` and ``{metadata.KEY}`` stand for (the title
    is the id when the document has none)."""
    return {
        "id": document.id,
        "text": document.text,
        "title": document.title or document.id,
        **{f"metadata.{key}": value for key, value in document.metadata.items()},
    }


def file_text(spec: IngestFiles, values: dict[str, Any]) -> str:
    """A document's file: YAML front matter (each value written as JSON, which YAML reads
    as the same string, number or list) between ``---`` lines, then the body."""
    body = str(fill(spec.body, values))
    if not spec.front_matter:
        return body
    lines = [
        f"{key}: {json.dumps(fill(value, values), ensure_ascii=False)}"
        for key, value in spec.front_matter.items()
    ]
    return "---\n" + "\n".join(lines) + "\n---\n" + body


def file_path(spec: IngestFiles, folder: Path, values: dict[str, Any]) -> Path:
    """Where a document's file goes: ``path`` under ``folder``, with separators in the
    values replaced; SystemUnderTestError for a path that leaves the folder."""
    safe = {
        key: _NOT_IN_NAMES.sub("_", value) if isinstance(value, str) else value
        for key, value in values.items()
    }
    path = (folder / str(fill(spec.path, safe))).resolve()
    if not path.is_relative_to(folder.resolve()) or path == folder.resolve():
        raise SystemUnderTestError(
            f"document {values['id']!r}: [ingest.files] path {spec.path!r} gives {path}, "
            f"which is not a file inside {folder}"
        )
    return path


def write_files(spec: IngestFiles, folder: Path, documents: Sequence[Document]) -> list[Path]:
    """Write one file per document under ``folder``; the paths written. Two documents
    that would share a file are refused before anything is written."""
    planned: dict[Path, Document] = {}
    for document in documents:
        path = file_path(spec, folder, document_values(document))
        if path in planned:
            raise SystemUnderTestError(
                f"documents {planned[path].id!r} and {document.id!r} both go to {path}: "
                "make [ingest.files] path tell them apart (it has {id}?)"
            )
        planned[path] = document
    for path, document in planned.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(file_text(spec, document_values(document)), encoding="utf-8")
    return list(planned)


def remove_files(paths: Sequence[Path]) -> None:
    """Delete the files written (those already gone are skipped)."""
    for path in paths:
        path.unlink(missing_ok=True)


async def wait_until_found(
    name: str,
    ready: IngestReady,
    document: Document,
    found: Callable[[str], Awaitable[set[str]]],
) -> None:
    """Search ``ready.query`` (filled with ``document``) until ``document`` is among the
    ids ``found`` returns; a search that fails is tried again. SystemUnderTestError after
    ``ready.timeout`` seconds, with the last search's error."""
    query = str(fill(ready.query, document_values(document)))
    deadline = time.monotonic() + ready.timeout
    last = ""
    while True:
        try:
            if document.id in await found(query):
                return
            last = ""
        except SystemUnderTestError as error:
            last = f"; the last search failed: {error}"
        if time.monotonic() > deadline:
            raise SystemUnderTestError(
                f"{name}: the files written were not searchable within {ready.timeout} s "
                f"(a search for {query[:60]!r} never found {document.id!r}{last})"
            )
        await asyncio.sleep(ready.interval)
