"""MADial-Bench (English and Chinese) loaded from the real files.

The expected counts are those of the folder's SOURCE.md; the data must be present (the
tests skip without it, and fail under RECALLBENCH_REQUIRE_DATA=1).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conftest import shared_data
from recallbench.core import Dataset, DatasetError
from recallbench.datasets._json_v1 import cross_reference_problems
from recallbench.datasets._madial import load_madial

# relevant ids per dialogue -> number of dialogues (SOURCE.md, both languages)
RELEVANT_PER_DIALOGUE = {1: 54, 2: 38, 3: 28, 4: 13, 5: 24, 6: 2, 7: 1}


def madial_folder() -> Path:
    return shared_data("madial_bench")


@pytest.fixture(scope="module")
def english() -> Dataset:
    return load_madial(madial_folder())


@pytest.fixture(scope="module")
def chinese() -> Dataset:
    return load_madial(madial_folder(), "zh")


def loader(dataset: Dataset) -> dict[str, Any]:
    value = dataset.metadata["loader"]
    assert isinstance(value, dict)
    return value


def assert_valid(dataset: Dataset) -> None:
    """The package's own validation accepts it (model and cross-references, units
    included), qrels name only what exists, and every query is judged within its unit."""
    assert Dataset.model_validate(dataset.model_dump()) == dataset
    assert list(cross_reference_problems(dataset.model_dump(mode="json"))) == []
    doc_ids = {document.id for document in dataset.documents}
    query_ids = {query.id for query in dataset.queries}
    assert len(doc_ids) == len(dataset.documents) and len(query_ids) == len(dataset.queries)
    assert set(dataset.qrels) == query_ids
    assert all(set(judged) <= doc_ids for judged in dataset.qrels.values())
    assert all(set(members) <= doc_ids for members in dataset.units.values())
    for query in dataset.queries:
        assert query.unit in dataset.units
        assert set(dataset.qrels[query.id]) <= set(dataset.units[query.unit])


def assert_units_are_users(dataset: Dataset, user_of: dict[str, int]) -> None:
    """One unit per user, holding exactly that user's memories; every query is asked in
    its user's unit."""
    assert dataset.units == {
        f"user-{user}": tuple(doc for doc in user_of if user_of[doc] == user)
        for user in sorted(set(user_of.values()))
    }
    assert tuple(user_of) == tuple(document.id for document in dataset.documents)
    for query in dataset.queries:
        assert query.unit == f"user-{query.metadata['user-id']}"


def per_dialogue(dataset: Dataset) -> dict[int, int]:
    return dict(Counter(len(judged) for judged in dataset.qrels.values()))


def test_english_counts(english: Dataset) -> None:
    assert_valid(english)
    assert (len(english.documents), len(english.queries)) == (160, 160)
    assert per_dialogue(english) == RELEVANT_PER_DIALOGUE
    assert sum(len(judged) for judged in english.qrels.values()) == 405
    assert {grade for judged in english.qrels.values() for grade in judged.values()} == {1}
    assert loader(english)["changes"] == []  # 0 dangling relevant ids
    assert english.license == "MIT" and english.name == "madial-bench-en"
    users = Counter(query.metadata["user-id"] for query in english.queries)
    assert users == {1: 76, 2: 84}


def test_english_units_are_users(english: Dataset) -> None:
    # en memories carry no user-id: the user is the one its event names, which is also
    # upstream's rule "the first 76 memory lines are Bart's, the rest Lisa's"
    names = {"Bart": 1, "Lisa": 2}
    user_of = {}
    for document in english.documents:
        (name,) = [name for name in names if name in document.text]
        user_of[document.id] = names[name]
    assert_units_are_users(english, user_of)
    assert {unit: len(members) for unit, members in english.units.items()} == {
        "user-1": 76,
        "user-2": 84,
    }
    assert english.units["user-1"] == tuple(document.id for document in english.documents[:76])
    assert Counter(query.unit for query in english.queries) == {"user-1": 76, "user-2": 84}
    # each dialogue's user-id matches the user who speaks in it
    for query in english.queries:
        speaker = "Bart" if query.metadata["user-id"] == 1 else "Lisa"
        assert f"<{speaker}>:" in query.text
        assert f"<{'Lisa' if speaker == 'Bart' else 'Bart'}>:" not in query.text
    rules = loader(english)["rules"]
    assert "one per user" in rules["units"] and "first 76" in rules["users"]


