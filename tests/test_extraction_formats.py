"""Extraction ground truth and output files: validation with every problem located."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recallbench.core import DatasetError
from recallbench.extraction import (
    GROUND_TRUTH_FORMAT,
    load_ground_truth,
    load_output,
    validated_ground_truth,
    validated_output,
)

SEED_EXAMPLE: dict[str, Any] = {
    "format": GROUND_TRUTH_FORMAT,
    "name": "meetings",
    "documents": [
        {
            "id": "meeting_001",
            "text": "Alice decided we launch on April 1st. Bob will deliver the API.",
            "events": [
                {
                    "category": "Decision",
                    "description": "Launch product on April 1st",
                    "actor": "Alice Chen",
                    "confidence": "high",
                    "evidence": [{"start": 0, "end": 37}],
                },
                {
                    "category": "Commitment",
                    "description": "Deliver API by March 25th",
                    "actor": "Bob Smith",
                    "due_date": "2024-03-25",
                },
            ],
            "entities": [
                {
                    "name": "Alice Chen",
                    "type": "PERSON",
                    "role": "Product Manager",
                    "mentions": ["Alice", "Alice Chen", "AC"],
                }
            ],
        },
        {"id": "meeting_005", "text": "Alice again."},
        {"id": "meeting_099", "text": "Unrelated."},
    ],
    "graph": [
        {
            "seed_document": "meeting_001",
            "expected_connections": [
                {
                    "document_id": "meeting_005",
                    "reason": "shared_entity",
                    "entity": "Alice Chen",
                    "relevance": "high",
                }
            ],
            "expected_not_connected": ["meeting_099"],
        }
    ],
}


def _write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "truth.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_the_seeds_example_loads(tmp_path: Path) -> None:
    truth = load_ground_truth(_write(tmp_path, SEED_EXAMPLE))
    assert truth.documents[0].events[1].due_date == "2024-03-25"
    assert truth.documents[0].entities[0].mentions == ("Alice", "Alice Chen", "AC")
    assert truth.graph[0].expected_connections[0].relevance == "high"


def test_every_problem_is_located_in_one_error(tmp_path: Path) -> None:
    data = json.loads(json.dumps(SEED_EXAMPLE))
    document = data["documents"][0]
    document["events"][0]["description"] = ""
    document["events"][1]["actors"] = "Bob"  # a typo of a field name
    document["events"][0]["evidence"] = [{"start": 9}]
    document["entities"][0]["mentions"].append("  ")
    data["documents"][2]["id"] = "meeting_005"
    data["graph"][0]["expected_connections"][0]["document_id"] = "meeting_404"
    data["graph"][0]["expected_connections"].append({"reason": "shared_event"})
    with pytest.raises(DatasetError) as caught:
        load_ground_truth(_write(tmp_path, data))
    found = {(p.location, p.message) for p in caught.value.problems}
    assert caught.value.source.endswith("truth.json")
    locations = {location for location, _ in found}
    assert {
        "documents[0].events[0].description",
        "documents[0].events[1].actors",
        "documents[0].events[0].evidence[0]",
        "documents[0].entities[0].mentions[3]",
        "documents[2].id",
        "graph[0].expected_connections[0].document_id",
        "graph[0].expected_connections[1]",
    } <= locations
    assert ("documents[0].events[1].actors", "unknown field") in found
    assert ("documents[2].id", 'duplicate id "meeting_005" (first at documents[1])') in found
    assert ("documents[0].events[0].evidence[0]", "a span needs both start and end") in found


def test_wrong_format_and_bad_json_are_located(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"expected 'recallbench\.extraction/v1'"):
        validated_ground_truth({**SEED_EXAMPLE, "format": "other/v1"}, "x")
    path = tmp_path / "bad.json"
    path.write_text('{"documents": [}', encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_ground_truth(path)
    assert caught.value.problems[0].location == f"{path}:1:16"


def test_a_connection_both_expected_and_excluded_is_an_error() -> None:
    data = json.loads(json.dumps(SEED_EXAMPLE))
    data["graph"][0]["expected_not_connected"] = ["meeting_005"]
    with pytest.raises(DatasetError) as caught:
        validated_ground_truth(data, "x")
    assert [p.location for p in caught.value.problems] == ["graph[0].expected_not_connected[0]"]


def test_output_format(tmp_path: Path) -> None:
    data = {
        "format": "recallbench.extraction-output/v1",
        "system": "mine",
        "documents": [
            {"id": "d1", "events": [{"description": "x", "actor": "Alice"}]},
            {"id": "d1", "entities": [{"name": "Alice", "mentions": ["A"]}]},
        ],
        "expansions": [{"seed_document": "d1", "connections": [{"document_id": "d2"}]}],
    }
    with pytest.raises(DatasetError) as caught:
        validated_output(data, "out.json")
    assert [p.location for p in caught.value.problems] == ["documents[1].id"]
    data["documents"][1]["id"] = "d2"
    path = tmp_path / "out.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    output = load_output(path)
    assert output.documents[1].entities[0].mentions == ("A",)
