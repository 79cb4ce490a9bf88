"""TREC qrels and runs, BEIR folders: read, write, locate errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import shared_data
from recallbench.core import DatasetError, Hit, QueryResult, Run, RunFileError, RunSpec
from recallbench.datasets import (
    format_trec_run,
    load_beir,
    load_dataset,
    read_trec_qrels,
    read_trec_run,
    write_trec_qrels,
    write_trec_run,
)


def test_comment_lines_are_skipped_and_hash_inside_a_docno_is_kept(trec_tests: Path) -> None:
    plain = read_trec_qrels(trec_tests / "qrels.test")
    commented = read_trec_qrels(trec_tests / "qrels.test.with-comments")
    lines = (trec_tests / "qrels.test").read_text().splitlines()
    assert sum(len(judged) for judged in plain.values()) == len(lines) == 3681
    # the commented copy renames one document CR93E-1860 -> CR#93E-1860; nothing else differs
    assert commented["301"].pop("CR#93E-1860") == plain["301"].pop("CR93E-1860") == 0
    assert commented == plain


def test_document_ids_may_contain_hash(trec_tests: Path) -> None:
    qrels = read_trec_qrels(trec_tests / "qrels.comment.test")
    assert qrels["2024-127266"]["msmarco_v2.1_doc_00_880019750#4_1633802806"] == 1
    run = read_trec_run(trec_tests / "results.comment.test")
    assert any("#" in hit.doc_id for result in run.results for hit in result.hits)


def test_run_order_is_score_descending_then_docid_descending(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_text(
        "q1 Q0 a 1 1.0 t\nq1 Q0 c 2 2.0 t\nq1 Q0 b 3 1.0 t\nq1 Q0 d 4 1.0 t extra junk\n"
    )
    run = read_trec_run(path)
    assert [hit.doc_id for hit in run.results[0].hits] == ["c", "d", "b", "a"]
    assert run.spec.system == "t"
    assert run.spec.ordering == "score-desc-docid-desc"


def test_trec_files_round_trip(tmp_path: Path, trec_tests: Path) -> None:
    qrels = read_trec_qrels(trec_tests / "qrels.test")
    write_trec_qrels(qrels, tmp_path / "qrels")
    assert read_trec_qrels(tmp_path / "qrels") == qrels
    run = read_trec_run(trec_tests / "results.test")
    write_trec_run(run, tmp_path / "run")
    again = read_trec_run(tmp_path / "run")
    assert [[h.doc_id for h in r.hits] for r in again.results] == [
        [h.doc_id for h in r.hits] for r in run.results
    ]


def test_written_run_keeps_system_order_without_scores() -> None:
    """Unscored or tied hits get synthetic descending scores so trec_eval keeps the order."""
    hits = (Hit(doc_id="a", score=1.0), Hit(doc_id="z", score=1.0), Hit(doc_id="m"))
    run = Run(spec=RunSpec(system="mcp"), results=(QueryResult(query_id="q", hits=hits),))
    assert format_trec_run(run).splitlines() == [
        "q Q0 a 1 3.0 mcp",
        "q Q0 z 2 2.0 mcp",
        "q Q0 m 3 1.0 mcp",
    ]


def test_malformed_lines_are_located(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 high\n# comment\nq2 0 d3\n")
    with pytest.raises(DatasetError) as caught:
        read_trec_qrels(qrels)
    assert [str(p) for p in caught.value.problems] == [
        f"{qrels}:2: grade must be an integer, got 'high'",
        f"{qrels}:4: expected 4 fields (query iter document grade), got 3",
    ]
    run = tmp_path / "run"
    run.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 x t\n")
    with pytest.raises(RunFileError, match=r"run:2: score must be a number, got 'x'"):
        read_trec_run(run)


def test_beir_scifact_loads_the_test_split() -> None:
    folder = shared_data("beir_scifact")
    dataset = load_beir(folder)
    assert len(dataset.queries) == 300  # queries judged in qrels/test.tsv
    assert sum(len(j) for j in dataset.qrels.values()) == 339
    assert len(dataset.documents) == sum(
        1 for line in (folder / "corpus.jsonl").open() if line.strip()
    )
    assert load_dataset(f"beir:{folder}").sha256 == dataset.sha256
    assert load_dataset(str(folder)).sha256 == dataset.sha256  # detected from the layout


def test_beir_errors_are_located(tmp_path: Path) -> None:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\nnot json\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "x"}\n')
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\n")
    with pytest.raises(DatasetError) as caught:
        load_beir(tmp_path)
    messages = [str(p) for p in caught.value.problems]
    # a source that does not parse is refused before cross-references are checked: the
    # documents of a broken line would show up as false "unknown document" problems
    assert messages == [f"{tmp_path / 'corpus.jsonl'}:2: invalid JSON: Expecting value"]
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n')
    with pytest.raises(DatasetError) as caught:
        load_beir(tmp_path)
    messages = [str(p) for p in caught.value.problems]
    assert messages == ['qrels.q1.d2: unknown document "d2"']


def test_beir_judging_a_pair_twice_is_located(tmp_path: Path) -> None:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "x"}\n')
    tsv = tmp_path / "qrels" / "test.tsv"
    tsv.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t2\n")
    with pytest.raises(DatasetError) as caught:
        load_beir(tmp_path)
    messages = [str(p) for p in caught.value.problems]
    assert messages == [f"{tsv}:3: document 'd1' judged twice for query 'q1' (first at {tsv}:2)"]


@pytest.mark.parametrize(
    ("corpus", "queries", "line", "message"),
    [
        ('{"_id": "d1", "text": null}\n', '{"_id": "q1", "text": "x"}\n', "corpus", "null"),
        ('{"_id": "d1", "text": "x"}\n', '{"_id": "q1", "text": null}\n', "queries", "null"),
        ('{"_id": "d1", "text": 7}\n', '{"_id": "q1", "text": "x"}\n', "corpus", "7"),
    ],
)
def test_beir_text_that_is_not_a_string_is_located(
    tmp_path: Path, corpus: str, queries: str, line: str, message: str
) -> None:
    """Issue 28 item 3: ``"text": null`` became the text "None" and passed validation."""
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(corpus)
    (tmp_path / "queries.jsonl").write_text(queries)
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    with pytest.raises(DatasetError) as caught:
        load_beir(tmp_path)
    messages = [str(p) for p in caught.value.problems]
    assert messages[0] == f'{tmp_path / f"{line}.jsonl"}:1: "text" must be a string, got {message}'