def test_chinese_counts(chinese: Dataset) -> None:
    assert_valid(chinese)
    assert (len(chinese.documents), len(chinese.queries)) == (171, 160)
    assert per_dialogue(chinese) == RELEVANT_PER_DIALOGUE
    assert loader(chinese)["changes"] == []  # no relevant id names another user's memory
    user_of = {}
    for document in chinese.documents:
        user = document.metadata["user-id"]
        assert isinstance(user, int)
        user_of[document.id] = user
    assert_units_are_users(chinese, user_of)
    assert {unit: len(members) for unit, members in chinese.units.items()} == {
        "user-1": 83,
        "user-2": 88,
    }
    assert Counter(query.unit for query in chinese.queries) == {"user-1": 76, "user-2": 84}
    assert chinese.documents_by_id["1"].metadata == {
        "time": "2023-12-25",
        "scene": "活动类",
        "emotion": "开心",
        "user-id": 1,
        "created_at": "2023-12-25",
    }


def test_relevant_ids_and_memories(english: Dataset) -> None:
    # line 1 of the dialogue file: "relevant-id": [1, 78, 105, 113, 108]
    assert english.qrels["en-0"] == {"1": 1, "78": 1, "105": 1, "113": 1, "108": 1}
    memory = english.documents_by_id["1"]
    assert memory.text == "Bart danced at the Christmas party and felt very happy."
    assert memory.metadata == {
        "time": "2023-12-25",
        "scene": "Activity",
        "emotion": "Happy",
        "created_at": "2023-12-25",
    }


def test_query_is_the_context_before_the_first_test_turn(english: Dataset) -> None:
    query = english.queries[0]
    assert query.id == "en-0" and query.metadata == {"test-turns": [8], "user-id": 1}
    turns = query.text.split("\n")
    # turns 1..7: the <BOD> marker (turn 0) is removed and the test turn 8 not included
    assert len(turns) == 7
    assert turns[0].startswith('<Bart>: "Hey, did you know?')
    assert turns[-1] == (
        '<Bart>: "I\'m really looking forward to that evening; I want to make it very special!"'
    )
    assert "Do you remember dancing" not in query.text


def test_markers_are_removed_everywhere(english: Dataset, chinese: Dataset) -> None:
    # seven zh dialogues open with " <BOD>" (a leading blank)
    for dataset in (english, chinese):
        for query in dataset.queries:
            assert "<BOD>" not in query.text and "<EOD>" not in query.text
            assert query.text == query.text.strip() and "\n\n" not in query.text
    assert [query.id for query in chinese.queries][:3] == ["zh-0", "zh-1", "zh-2"]
    rules = loader(chinese)["rules"]
    assert "dialogue[:test-turn[0]]" in rules["query_text"]


def test_upstream_layout_is_found(tmp_path: Path) -> None:
    source = madial_folder()
    (tmp_path / "ch").mkdir()
    for name in ("MADial-Bench-zh-memory.json", "MADial-Bench-zh-dialogue.json"):
        (tmp_path / "ch" / name).write_bytes((source / name).read_bytes())
    assert len(load_madial(tmp_path, "zh").queries) == 160


# errors and recorded changes on small files

MEMORIES = [
    {"1": {"time": "2024-01-01", "scene": "A", "emotion": "Happy", "event": "Bart swam."}},
    {"2": {"time": "2024-01-02", "scene": "A", "emotion": "Sad", "event": "Lisa fell."}},
]


def dialogue(relevant: list[int], test_turn: int = 2) -> dict[str, Any]:
    turns = ["<BOD>\n", '<Bart>: "Hi"\n', '<Assistant>: "Remember?"\n', "<EOD>\n"]
    return {"dialogue": turns, "test-turn": [test_turn], "relevant-id": relevant, "user-id": 1}


def write(folder: Path, memories: list[Any], dialogues: list[Any]) -> Path:
    def lines(records: list[Any]) -> str:
        return "".join(
            (record if isinstance(record, str) else json.dumps(record)) + "\n" for record in records
        )

    (folder / "MADial-Bench-en-memory.json").write_text(lines(memories))
    (folder / "MADial-Bench-en-dialogue.json").write_text(lines(dialogues))
    return folder


def test_dangling_relevant_ids_are_dropped_and_recorded(tmp_path: Path) -> None:
    dataset = load_madial(write(tmp_path, MEMORIES, [dialogue([1, 9]), dialogue([9])]))
    assert [query.id for query in dataset.queries] == ["en-0"]
    assert dataset.queries[0].text == '<Bart>: "Hi"'
    assert dataset.qrels == {"en-0": {"1": 1}}
    assert dataset.units == {"user-1": ("1",), "user-2": ("2",)}
    assert loader(dataset)["changes"] == [
        {"subject": "en-0/9", "action": "dropped", "reason": "relevant-id 9 names no memory"},
        {"subject": "en-1/9", "action": "dropped", "reason": "relevant-id 9 names no memory"},
        {"subject": "en-1", "action": "dropped", "reason": "no relevant memory left"},
    ]


