"""Published variants of the LoCoMo, LongMemEval and SMART formats: each is loaded right or
refused with its location, and every loaded dataset passes the JSON format's validation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recallbench.core import Dataset, DatasetError
from recallbench.datasets import load_json_dataset
from recallbench.datasets._locomo import load_locomo
from recallbench.datasets._longmemeval import load_longmemeval
from recallbench.datasets._provenance import loader_changes
from recallbench.datasets._smart import load_smart
from recallbench.measures import Rules, parse_measures
from recallbench.measures._dataset_eval import evaluate_dataset


def problems(error: pytest.ExceptionInfo[DatasetError]) -> list[str]:
    return [str(problem) for problem in error.value.problems]


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data))
    return path


def turn(dia_id: str, said: str, key: str = "text") -> dict[str, str]:
    return {"speaker": "Ann", "dia_id": dia_id, key: said}


def conversation(sample_id: str = "c1", **sessions: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "sample_id": sample_id,
        "conversation": {"speaker_a": "Ann", "speaker_b": "Bo", **sessions},
        "qa": [],
    }


# LoCoMo


def test_locomo_clean_text_turns_in_a_one_conversation_file(tmp_path: Path) -> None:
    """Item 15: turns with clean_text and no text were loaded as "Ann: "."""
    sample = conversation(
        session_1=[turn("D1:1", "I adopted a cat", "clean_text"), turn("D1:2", "Her name is Mo")]
    )
    sample["qa"] = [{"question": "Pet?", "answer": "a cat", "evidence": ["D1:1"], "category": 4}]
    dataset = load_locomo(write(tmp_path / "conv-1.json", sample))
    texts = {document.id: document.text for document in dataset.documents}
    assert texts == {"c1:D1:1": "Ann: I adopted a cat", "c1:D1:2": "Ann: Her name is Mo"}
    assert dataset.qrels == {"c1:q0": {"c1:D1:1": 1}}


def test_locomo_turn_without_text_is_a_located_error(tmp_path: Path) -> None:
    sample = conversation(session_1=[turn("D1:1", "hi"), {"speaker": "Bo", "dia_id": "D1:2"}])
    with pytest.raises(DatasetError) as caught:
        load_locomo(write(tmp_path / "locomo.json", [conversation("c0"), sample]))
    assert problems(caught) == [
        '[1].conversation.session_1[1]: turn has no text (expected "text" or "clean_text")'
    ]


def test_locomo_folder_of_one_conversation_files(tmp_path: Path) -> None:
    first = conversation("a", session_1=[turn("D1:1", "one")])
    first["qa"] = [{"question": "One?", "answer": "one", "evidence": ["D1:1"], "category": 1}]
    write(tmp_path / "a.json", first)  # a question: a dataset without one is refused
    write(tmp_path / "b.json", [conversation("b", session_1=[turn("D1:1", "two")])])
    dataset = load_locomo(tmp_path)
    assert set(dataset.units) == {"a", "b"}
    write(tmp_path / "c.json", conversation("a", session_1=[turn("D1:1", "three")]))
    with pytest.raises(DatasetError) as caught:
        load_locomo(tmp_path)
    assert problems(caught) == ["c.json: sample_id: duplicate sample_id 'a' (first at a.json)"]


def _ranged_at(folder: Path, evidence: Any) -> Dataset:
    turns1 = [turn(f"D1:{n}", f"line {n}") for n in range(1, 6)]
    turns2 = [turn(f"D2:{n}", f"more {n}") for n in range(1, 3)]
    sample = conversation(session_1=turns1, session_2=turns2)
    sample["qa"] = [{"question": "q?", "answer": "a", "evidence": evidence, "category": 1}]
    folder.mkdir(exist_ok=True)
    return load_locomo(write(folder / "locomo.json", [sample]))


@pytest.mark.parametrize(
    ("evidence", "relevant"),
    [
        (["D1:2-D1:4"], ["D1:2", "D1:3", "D1:4"]),
        (["D1:4-5"], ["D1:4", "D1:5"]),
        (["D1:5-D2:1", "D1:1"], ["D1:5", "D2:1", "D1:1"]),  # ranges follow the conversation
        ("D1:3", ["D1:3"]),  # item 16: a string, not a list
        ("D1:1; D1:3-D1:4", ["D1:1", "D1:3", "D1:4"]),
    ],
)
def test_locomo_evidence_ranges_and_strings(
    tmp_path: Path, evidence: Any, relevant: list[str]
) -> None:
    """Item 16: ranges kept only their endpoints; a string was read as no evidence."""
    dataset = _ranged_at(tmp_path / "data", evidence)
    assert list(dataset.qrels["c1:q0"]) == [f"c1:{dia_id}" for dia_id in relevant]


def test_locomo_backwards_range_or_one_naming_no_turn_is_dropped_and_recorded(
    tmp_path: Path,
) -> None:
    dataset = _ranged_at(tmp_path / "data", ["D1:4-D1:2", "D3:1-D3:4"])
    assert dataset.qrels["c1:q0"] == {}
    reasons = [change.reason for change in loader_changes(dataset.metadata)]
    assert "evidence range names no turns: 'D1:4-D1:2'" in reasons
    assert "evidence range names no turns: 'D3:1-D3:4'" in reasons


def test_locomo_range_running_past_the_conversation_keeps_the_turns_it_names(
    tmp_path: Path,
) -> None:
    """Issue 28 item 1: ``D1:2-D1:4`` where session 1 ends at D1:3 dropped the whole range
    ("names no turns") and the question left every mean."""
    sample = conversation(session_1=[turn(f"D1:{n}", f"line {n}") for n in range(1, 4)])
    sample["qa"] = [{"question": "q?", "answer": "a", "evidence": ["D1:2-D1:4"], "category": 1}]
    dataset = load_locomo(write(tmp_path / "locomo.json", [sample]))
    assert list(dataset.qrels["c1:q0"]) == ["c1:D1:2", "c1:D1:3"]
    reasons = [change.reason for change in loader_changes(dataset.metadata)]
    assert "evidence 'D1:2-D1:4': range end D1:4 not in the conversation; kept D1:2-D1:3" in reasons
    assert not any("names no turns" in reason for reason in reasons)


@pytest.mark.parametrize(
    ("evidence", "relevant"),
    [
        ("D1:1-D1:9", ["D1:1", "D1:2", "D1:3", "D1:4", "D1:5"]),
        ("D1:0-D1:2", ["D1:1", "D1:2"]),  # a start that is not a turn
        ("D1:4-D2:9", ["D1:4", "D1:5", "D2:1", "D2:2"]),  # across sessions
        ("D2:2-D2:7", ["D2:2"]),
    ],
)
def test_locomo_range_with_a_missing_end_keeps_what_exists(
    tmp_path: Path, evidence: str, relevant: list[str]
) -> None:
    dataset = _ranged_at(tmp_path / "data", [evidence])
    assert list(dataset.qrels["c1:q0"]) == [f"c1:{dia_id}" for dia_id in relevant]


def test_locomo_datasets_are_named_from_their_files(tmp_path: Path) -> None:
    """Issue 28 item 2: every LoCoMo-format file was named ``locomo10``."""
    sample = conversation(session_1=[turn("D1:1", "one")])
    sample["qa"] = [{"question": "q?", "answer": "a", "evidence": ["D1:1"], "category": 1}]
    assert load_locomo(write(tmp_path / "conv-26.json", [sample])).name == "conv-26"
    folder = tmp_path / "talks"
    folder.mkdir()
    write(folder / "a.json", [sample])
    assert load_locomo(folder).name == "talks"
    assert load_locomo(folder, granularity="session").name == "talks-sessions"
    write(folder / "locomo10.json", [sample])
    assert load_locomo(folder).name == "locomo10"


def test_locomo_evidence_of_another_type_is_located(tmp_path: Path) -> None:
    with pytest.raises(DatasetError) as caught:
        _ranged_at(tmp_path / "data", {"D1": 1})
    assert problems(caught) == [
        "[0].qa[0].evidence: evidence must be a list of dia_ids or a string"
    ]


def test_locomo_duplicate_ids_are_located(tmp_path: Path) -> None:
    """Item 18: duplicates were accepted, their judgments silently merged."""
    first = conversation(session_1=[turn("D1:1", "a"), turn("D1:2", "b")])
    again = conversation(
        "c2", session_1=[turn("D1:1", "a")], session_3=[turn("D3:4", "c"), turn("D1:1", "d")]
    )
    with pytest.raises(DatasetError) as caught:
        load_locomo(write(tmp_path / "locomo.json", [first, again, conversation("c1")]))
    assert problems(caught) == [
        "[1].conversation.session_3[1].dia_id: duplicate dia_id 'D1:1' "
        "(first at [1].conversation.session_1[0])",
        "[2].sample_id: duplicate sample_id 'c1' (first at [0])",
    ]


def _memory_file(tmp_path: Path) -> Path:
    sample = conversation(session_1=[turn("D1:1", "I live in Oslo"), turn("D1:2", "I ski")])
    sample["qa"] = [
        {"question": "Where?", "answer": "Oslo", "evidence": ["D1:1"], "category": 4},
        {"question": "Why?", "answer": "unknown", "evidence": [], "category": 3},
        {
            "question": "Where does Bo live?",
            "adversarial_answer": "Oslo",
            "evidence": ["D1:1"],
            "category": 5,
        },
    ]
    return write(tmp_path / "locomo.json", [sample])


def test_false_surface_counts_only_questions_marked_unanswerable(tmp_path: Path) -> None:
    """Item 19: the answerable question without evidence (LoCoMo has 4) counted as an
    abstention; only adversarial questions may."""
    dataset = load_locomo(_memory_file(tmp_path))
    assert [query.answerable for query in dataset.queries] == [True, True, False]
    rankings = {query.id: ["c1:D1:2"] for query in dataset.queries}
    measures = parse_measures(["false_surface", "hit@1"])
    evaluation = evaluate_dataset(dataset, rankings, measures, Rules())
    assert evaluation.population("false_surface").tolist() == [False, False, True]
    assert evaluation.mean("false_surface") == 1.0
    # the question without evidence is in no mean: "no relevant judgments"
    assert evaluation.population("hit@1").tolist() == [True, False, True]
    assert evaluation.no_relevant.tolist() == [False, True, False]


def test_false_surface_reads_the_old_abstention_tag(tmp_path: Path) -> None:
    data = {
        "name": "tiny",
        "documents": [{"id": "d1", "text": "apple"}],
        "queries": [
            {"id": "q1", "text": "durian", "tags": ["abstention"]},
            {"id": "q2", "text": "kiwi"},
            {"id": "q3", "text": "plum", "answerable": False},
        ],
        "qrels": {},
    }
    dataset = load_json_dataset(write(tmp_path / "tiny.json", data))
    evaluation = evaluate_dataset(
        dataset, {"q1": [], "q2": ["d1"], "q3": ["d1"]}, parse_measures(["false_surface"]), Rules()
    )
    assert evaluation.population("false_surface").tolist() == [True, False, True]
    assert evaluation.mean("false_surface") == 0.5


# LongMemEval


def _question(question_id: str = "q1", **change: Any) -> dict[str, Any]:
    item = {
        "question_id": question_id,
        "question_type": "single-session-user",
        "question": "Where do I live?",
        "answer": "Oslo",
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ["s1", "s2"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 02:21"],
        "haystack_sessions": [
            [{"role": "user", "content": "I live in Oslo", "has_answer": True}],
            [{"role": "user", "content": "I ski"}, {"role": "assistant", "content": "Nice"}],
        ],
        "answer_session_ids": ["s1"],
    }
    item.update(change)
    return item


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"haystack_sessions": [[{"role": "user", "content": "x"}, "I ski"], []]},
            '[0].haystack_sessions[0][1]: expected a turn {"role", "content"}, got a str',
        ),
        (
            {"haystack_sessions": [None, []]},
            "[0].haystack_sessions[0]: expected a list of turns, got null",
        ),
        (
            {"haystack_dates": ["2023/05/20 (Sat) 02:21"]},
            "[0].haystack_dates: expected a list of 2 (one per session), got 1",
        ),
        (
            {"haystack_session_ids": ["s1", "s2", "s3"]},
            "[0].haystack_session_ids: expected a list of 2 (one per session), got 3",
        ),
    ],
)
def test_longmemeval_malformed_haystacks_are_located(
    tmp_path: Path, change: dict[str, Any], expected: str
) -> None:
    """Item 17: these gave tracebacks, or (short dates) silently dropped sessions."""
    path = write(tmp_path / "lme.json", [_question(**change)])
    with pytest.raises(DatasetError) as caught:
        load_longmemeval(path)
    assert problems(caught) == [expected]


def test_longmemeval_duplicates_and_diverging_sessions_are_located(tmp_path: Path) -> None:
    """Item 18: a repeated question_id replaced the first one's judgments."""
    other = _question("q2")
    other["haystack_sessions"] = [
        [{"role": "user", "content": "I live in Rome"}],
        _question()["haystack_sessions"][1],
    ]
    path = write(tmp_path / "lme.json", [_question(), _question(), other])
    with pytest.raises(DatasetError) as caught:
        load_longmemeval(path)
    assert problems(caught) == [
        "[1].question_id: duplicate question_id 'q1' (first at [0])",
        "[2].haystack_sessions[0]: session 's1' differs from its copy at [0].haystack_sessions[0]",
    ]


