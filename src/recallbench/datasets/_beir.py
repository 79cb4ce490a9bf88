"""BEIR folders: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

Following BEIR's own loader, only the queries judged in the chosen split are kept.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from recallbench.core import Dataset, Document, Problem, Query
from recallbench.datasets._json_v1 import checked_dataset
from recallbench.datasets._provenance import read_jsonl


def is_beir_folder(path: Path) -> bool:
    return path.is_dir() and (path / "corpus.jsonl").is_file() and (path / "qrels").is_dir()


def _jsonl(path: Path, problems: list[Problem]) -> Iterator[tuple[int, dict[str, Any]]]:
    """BEIR records: JSON Lines objects with a string ``_id``."""
    for number, record in read_jsonl(path, problems):
        if not isinstance(record.get("_id"), str):
            problems.append(Problem(f"{path}:{number}", 'expected an object with a string "_id"'))
            continue
        # null or a number would otherwise become the text "None" or "3" without a word
        text, title = record.get("text", ""), record.get("title")
        if not isinstance(text, str) or not isinstance(title, str | None):
            key, value = ("text", text) if not isinstance(text, str) else ("title", title)
            message = f'"{key}" must be a string, got {json.dumps(value)[:40]}'
            problems.append(Problem(f"{path}:{number}", message))
            continue
        yield number, record


def load_beir(path: Path, split: str = "test") -> Dataset:
    """Read a BEIR folder; every malformed line is reported with its ``file:line``."""
    problems: list[Problem] = []
    qrels = _read_qrels_tsv(path / "qrels" / f"{split}.tsv", problems)
    documents = [
        Document.model_construct(
            id=record["_id"],
            text=record.get("text", ""),
            title=record.get("title") or None,
            metadata=record.get("metadata") or {},
        )
        for _, record in _jsonl(path / "corpus.jsonl", problems)
    ]
    queries = [
        Query.model_construct(
            id=record["_id"],
            text=record.get("text", ""),
            intent=None,
            category=None,
            session_id=None,
            tags=(),
            metadata=record.get("metadata") or {},
        )
        for _, record in _jsonl(path / "queries.jsonl", problems)
        if record["_id"] in qrels
    ]
    dataset = Dataset.model_construct(
        name=path.name,
        version=split,
        documents=tuple(documents),
        queries=tuple(queries),
        qrels=qrels,
    )
    return checked_dataset(dataset, str(path), problems)


def _read_qrels_tsv(path: Path, problems: list[Problem]) -> dict[str, dict[str, int]]:
    """The judgments; a (query, document) pair judged twice is a problem at its second line
    (a silent last-one-wins would change grades without a word)."""
    qrels: dict[str, dict[str, int]] = {}
    lines: dict[tuple[str, str], int] = {}
    try:
        handle = path.open(encoding="utf-8", newline="")
    except FileNotFoundError:
        problems.append(Problem(str(path), "file not found"))
        return qrels
    with handle:
        try:
            rows = list(csv.reader(handle, delimiter="\t"))
        except UnicodeDecodeError as exc:
            problems.append(Problem(str(path), f"not UTF-8 text ({exc.reason})"))
            return qrels
        for number, row in enumerate(rows, start=1):
            if not row or (number == 1 and row[0] == "query-id"):
                continue
            if len(row) != 3:
                problems.append(Problem(f"{path}:{number}", f"expected 3 columns, got {len(row)}"))
                continue
            try:
                grade = int(row[2])
            except ValueError:
                problems.append(
                    Problem(f"{path}:{number}", f"grade must be an integer, got {row[2]!r}")
                )
                continue
            judged = qrels.setdefault(row[0], {})
            if row[1] in judged:
                first = lines[(row[0], row[1])]
                problems.append(
                    Problem(
                        f"{path}:{number}",
                        f"document {row[1]!r} judged twice for query {row[0]!r} "
                        f"(first at {path}:{first})",
                    )
                )
                continue
            judged[row[1]] = grade
            lines[(row[0], row[1])] = number
    return qrels
