"""Reading third-party sources, and what a loader did to them, recorded in the dataset
it produces.

Every loader of a third-party format writes ``metadata["loader"]``: its name and version,
the source path, the rules it applied (grade mapping, granularity, ...), and every change
to the source: a question dropped or altered, an evidence id that matched nothing, and why.
Reports carry it, so a published number says exactly which questions it covers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import JsonValue

from recallbench.core import DatasetError, Problem
from recallbench.core._validation import read_json

Action = Literal["dropped", "altered", "flagged"]


@dataclass(frozen=True)
class Change:
    """One change to the source: ``subject`` is the id of the query, judgment or document."""

    subject: str
    action: Action
    reason: str

    def as_json(self) -> dict[str, JsonValue]:
        return {"subject": self.subject, "action": self.action, "reason": self.reason}


@dataclass
class Provenance:
    """Collects a loader's rules and changes while it reads; :meth:`metadata` at the end."""

    loader: str
    version: str
    source: Path
    rules: dict[str, JsonValue] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)

    def change(self, subject: str, action: Action, reason: str) -> None:
        self.changes.append(Change(subject, action, reason))

    def metadata(self) -> dict[str, JsonValue]:
        """The dataset's ``metadata["loader"]`` value."""
        # the file's name and hash, never its path: the same data loaded from another
        # folder must give the same dataset (and dataset hash)
        source: dict[str, JsonValue] = {"name": self.source.name}
        if self.source.is_file():
            source["sha256"] = hashlib.sha256(self.source.read_bytes()).hexdigest()
        return {
            "name": self.loader,
            "version": self.version,
            "source": source,
            "rules": self.rules,
            "changes": [change.as_json() for change in self.changes],
        }


def loader_changes(metadata: dict[str, JsonValue]) -> list[Change]:
    """The changes a dataset's loader recorded (none for datasets written by hand)."""
    loader = metadata.get("loader")
    if not isinstance(loader, dict):
        return []
    changes = loader.get("changes")
    if not isinstance(changes, list):
        return []
    return [
        Change(str(item["subject"]), item["action"], str(item["reason"]))  # type: ignore[arg-type]
        for item in changes
        if isinstance(item, dict) and item.get("action") in ("dropped", "altered", "flagged")
    ]


def read_json_list(file: Path, what: str) -> list[Any]:
    """A third-party JSON file whose top level is a list of ``what`` (anything else, and
    what :func:`read_json` refuses, is a located DatasetError)."""
    data = read_json(file)
    if not isinstance(data, list):
        raise DatasetError(str(file), [Problem("$", f"expected a list of {what}")])
    return data


def read_lines(path: Path, problems: list[Problem]) -> Iterator[tuple[int, str]]:
    """(line number, line without its end) of a UTF-8 text file; CRLF and LF alike. A
    missing file, or a line that is not UTF-8 (decoded line by line, so that a bad byte is
    located), is added to ``problems``."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        problems.append(Problem(str(path), "file not found"))
        return
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                yield number, raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                problems.append(Problem(f"{path}:{number}", f"not UTF-8 text ({exc.reason})"))


def read_jsonl(path: Path, problems: list[Problem]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of every non-blank line of a JSON Lines file; a missing file,
    a line that is not UTF-8, not JSON or not an object is added to ``problems`` with its
    file:line."""
    for number, line in read_lines(path, problems):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(f"{path}:{number}", f"invalid JSON: {exc.msg}"))
            continue
        if not isinstance(record, dict):
            problems.append(Problem(f"{path}:{number}", "expected a JSON object"))
            continue
        yield number, record