def test_relevant_memories_of_another_user_are_dropped(tmp_path: Path) -> None:
    # memory 1 is Bart's (user 1), memory 2 Lisa's (user 2); both dialogues are Bart's
    dataset = load_madial(write(tmp_path, MEMORIES, [dialogue([1, 2]), dialogue([2])]))
    assert_valid(dataset)
    assert [(query.id, query.unit) for query in dataset.queries] == [("en-0", "user-1")]
    assert dataset.qrels == {"en-0": {"1": 1}}
    reason = "relevant memory belongs to another user: memory 2 is user-2's, the dialogue user-1's"
    assert loader(dataset)["changes"] == [
        {"subject": "en-0/2", "action": "dropped", "reason": reason},
        {"subject": "en-1/2", "action": "dropped", "reason": reason},
        {"subject": "en-1", "action": "dropped", "reason": "no relevant memory left"},
    ]


def test_users_without_user_id(tmp_path: Path) -> None:
    # a memory's user-id wins over the name in its event; a dialogue without user-id
    # belongs to the one user who speaks in it
    memories = [*MEMORIES, {"3": {"event": "Bart met Lisa.", "user-id": 2}}]
    lisa = dialogue([2, 3])
    del lisa["user-id"]
    lisa["dialogue"][1] = '<Lisa>:"Hi"\n'
    dataset = load_madial(write(tmp_path, memories, [lisa]))
    assert_valid(dataset)
    assert dataset.units == {"user-1": ("1",), "user-2": ("2", "3")}
    assert dataset.queries[0].unit == "user-2" and dataset.queries[0].metadata["user-id"] == 2
    assert dataset.qrels == {"en-0": {"2": 1, "3": 1}}


def test_unknown_users_are_errors(tmp_path: Path) -> None:
    memories = [*MEMORIES, {"3": {"event": "Bart met Lisa."}}, {"4": {"event": "It rained."}}]
    nobody = dialogue([1])
    del nobody["user-id"]
    nobody["dialogue"][1] = '<Maggie>: "Hi"\n'
    folder = write(tmp_path, memories, [nobody, {**dialogue([1]), "user-id": [1]}])
    with pytest.raises(DatasetError) as caught:
        load_madial(folder)
    memory_file = folder / "MADial-Bench-en-memory.json"
    dialogue_file = folder / "MADial-Bench-en-dialogue.json"
    no_user = 'no "user-id" and its event names neither or both of Bart and Lisa'
    assert [str(problem) for problem in caught.value.problems] == [
        f"{memory_file}:3: memory 3: {no_user}",
        f"{memory_file}:4: memory 4: {no_user}",
        f'{dialogue_file}:1: no "user-id" and no single speaker Bart or Lisa',
        f'{dialogue_file}:2: "user-id" must be an integer or a string',
    ]


def test_malformed_lines_name_file_and_line(tmp_path: Path) -> None:
    memories = [*MEMORIES, "{not json", {"3": {"time": "x"}}, {"1": {"event": "again"}}]
    dialogues = [dialogue([1]), dialogue([1], test_turn=9), {"dialogue": "text"}, "[1, 2]"]
    folder = write(tmp_path, memories, dialogues)
    with pytest.raises(DatasetError) as caught:
        load_madial(folder)
    memory_file = folder / "MADial-Bench-en-memory.json"
    dialogue_file = folder / "MADial-Bench-en-dialogue.json"
    assert [str(problem) for problem in caught.value.problems] == [
        f"{memory_file}:3: invalid JSON: Expecting property name enclosed in double quotes",
        f'{memory_file}:4: memory 3: expected a non-empty "event"',
        f"{memory_file}:5: memory 1 also at line 1",
        f'{dialogue_file}:2: "test-turn" 9 is outside the dialogue\'s 4 turns',
        f'{dialogue_file}:3: "dialogue" must be a list of strings',
        f"{dialogue_file}:4: expected a JSON object",
    ]


def test_missing_files_and_unknown_language(tmp_path: Path) -> None:
    with pytest.raises(DatasetError) as caught:
        load_madial(tmp_path)
    assert [str(problem) for problem in caught.value.problems] == [
        f"{tmp_path / 'MADial-Bench-en-memory.json'}: file not found",
        f"{tmp_path / 'MADial-Bench-en-dialogue.json'}: file not found",
    ]
    with pytest.raises(DatasetError, match="unknown language 'fr'"):
        load_madial(madial_folder(), "fr")
