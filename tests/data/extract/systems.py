"""Python extractors and deciders for the tests of python: systems, good and faulty.

Loaded as ``python:tests/data/extract/systems.py:NAME``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def first_line(document: dict[str, Any]) -> dict[str, Any]:
    """One event per document: its first line, with no id (the document's is implied)."""
    line = document["text"].strip().splitlines()[0]
    return {
        "events": [{"description": line, "category": "Status"}],
        "entities": [{"name": document["id"], "type": "OTHER", "mentions": [document["id"]]}],
        "observations": [{"text": line}],
    }


async def first_line_async(document: dict[str, Any]) -> dict[str, Any]:
    return first_line(document)


def as_output(document: dict[str, Any]) -> dict[str, Any]:
    """A whole recallbench.extraction-output/v1 object holding the one document."""
    return {
        "format": "recallbench.extraction-output/v1",
        "system": "as-output",
        "documents": [{"id": document["id"], **first_line(document)}],
    }


def raises(document: dict[str, Any]) -> dict[str, Any]:
    raise ValueError(f"cannot read {document['id']}")


def off_format(document: dict[str, Any]) -> dict[str, Any]:
    """An event whose description is a number, and an unknown key."""
    return {"events": [{"description": 5}], "topics": []}


def a_list(document: dict[str, Any]) -> list[str]:
    return ["not", "an", "object"]


def other_id(document: dict[str, Any]) -> dict[str, Any]:
    return {"id": "somewhere-else", "events": []}


class WholeCorpus:
    """An object with extract(documents): one empty extraction per document."""

    name = "whole-corpus"

    def extract(self, documents: Iterable[Any]) -> dict[str, Any]:
        return {
            "format": "recallbench.extraction-output/v1",
            "system": self.name,
            "documents": [{"id": document.id} for document in documents],
        }


class BadCorpus:
    """extract(documents) answering a duplicate document id."""

    def extract(self, documents: Iterable[Any]) -> dict[str, Any]:
        return {
            "format": "recallbench.extraction-output/v1",
            "system": "bad",
            "documents": [{"id": "x"}, {"id": "x"}],
        }


class ModelCorpus:
    """extract(documents) answering an ExtractionOutput value with a duplicate id."""

    def extract(self, documents: Iterable[Any]) -> Any:
        from recallbench.extraction import ExtractedDocument, ExtractionOutput

        twice = (ExtractedDocument(id="x"), ExtractedDocument(id="x"))
        return ExtractionOutput(system="model", documents=twice)


def always_add(case: dict[str, Any]) -> dict[str, Any]:
    return {"action": "ADD", "target": None}


def first_memory(case: dict[str, Any]) -> dict[str, Any]:
    """NOOP on the first stored memory (ADD when there is none)."""
    if not case["existing"]:
        return {"action": "ADD", "target": None}
    return {"action": "NOOP", "target": case["existing"][0]["id"]}


def unknown_target(case: dict[str, Any]) -> dict[str, Any]:
    return {"action": "UPDATE", "target": "m99"}


def bad_action(case: dict[str, Any]) -> dict[str, Any]:
    return {"action": "MERGE", "target": None}


def decide_raises(case: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError("no decision")
