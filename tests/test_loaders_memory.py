"""LoCoMo and LongMemEval loaders on the real files (../shared/data), and datasets with
units (one fresh store per haystack)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import shared_data
from recallbench.cli import main
from recallbench.core import Dataset, DatasetError
from recallbench.datasets import load_dataset, load_json_dataset
from recallbench.datasets._locomo import load_locomo
from recallbench.datasets._longmemeval import load_longmemeval
from recallbench.datasets._provenance import loader_changes


@pytest.fixture(scope="module")
def locomo() -> Dataset:
    return load_locomo(shared_data("locomo", "locomo10.json"))


def test_locomo_turns_categories_and_units(locomo: Dataset) -> None:
    assert (len(locomo.documents), len(locomo.queries), len(locomo.units)) == (5882, 1986, 10)
    # SOURCE.md: per category 1:282, 2:321, 3:96, 4:841, 5:446, with upstream's names
    assert Counter(q.metadata["category_id"] for q in locomo.queries) == {
        1: 282,
        2: 321,
        3: 96,
        4: 841,
        5: 446,
    }
    names = {q.metadata["category_id"]: q.category for q in locomo.queries}
    assert names == {
        1: "multi-hop",
        2: "temporal",
        3: "open-domain",
        4: "single-hop",
        5: "adversarial",
    }
    assert locomo.metadata["categories"] == {
        "1": "multi-hop",
        "2": "temporal",
        "3": "open-domain",
        "4": "single-hop",
        "5": "adversarial",
    }
    adversarial = [q for q in locomo.queries if "adversarial" in q.tags]
    assert len(adversarial) == 446 and all(q.metadata["category_id"] == 5 for q in adversarial)
    first = locomo.queries[0]
    assert (first.id, first.unit, locomo.qrels[first.id]) == (
        "conv-26:q0",
        "conv-26",
        {"conv-26:D1:3": 1},
    )
    assert locomo.documents_by_id["conv-26:D1:3"].metadata["created_at"] == "2023-05-08T13:56:00"
    Dataset.model_validate(locomo.model_dump())  # units, qrels and queries cross-check


def test_locomo_evidence_repairs_and_drops_are_listed(locomo: Dataset) -> None:
    changes = {(c.subject, c.action): c.reason for c in loader_changes(locomo.metadata)}
    assert "D30:5" in changes["conv-50:q69", "altered"]
    assert set(locomo.qrels["conv-50:q69"]) == {"conv-50:D30:5"}
    assert set(locomo.qrels["conv-26:q37"]) >= {"conv-26:D8:6", "conv-26:D9:17"}
    assert "D10:19" in changes["conv-42:q58", "dropped"]
    assert "conv-42:D10:19" not in locomo.qrels["conv-42:q58"]
    # the 9 defective evidence strings of SOURCE.md: 6 repaired, 3 dropped
    actions = Counter(c.action for c in loader_changes(locomo.metadata))
    assert (actions["altered"], actions["dropped"]) == (6, 3)
    # 4 category-3 questions have no evidence: kept, with no relevant memory, flagged
    empty = [q for q in locomo.queries if not locomo.qrels[q.id]]
    assert len(empty) == 4 and all(q.metadata["category_id"] == 3 for q in empty)


def test_locomo_sessions(locomo: Dataset) -> None:
    sessions = load_locomo(shared_data("locomo"), granularity="session")
    assert len(sessions.documents) == 272  # SOURCE.md: 272 sessions
    assert sessions.qrels["conv-26:q0"] == {"conv-26:S1": 1}
    assert len(sessions.queries) == len(locomo.queries)


def test_longmemeval_oracle_sessions_and_turns() -> None:
    path = shared_data("longmemeval", "longmemeval_oracle.json")
    sessions = load_longmemeval(path)
    assert (len(sessions.queries), len(sessions.units)) == (500, 500)
    assert Counter(q.category for q in sessions.queries) == {
        "single-session-user": 70,
        "single-session-assistant": 56,
        "single-session-preference": 30,
        "temporal-reasoning": 133,
        "multi-session": 133,
        "knowledge-update": 78,
    }
    abstention = [q for q in sessions.queries if q.id.endswith("_abs")]
    assert len(abstention) == 30
    assert all(q.tags == ("abstention",) and not sessions.qrels[q.id] for q in abstention)
    # answer_session_ids per question (SOURCE.md: 1:176, 2:250, 3:41, 4:19, 5:11, 6:3),
    # less the abstention questions'
    answerable = [q for q in sessions.queries if q not in abstention]
    assert sum(len(sessions.qrels[q.id]) for q in answerable) == 890
    every_turn = load_longmemeval(path, granularity="turn", turns="all")
    assert len(every_turn.documents) == 10866  # 10,960 turns less the sessions shared
    assert every_turn.name == "longmemeval-oracle-all-turns"
    # upstream's protocol (run_retrieval.py): user turns only; 832 has_answer user turns, and
    # the 51 answerable questions answered only in assistant turns have no relevant memory
    turns = load_longmemeval(path, granularity="turn")
    assert turns.name == "longmemeval-oracle-user-turns"
    assert len(turns.documents) == 5432
    assert all(doc.metadata["role"] == "user" for doc in turns.documents)
    assert sum(len(judged) for judged in turns.qrels.values()) == 832
    assert sum(1 for judged in turns.qrels.values() if not judged) == 51 + 30
    assert turns.metadata["loader"]["rules"]["turns"].startswith("user turns only")  # type: ignore[index,call-overload]
    first = turns.queries[0]
    assert all(
        doc.startswith(tuple(turns.units[first.unit or ""])) for doc in turns.qrels[first.id]
    )
    Dataset.model_validate(turns.model_dump())


def test_longmemeval_s_sample() -> None:
    sample = load_longmemeval(shared_data("longmemeval", "longmemeval_s_sample28.json"))
    assert len(sample.queries) == 28
    assert sum(1 for q in sample.queries if "abstention" in q.tags) == 4
    assert len(sample.documents) == 1333  # 1,354 haystack sessions, some in several haystacks
    sizes = [len(docs) for docs in sample.units.values()]
    assert min(sizes) >= 38 and max(sizes) <= 58  # SOURCE.md: S haystacks have 38..58 sessions


def test_loaded_datasets_hash_the_same_from_any_path(tmp_path: Path) -> None:
    copy = tmp_path / "locomo10.json"
    copy.write_bytes(shared_data("locomo", "locomo10.json").read_bytes())
    assert load_locomo(copy).sha256 == load_dataset(f"locomo:{shared_data('locomo')}").sha256


def test_convert_writes_a_dataset_that_loads_back(tmp_path: Path) -> None:
    destination = tmp_path / "lme.json"
    source = shared_data("longmemeval", "longmemeval_s_sample28.json")
    result = CliRunner().invoke(
        main, ["datasets", "convert", "--from", "longmemeval-turns", str(source), str(destination)]
    )
    assert result.exit_code == 0, result.output
    assert "28 queries" in result.output and "28 units" in result.output
    back = load_json_dataset(destination)
    assert back.sha256 == load_longmemeval(source, granularity="turn").sha256
    assert back.ref.loader == "longmemeval/3"


def test_bad_source_files_are_located(tmp_path: Path) -> None:
    broken = tmp_path / "locomo10.json"
    broken.write_text('[{"sample_id": "c", "conversation": {}, "qa": [\n{"question": 3}]}]')
    with pytest.raises(DatasetError) as error:
        load_locomo(broken)
    assert "\n  [0].qa[0]: expected a question" in str(error.value)
    broken.write_text("[1,")
    result = CliRunner().invoke(main, ["datasets", "validate", f"longmemeval:{broken}"])
    assert result.exit_code == 2 and f"{broken}:1" in result.output


def _units_dataset(tmp_path: Path, **change: object) -> Path:
    data = {
        "format": "recallbench.dataset/v1",
        "name": "units",
        "documents": [
            {"id": "a", "text": "apple pie recipe"},
            {"id": "b", "text": "banana bread recipe"},
            {"id": "c", "text": "cherry tart recipe"},
        ],
        "queries": [
            {"id": "q1", "text": "apple", "unit": "u1"},
            {"id": "q2", "text": "cherry", "unit": "u2"},
        ],
        "qrels": {"q1": {"a": 1}, "q2": {"c": 1}},
        "units": {"u1": ["a", "b"], "u2": ["b", "c"]},
    }
    data.update(change)
    path = tmp_path / "units.json"
    path.write_text(json.dumps(data))
    return path


def test_unit_problems_are_located(tmp_path: Path) -> None:
    path = _units_dataset(
        tmp_path,
        queries=[{"id": "q1", "text": "apple", "unit": "u9"}, {"id": "q2", "text": "cherry"}],
        qrels={"q1": {"a": 1}, "q2": {"c": 1}},
        units={"u1": ["a", "zz"], "u2": ["b"]},
    )
    with pytest.raises(DatasetError) as error:
        load_json_dataset(path)
    text = str(error.value)
    assert 'units.u1[1]: unknown document "zz"' in text
    assert 'queries[0].unit: unknown unit "u9"' in text
    assert "queries[1]: the dataset has units" in text
    path = _units_dataset(tmp_path, qrels={"q1": {"c": 1}, "q2": {"c": 1}})
    with pytest.raises(
        DatasetError, match=r"qrels\.q1\.c: document \"c\" is not in the query's unit"
    ):
        load_json_dataset(path)


def test_each_unit_gets_a_fresh_store(tmp_path: Path) -> None:
    """The Python adapter's retriever is made anew by each setup: q2 must not see unit u1's
    documents, so 'apple' is never returned for it."""
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--dataset",
            str(_units_dataset(tmp_path)),
            "--system",
            "python:example_retrievers:Overlap",
            "-m",
            "hit@1",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    run = json.loads((out / "run.json").read_text())
    returned = {r["query_id"]: [h["doc_id"] for h in r["hits"]] for r in run["results"]}
    assert returned == {"q1": ["a"], "q2": ["c"]}
    report = json.loads((out / "report.json").read_text())
    assert report["means"]["hit@1"] == 1.0
    assert any("cutoff" in w for w in report["warnings"]) is False  # hit@1 < 2 documents


def test_a_cutoff_reaching_the_haystack_is_warned(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--dataset",
            str(_units_dataset(tmp_path)),
            "--system",
            "builtin-lexical",
            "-m",
            "recall@5",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    assert report["warnings"] == [
        "cutoff 5 reaches every document of 2 of 2 units (haystacks): @5 measures there say "
        "little (use a smaller cutoff)"
    ]
    assert "**warning:** cutoff 5" in (out / "report.md").read_text()
