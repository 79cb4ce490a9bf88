"""Loading reports every problem, located, and the CLI exits 2 without a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.core import Dataset, DatasetError
from recallbench.datasets import dump_json_dataset, load_json_dataset


def valid() -> dict[str, Any]:
    return {
        "format": "recallbench.dataset/v1",
        "name": "tiny",
        "documents": [
            {
                "id": "d1",
                "text": "Use PostgreSQL for the ledger.",
                "metadata": {"tier": "critical"},
            },
            {"id": "d2", "text": "Deploys freeze on Fridays."},
            {"id": "d9x", "text": "Unrelated."},
        ],
        "queries": [{"id": "q1", "text": "which database?"}, {"id": "q3", "text": "deploys"}],
        "qrels": {"q1": {"d1": 3}, "q3": {"d2": 2}},
    }


def broken() -> dict[str, Any]:
    data = valid()
    data["queries"] += [{"id": "q1", "text": "duplicate"}, {"text": "no id"}]
    data["documents"][1]["metadata"] = {"tier": "urgent"}
    data["qrels"] = {"q3": {"d9": 1, "d2": "high"}, "q7": {"d1": 1}, "q1": {"d1": 2.5}}
    data["relevance_threshold"] = "one"
    data["colour"] = "blue"
    data["documents"][2]["text"] = " \n"
    data["queries"][1]["answerable"] = "no"
    return data


def write(tmp_path: Path, data: Any, name: str = "data.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=2))
    return path


def test_valid_dataset_round_trips(tmp_path: Path) -> None:
    dataset = load_json_dataset(write(tmp_path, valid()))
    again = load_json_dataset(write(tmp_path, json.loads(dump_json_dataset(dataset)), "b.json"))
    assert again == dataset
    assert again.sha256 == dataset.sha256
    assert dataset.relevant("q1") == {"d1": 3}


def test_every_problem_is_reported_with_its_path(tmp_path: Path) -> None:
    with pytest.raises(DatasetError) as caught:
        load_json_dataset(write(tmp_path, broken()))
    problems = {str(problem) for problem in caught.value.problems}
    assert problems == {
        'queries[2].id: duplicate id "q1" (first at queries[0])',
        "queries[3].id: required field is missing",
        'qrels.q3.d9: unknown document "d9"',
        'qrels.q3.d2: grade must be an integer, got "high"',
        "qrels.q1.d1: grade must be an integer, got 2.5",
        'qrels.q7: unknown query "q7"',
        "documents[1].metadata.tier: tier must be one of constitutional, critical, important, "
        'normal, temporary; got "urgent"',
        'relevance_threshold: must be an integer, got "one"',
        "colour: unknown field",
        "documents[2].text: text is empty",
        'queries[1].answerable: must be true or false, got "no"',
    }


def test_json_syntax_error_gives_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{\n  "name": "x",\n  "documents": [,]\n}\n')
    with pytest.raises(DatasetError, match=r"bad\.json:3:17: invalid JSON"):
        load_json_dataset(path)


def test_unknown_format_is_refused(tmp_path: Path) -> None:
    data = valid() | {"format": "recallbench.dataset/v9"}
    with pytest.raises(DatasetError, match=r"expected 'recallbench\.dataset/v1'"):
        load_json_dataset(write(tmp_path, data))


@pytest.mark.parametrize("command", [["run", "--dataset"], ["datasets", "validate"]])
def test_cli_lists_every_defect_and_exits_2(tmp_path: Path, command: list[str]) -> None:
    path = write(tmp_path, broken(), "broken.json")
    out = tmp_path / "out"
    args = [*command, str(path)] + (["--out", str(out)] if command[0] == "run" else [])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "11 problems" in result.output
    for fragment in (
        'qrels.q3.d9: unknown document "d9"',
        'queries[2].id: duplicate id "q1"',
        'qrels.q3.d2: grade must be an integer, got "high"',
    ):
        assert fragment in result.output
    assert not out.exists(), "nothing may be written when the input is bad"


def test_models_are_immutable() -> None:
    dataset = Dataset.model_validate(valid())
    with pytest.raises(Exception, match="frozen"):
        dataset.name = "other"  # type: ignore[misc]


def test_grades_above_3_are_refused_and_negative_ones_mean_judged_non_relevant(
    tmp_path: Path,
) -> None:
    data = valid()
    data["qrels"] = {"q1": {"d1": 3, "d2": -1}, "q3": {"d2": 7, "d9x": 4}}
    path = tmp_path / "graded.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DatasetError) as error:
        load_json_dataset(path)
    assert [str(p) for p in error.value.problems] == [
        f"qrels.q3.{doc}: grade {grade} is above 3: grades run from 0 (not relevant) to 3 "
        "(highly relevant); a negative grade means judged non-relevant"
        for doc, grade in (("d2", 7), ("d9x", 4))
    ]
    data["qrels"] = {"q1": {"d1": 3, "d2": -1}, "q3": {"d2": 2}}
    path.write_text(json.dumps(data))
    dataset = load_json_dataset(path)
    assert dataset.qrels["q1"] == {"d1": 3, "d2": -1}  # judged, kept as given
    assert dataset.relevant("q1") == {"d1": 3}  # and never relevant


@pytest.mark.parametrize("field", ["documents", "queries"])
def test_an_empty_dataset_is_refused_when_loaded(tmp_path: Path, field: str) -> None:
    data = valid()
    data[field] = []
    data["qrels"] = {}
    path = tmp_path / "empty.json"
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["datasets", "validate", str(path)])
    assert result.exit_code == 2
    assert f"{field}: the dataset has no {field}" in result.output


def test_the_schema_states_the_grade_range_and_non_empty_lists() -> None:
    from recallbench.schemas import load

    schema = load("dataset.v1")
    properties = schema["properties"]
    assert properties["qrels"]["additionalProperties"]["additionalProperties"] == {
        "type": "integer",
        "maximum": 3,
    }
    assert "negative grade" in properties["qrels"]["description"]
    assert properties["documents"]["minItems"] == properties["queries"]["minItems"] == 1
