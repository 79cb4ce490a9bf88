"""People's labels into a dataset (judges/_manual_labels.py, `recallbench labels export`):
each with its provenance, the authors' grades kept, a judge's replaced, several annotators
merged; the file written whole or not at all; and labels made through the dashboard's
queue reaching `recallbench judge calibrate` as people's labels, against a real local
endpoint (tests/judge_endpoint.py)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from judge_endpoint import MODEL, dataset_grades, lookup_grader, serve
from recallbench.cli import main
from recallbench.core import Dataset, Document, LabelSource, Query
from recallbench.datasets import load_dataset
from recallbench.judges._calibrate_pairs import human_pairs
from recallbench.judges._manual_labels import lower_median, with_manual_labels
from recallbench.serve._pool import Pool, PooledRun
from recallbench.serve._queue import Queue
from recallbench.store import Judgment, open_store

LLM = LabelSource(source="llm", by="some-judge", prompt="relevance v1", confidence=0.8)


def _dataset() -> Dataset:
    docs = [f"m{i}" for i in range(8)]
    return Dataset(
        name="labels",
        relevance_threshold=2,
        documents=tuple(
            Document(id=d, text=f"memory {d} about topic {i}") for i, d in enumerate(docs)
        ),
        queries=tuple(
            Query(id=q, text=f"what about topic {i}?", category="c")
            for i, q in enumerate(["q1", "q2", "q3"])
        ),
        qrels={"q1": {"m0": 3, "m1": 0}, "q2": {"m2": 2, "m3": 1}},
        label_sources={"q2": {"m3": LLM}},
    )


def _manual(query: str, doc: str, grade: int, annotator: str | None = "alice") -> Judgment:
    return Judgment(query, doc, grade, "manual", datetime.now(UTC), annotator=annotator)


def test_labels_enter_with_their_provenance_and_the_authors_grades_stay() -> None:
    dataset = _dataset()
    before = dataset.model_dump()
    labels = [
        _manual("q1", "m0", 1),  # the authors said 3: kept
        _manual("q1", "m1", 0),  # the authors said 0 too: kept, not differing
        _manual("q2", "m3", 3, "bob"),  # the judge's 1: replaced
        _manual("q3", "m4", 2),  # unjudged: added
        _manual("q3", "m5", 1, None),  # no name recorded
        _manual("q9", "m4", 2),  # no such query
        _manual("q3", "ghost", 2),  # no such memory
        Judgment("q3", "m6", 3, "llm", datetime.now(UTC)),  # not a person's: ignored
    ]
    result = with_manual_labels(dataset, labels)
    assert dataset.model_dump() == before  # the dataset given is not changed
    out = result.dataset
    assert out.qrels["q1"] == {"m0": 3, "m1": 0}
    assert out.qrels["q2"] == {"m2": 2, "m3": 3}
    assert out.qrels["q3"] == {"m4": 2, "m5": 1}
    assert out.label_sources["q2"]["m3"] == LabelSource(source="manual", by="bob")
    assert out.label_sources["q3"]["m4"] == LabelSource(source="manual", by="alice")
    assert out.label_sources["q3"]["m5"] == LabelSource(source="manual", by=None)
    assert "q1" not in out.label_sources  # the authors' own labels have no source entry
    assert (result.added, result.replaced, result.updated) == (2, 1, 0)
    assert (result.kept_authors, result.differing_authors, result.unknown) == (2, 1, 2)
    assert result.annotators == ("alice", "bob") and result.written == 3

    again = with_manual_labels(out, [_manual("q3", "m4", 0, "carol")])
    assert (again.added, again.updated) == (0, 1)
    assert again.dataset.qrels["q3"]["m4"] == 0
    assert again.dataset.label_sources["q3"]["m4"].by == "carol"


def test_several_annotators_give_the_lower_median_and_are_all_named() -> None:
    assert [lower_median(g) for g in ([3], [1, 3], [0, 2, 3], [3, 3, 0, 1])] == [3, 1, 2, 1]
    labels = [_manual("q3", "m4", 3, "carol"), _manual("q3", "m4", 1, "alice")]
    result = with_manual_labels(_dataset(), labels)
    assert result.dataset.qrels["q3"]["m4"] == 1  # split between 1 and 3: the lower
    assert result.dataset.label_sources["q3"]["m4"].by == "alice, carol"


def test_calibration_counts_the_exported_labels_as_peoples() -> None:
    dataset = _dataset()
    assert {(p.query_id, p.doc_id) for p in human_pairs(dataset).pairs} == {
        ("q1", "m0"),
        ("q1", "m1"),
        ("q2", "m2"),
    }  # the judge's ("q2", "m3") is not a person's
    labelled = with_manual_labels(dataset, [_manual("q2", "m3", 0), _manual("q3", "m7", 2)])
    pairs = human_pairs(labelled.dataset)
    assert {(p.query_id, p.doc_id, p.grade) for p in pairs.pairs} >= {
        ("q2", "m3", 0),
        ("q3", "m7", 2),
    }
    assert pairs.excluded_llm == 0 and len(pairs.pairs) == 5


# -- the command ----------------------------------------------------------------------


def _export(*args: str) -> Result:
    return CliRunner().invoke(main, ["labels", "export", *args])


@pytest.fixture
def labelled_store(tmp_path: Path) -> tuple[str, Path]:
    """(store URL, dataset file) with alice's and bob's labels of the dataset's pairs."""
    path = tmp_path / "dataset.json"
    path.write_text(_dataset().model_dump_json(), encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        store.log(
            judgments=[
                _manual("q3", "m4", 2),
                _manual("q2", "m3", 0, "bob"),
                _manual("q1", "m0", 0),
            ]
        )
    return url, path


def test_export_writes_the_labels_with_provenance(
    tmp_path: Path, labelled_store: tuple[str, Path]
) -> None:
    url, path = labelled_store
    out = tmp_path / "out.json"
    result = _export("--dataset", str(path), "--store", url, "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "2 manual labels (1 new, 1 replacing a judge's or a harvest's, 0 updated)" in (
        result.output
    )
    assert "by alice, bob; 1 pairs kept the dataset authors' grade (1 graded" in result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["qrels"]["q3"] == {"m4": 2}
    assert data["label_sources"]["q3"]["m4"]["source"] == "manual"
    assert data["label_sources"]["q3"]["m4"]["by"] == "alice"
    assert data["label_sources"]["q2"]["m3"] == {
        "source": "manual",
        "by": "bob",
        "prompt": None,
        "confidence": None,
    }
    assert load_dataset(str(out)).qrels["q2"]["m3"] == 0  # it loads back

    only_bob = tmp_path / "bob.json"
    result = _export(
        "--dataset", str(path), "--store", url, "--annotator", "bob", "--out", str(only_bob)
    )
    assert result.exit_code == 0, result.output
    assert "q3" not in json.loads(only_bob.read_text(encoding="utf-8"))["qrels"]


def test_export_without_labels_writes_nothing(
    tmp_path: Path, labelled_store: tuple[str, Path]
) -> None:
    url, path = labelled_store
    out = tmp_path / "out.json"
    result = _export(
        "--dataset", str(path), "--store", url, "--annotator", "zoe", "--out", str(out)
    )
    assert result.exit_code == 2
    assert "no manual labels by zoe in sqlite:///" in result.output
    assert f"nothing written to {out}" in result.output
    assert not out.exists()
    empty = f"sqlite:///{tmp_path / 'empty.db'}"
    result = _export("--dataset", str(path), "--store", empty, "--out", str(out))
    assert result.exit_code == 2 and "no manual labels in" in result.output


def test_a_failed_write_leaves_the_old_file_whole(
    tmp_path: Path, labelled_store: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, path = labelled_store
    out = tmp_path / "out.json"
    out.write_text("the previous export\n", encoding="utf-8")

    def refused(source: Any, target: Any) -> None:
        raise OSError(28, "No space left on device", str(target))

    monkeypatch.setattr(os, "replace", refused)  # the last step of an atomic write
    result = _export("--dataset", str(path), "--store", url, "--out", str(out))
    assert result.exit_code == 2, result.output
    assert "No space left on device" in result.output
    assert out.read_text(encoding="utf-8") == "the previous export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dataset.json", "out.json", "store.db"]


def test_a_bad_dataset_or_store_is_exit_2(tmp_path: Path, labelled_store: tuple[str, Path]) -> None:
    url, _ = labelled_store
    out = tmp_path / "out.json"
    result = _export("--dataset", str(tmp_path / "missing.json"), "--store", url, "--out", str(out))
    assert result.exit_code == 2 and "missing.json" in result.output
    result = _export("--store", url, "--out", str(out))
    assert result.exit_code == 2 and "--dataset" in result.output
    assert not out.exists()


# -- from the dashboard's queue to the judge's calibration ------------------------------


def test_labels_made_in_the_queue_reach_the_calibration(tmp_path: Path) -> None:
    """Pool two runs, label pooled pairs through the queue (what the dashboard's keys
    call), export, calibrate: the calibration judges exactly people's pairs, the new ones
    included, the judge's own label not."""
    dataset = _dataset()
    path = tmp_path / "dataset.json"
    path.write_text(dataset.model_dump_json(), encoding="utf-8")
    runs = [
        PooledRun(1, "a", {"q1": ("m0", "m5"), "q3": ("m4", "m6")}),
        PooledRun(2, "b", {"q2": ("m3", "m7"), "q3": ("m6",)}),
    ]
    pool = Pool(dataset, runs, depth=2)
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        queue = Queue(store, None, sources=[pool])
        made = {}
        for grade in (3, 0, 2, 1):
            pair, _, _ = queue.pending("alice")
            assert pair is not None and pair.origin.startswith("pool of run")
            queue.grade("alice", pair.query_id, pair.doc_id, grade)
            made[pair.key] = grade
    assert len(made) == 4 and made.keys() <= {entry.key for entry in pool.entries}
    out = tmp_path / "labelled.json"
    result = _export("--dataset", str(path), "--store", url, "--out", str(out))
    assert result.exit_code == 0, result.output
    labelled = load_dataset(str(out))
    people = {(p.query_id, p.doc_id): p.grade for p in human_pairs(labelled).pairs}
    assert made.items() <= people.items()
    assert ("q2", "m3") not in people  # still the judge's: never calibrated against

    with serve(lookup_grader(dataset_grades(labelled), every=0)) as endpoint:
        config = tmp_path / "recallbench.toml"
        config.write_text(
            f'[judge]\nbase_url = "{endpoint.base_url}"\nmodel = "{MODEL}"\nretries = 0\n',
            encoding="utf-8",
        )
        calibrate = ["judge", "calibrate", "--dataset", str(out), "--config", str(config)]
        cache = ["--judge-cache", str(tmp_path / "cache.jsonl")]
        result = CliRunner().invoke(main, [*calibrate, *cache, "--out", str(tmp_path / "cal")])
        assert result.exit_code == 0, result.output
        assert endpoint.calls == len(people) == 3 + len(made)
    calibration = json.loads((tmp_path / "cal" / "calibration.json").read_text(encoding="utf-8"))
    assert calibration["coverage"]["judged"] == len(people)
    matrix = calibration["confusion"]
    for grade in made.values():  # the judge answers people's grades: all on the diagonal
        assert matrix[grade][grade] >= 1
    assert sum(map(sum, matrix)) == len(people)


def test_a_team_exports_its_resolved_labels_or_each_annotator_their_own(tmp_path: Path) -> None:
    """Labels kept per annotator: by default a pair enters with the grade its annotators
    agreed on, a conflict is left out and counted; --annotator takes that person's own."""
    path = tmp_path / "dataset.json"
    path.write_text(_dataset().model_dump_json(), encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        store.write_label("q3", "m4", "alice", 2, None)
        store.write_label("q3", "m4", "bob", 2, None)
        store.write_label("q3", "m5", "alice", 3, None)
        store.write_label("q3", "m5", "bob", 0, None)
    out = tmp_path / "team.json"
    result = _export("--dataset", str(path), "--store", url, "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "1 manual labels (1 new" in result.output
    assert "1 pairs whose annotators disagree left out" in result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["qrels"]["q3"] == {"m4": 2}
    assert data["label_sources"]["q3"]["m4"]["by"] == "alice+bob"

    mine = tmp_path / "alice.json"
    result = _export(
        "--dataset", str(path), "--store", url, "--annotator", "alice", "--out", str(mine)
    )
    assert result.exit_code == 0, result.output
    data = json.loads(mine.read_text(encoding="utf-8"))
    assert data["qrels"]["q3"] == {"m4": 2, "m5": 3}
    assert {s["by"] for s in data["label_sources"]["q3"].values()} == {"alice"}