def test_longmemeval_empty_turn_fails_the_common_validation_at_its_source(
    tmp_path: Path,
) -> None:
    """The loader does not check texts itself: the JSON format's validation does, and the
    problem is located in the source file."""
    item = _question(haystack_sessions=[[{"role": "user", "content": "  "}], []])
    path = write(tmp_path / "lme.json", [item])
    with pytest.raises(DatasetError) as caught:
        load_longmemeval(path, granularity="turn")
    assert problems(caught) == ["[0].haystack_sessions[0][0]: text is empty (as documents[0].text)"]


def test_longmemeval_abstention_is_marked(tmp_path: Path) -> None:
    dataset = load_longmemeval(write(tmp_path / "lme.json", [_question(), _question("q2_abs")]))
    assert [(q.id, q.answerable, q.unanswerable) for q in dataset.queries] == [
        ("q1", True, False),
        ("q2_abs", False, True),
    ]
    assert dataset.qrels == {"q1": {"s1": 1}, "q2_abs": {}}


# SMART


def _collection(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def test_smart_med_layout(tmp_path: Path) -> None:
    """MED: documents and queries with .W only, judgments as TREC qrels ``q 0 d grade``."""
    folder = _collection(
        tmp_path / "med",
        {
            "MED.ALL": ".I 1\n.W\nkidney stones\n.I 2\n.W\nheart rate\n",
            "MED.QRY": ".I 1\n.W\nstones in the kidney\n.I 2\n.W\nunjudged\n",
            "MED.REL": "1 0 1 1\n1 0 2 0\n",
        },
    )
    dataset = load_smart(folder)
    assert dataset.name == "med" and dataset.qrels == {"1": {"1": 1, "2": 0}}
    assert [query.id for query in dataset.queries] == ["1"]


def test_smart_cacm_layout(tmp_path: Path) -> None:
    """CACM: .N fields, records without .W, a trailing empty record, zero-padded qrels."""
    documents = (
        ".I 1\n.T\nPreliminary Report\n.B\nCACM December, 1958\n.A\nPerlis, A. J.\n"
        ".N\nCA581203 JB March 22, 1978\n.X\n100\t5\t1\n"
        ".I 2\n.T\nExtraction of Roots\n.W\nA method of computing roots.\n.N\nCA58 JB\n"
        ".I 3\n"
    )
    folder = _collection(
        tmp_path / "cacm",
        {
            "cacm.all": documents,
            "query.text": ".I 1\n.W\n roots of numbers\n.N\n 1. Someone\n",
            "qrels.text": "01 0002 0 0\n01 3 0 0\n",
        },
    )
    dataset = load_smart(folder)
    first = dataset.documents_by_id["1"]
    assert (first.text, first.title) == ("Preliminary Report", "Preliminary Report")
    assert first.metadata["notes"] == "CA581203 JB March 22, 1978"
    assert dataset.documents_by_id["2"].text == "A method of computing roots."
    assert "3" not in dataset.documents_by_id  # trailing empty record
    assert dataset.qrels == {"1": {"2": 1}}
    assert dataset.queries[0].metadata["notes"] == "1. Someone"
    reasons = {change.subject: change.reason for change in loader_changes(dataset.metadata)}
    assert reasons["3"] == "empty record in cacm.all: no title or text"
    assert reasons["1/3"].endswith("no document 3")


def test_smart_unknown_field_is_located(tmp_path: Path) -> None:
    folder = _collection(
        tmp_path / "adi",
        {
            "ADI.ALL": ".I 1\n.T\ntitle\n.W\ntext\n.Z\nodd\n",
            "ADI.QRY": ".I 1\n.W\nq\n",
            "ADI.REL": "1 1 0 0.000000\n",
        },
    )
    with pytest.raises(DatasetError) as caught:
        load_smart(folder)
    assert len(problems(caught)) == 1
    assert problems(caught)[0].startswith(f"{folder / 'ADI.ALL'}:6: unknown field .Z")


def test_smart_refuses_other_grammars_and_ambiguous_folders(tmp_path: Path) -> None:
    npl = _collection(
        tmp_path / "npl", {"doc-text": "1\n text\n   /\n", "query-text": "1\n q\n  /\n"}
    )
    with pytest.raises(DatasetError) as caught:
        load_smart(npl)
    assert "not a SMART collection folder: documents (*.ALL): none" in problems(caught)[0]
    twice = _collection(
        tmp_path / "twice",
        {"A.ALL": ".I 1\n.W\nx\n", "B.ALL": ".I 1\n.W\ny\n", "A.QRY": "", "A.REL": ""},
    )
    with pytest.raises(DatasetError, match=r"several: A\.ALL, B\.ALL"):
        load_smart(twice)
