"""Cranfield, CISI (SMART format) and Vaswani (TREC format) loaded from the real files.

The expected counts are those of each folder's SOURCE.md; the data must be present (the
tests fail, never skip, without it).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conftest import shared_data
from recallbench.core import Dataset, DatasetError
from recallbench.datasets._smart import load_cisi, load_cranfield, load_smart
from recallbench.datasets._trec_collection import load_trec_collection


def shared(name: str) -> Path:
    return shared_data(name)


@pytest.fixture(scope="module")
def cranfield() -> Dataset:
    return load_smart(shared("cranfield"))


@pytest.fixture(scope="module")
def cisi() -> Dataset:
    return load_smart(shared("cisi"))


@pytest.fixture(scope="module")
def vaswani() -> Dataset:
    return load_trec_collection(shared("vaswani"))


def judgments(dataset: Dataset) -> int:
    return sum(len(judged) for judged in dataset.qrels.values())


def grades(dataset: Dataset) -> Counter[int]:
    return Counter(grade for judged in dataset.qrels.values() for grade in judged.values())


def loader(dataset: Dataset) -> dict[str, Any]:
    value = dataset.metadata["loader"]
    assert isinstance(value, dict)
    return value


def changes(dataset: Dataset) -> list[dict[str, str]]:
    return list(loader(dataset)["changes"])


def rules(dataset: Dataset) -> dict[str, Any]:
    return dict(loader(dataset)["rules"])


def assert_valid(dataset: Dataset) -> None:
    """The package's own validation accepts it, and qrels name only what exists."""
    Dataset.model_validate(dataset.model_dump())
    doc_ids = {document.id for document in dataset.documents}
    query_ids = [query.id for query in dataset.queries]
    assert len(doc_ids) == len(dataset.documents) and len(set(query_ids)) == len(query_ids)
    assert set(dataset.qrels) <= set(query_ids)
    assert all(set(judged) <= doc_ids for judged in dataset.qrels.values())
    assert all(0 <= grade <= 3 for grade in grades(dataset))


# Cranfield


def test_cranfield_counts_and_grade_mapping(cranfield: Dataset) -> None:
    assert_valid(cranfield)
    # records 471 and 995 are empty: dropped, with cranqrel's "125 995 3"
    assert (len(cranfield.documents), len(cranfield.queries)) == (1398, 225)
    assert judgments(cranfield) == 1836 and len(cranfield.qrels) == 225
    # source grades 1:128 2:387 3:734 4:363 -1:225, mapped 1->3 2->2 3->1 4->1 -1->0
    assert grades(cranfield) == {3: 128, 2: 387, 1: 734 + 363 - 1, 0: 225}
    assert cranfield.relevance_threshold == 1 and cranfield.license == "none stated"
    assert rules(cranfield)["grades"] == {"1": 3, "2": 2, "3": 1, "4": 1, "-1": 0}
    assert "by position" in str(rules(cranfield)["query_ids"])
    assert loader(cranfield)["name"] == "cranfield"


def test_cranfield_queries_are_numbered_by_position(cranfield: Dataset) -> None:
    queries = {query.id: query for query in cranfield.queries}
    assert [query.id for query in cranfield.queries] == [str(n) for n in range(1, 226)]
    # cran.qry's .I numbers: 001, 002, 004, 008, ... 365
    assert queries["2"].metadata["smart_id"] == "002"
    assert queries["3"].metadata["smart_id"] == "004"
    assert queries["3"].text.startswith("what problems of heat conduction in composite slabs")
    assert queries["225"].metadata["smart_id"] == "365"
    # cranqrel "3 5 3": query 3 is the third query (.I 004, heat conduction in composite
    # slabs), and document 5 is about heat conduction into a double-layer slab
    assert cranfield.qrels["3"]["5"] == 1
    assert str(cranfield.documents_by_id["5"].title).startswith("one-dimensional transient heat")
    assert cranfield.qrels["1"]["184"] == 2 and cranfield.qrels["1"]["486"] == 0  # -1


def test_cranfield_documents(cranfield: Dataset) -> None:
    first = cranfield.documents_by_id["1"]
    assert (
        first.title == "experimental investigation of the aerodynamics of a wing in a slipstream ."
    )
    assert first.text.startswith("experimental investigation of the aerodynamics of a\nwing")
    assert "\r" not in first.text
    assert first.metadata == {"authors": ["brenckman,m."], "biblio": "j. ae. scs. 25, 1958, 324."}
    assert "471" not in cranfield.documents_by_id and "995" not in cranfield.documents_by_id
    assert changes(cranfield) == [
        {
            "subject": doc,
            "action": "dropped",
            "reason": "empty record in cran.all.1400: no title or text",
        }
        for doc in ("471", "995")
    ] + [
        {
            "subject": "125/995",
            "action": "dropped",
            "reason": f"{shared('cranfield') / 'cranqrel'}:989: no document 995",
        }
    ]


# CISI

CISI_UNJUDGED = [36, 38, 40, 47, 48, 51, 53, 59, 60, 63, 64, 68, 70, 72, 73, 74, 75, 77]
CISI_UNJUDGED += [78, 80, 83, 85, 86, 87, 88, 89, 91, 93, 94, 103, 105, 106, 107, 108, 110, 112]


def test_cisi_counts(cisi: Dataset) -> None:
    assert_valid(cisi)
    assert (len(cisi.documents), len(cisi.queries)) == (1460, 112 - 36)
    assert judgments(cisi) == 3114 and grades(cisi) == {1: 3114}
    assert len(cisi.qrels) == 76 and cisi.license == "none stated"


def test_cisi_unjudged_queries_are_dropped_and_recorded(cisi: Dataset) -> None:
    dropped = [change for change in changes(cisi) if change["action"] == "dropped"]
    assert [int(change["subject"]) for change in dropped] == CISI_UNJUDGED
    assert {change["reason"] for change in dropped} == {"no judgments in CISI.REL"}
    assert len(changes(cisi)) == 36
    assert not {str(n) for n in CISI_UNJUDGED} & {query.id for query in cisi.queries}


def test_cisi_records(cisi: Dataset) -> None:
    first = cisi.documents_by_id["1"]
    assert first.title == "18 Editions of the Dewey Decimal Classifications"
    assert first.text.startswith("The present study is a history of the DEWEY Decimal")
    assert first.metadata["authors"] == ["Comaromi, J.P."]
    assert first.metadata["cross_references"][:2] == ["1 5 1", "92 1 1"]  # type: ignore[index]
    query = next(query for query in cisi.queries if query.id == "1")
    assert query.text.startswith("What problems and concerns are there in making up descriptive")
    assert cisi.qrels["1"]["28"] == 1


def test_smart_loaders_by_name_agree() -> None:
    assert load_cranfield(shared("cranfield")).sha256 == load_smart(shared("cranfield")).sha256
    assert load_cisi(shared("cisi")).sha256 == load_smart(shared("cisi") / "CISI.ALL").sha256


# SMART errors


def write_cisi(folder: Path, documents: str, queries: str, rel: str) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "CISI.ALL").write_text(documents)
    (folder / "CISI.QRY").write_text(queries)
    (folder / "CISI.REL").write_text(rel)
    return folder


GOOD_DOCS = ".I 1\n.T\nA title\n.A\nSomeone\n.W\nSome text.\n.X\n1\t1\t1\n.I 2\n.W\nMore.\n"
GOOD_QUERIES = ".I 1\n.W\nwhat?\n.I 2\n.W\nwhy?\n"


def test_smart_small_collection(tmp_path: Path) -> None:
    dataset = load_smart(write_cisi(tmp_path, GOOD_DOCS, GOOD_QUERIES, "1 2 0 0.000000\n"))
    assert [document.id for document in dataset.documents] == ["1", "2"]
    assert [query.id for query in dataset.queries] == ["1"] and dataset.qrels == {"1": {"2": 1}}
    assert changes(dataset) == [
        {"subject": "2", "action": "dropped", "reason": "no judgments in CISI.REL"}
    ]


def test_smart_malformed_records_name_file_and_line(tmp_path: Path) -> None:
    documents = "stray\n.I 1\n.W\ntext\n.I\n.W\nx\n.I 3\n.Q\nodd\n.I 4\n.T\nno text\n.I 1\n.W\nx\n"
    folder = write_cisi(tmp_path, documents, GOOD_QUERIES, "1 1 0 0.000000\n")
    with pytest.raises(DatasetError) as caught:
        load_smart(folder)
    found = {(problem.location, problem.message) for problem in caught.value.problems}
    path = folder / "CISI.ALL"
    assert (f"{path}:1", "text before the first .I record") in found
    assert (f"{path}:5", "expected '.I <record id>'") in found
    assert any(location == f"{path}:9" and "unknown field .Q" in msg for location, msg in found)
    assert not any("has no .W" in message for _, message in found)  # a published variant
    assert any(loc == f"{path}:14" and "appears twice" in msg for loc, msg in found)


def test_smart_bad_judgments(tmp_path: Path) -> None:
    rel = "1 1 0 0.000000\n1 x 0 0.0\n2 1\n1 9 0 0.000000\n"
    folder = write_cisi(tmp_path, GOOD_DOCS, GOOD_QUERIES, rel)
    with pytest.raises(DatasetError) as caught:
        load_smart(folder)
    locations = [problem.location for problem in caught.value.problems]
    assert locations == [f"{folder / 'CISI.REL'}:2", f"{folder / 'CISI.REL'}:3"]


def test_smart_dangling_judgment_is_dropped_and_recorded(tmp_path: Path) -> None:
    folder = write_cisi(tmp_path, GOOD_DOCS, GOOD_QUERIES, "1 1 0 0.0\n1 9 0 0.0\n7 1 0 0.0\n")
    dataset = load_smart(folder)
    assert dataset.qrels == {"1": {"1": 1}}
    dropped = {change["subject"]: change["reason"] for change in changes(dataset)}
    assert dropped["1/9"].endswith("no document 9") and dropped["7/1"].endswith("no query 7")


def test_cranfield_unknown_grade_and_missing_file(tmp_path: Path) -> None:
    folder = tmp_path / "cran"
    folder.mkdir()
    (folder / "cran.all.1400").write_text(".I 1\r\n.W\r\ntext\r\n")
    (folder / "cran.qry").write_text(".I 001\r\n.W\r\nquery\r\n")
    (folder / "cranqrel").write_text("1 1 5\n")
    with pytest.raises(DatasetError) as caught:
        load_smart(folder)
    assert [str(problem) for problem in caught.value.problems] == [
        f"{folder / 'cranqrel'}:1: grade 5 is not one of 1, 2, 3, 4, -1"
    ]
    (folder / "cranqrel").write_text("1 1 4 \r\n")
    assert load_smart(folder).qrels == {"1": {"1": 1}}
    (folder / "cran.qry").unlink()
    with pytest.raises(DatasetError, match="not a SMART collection folder"):
        load_smart(folder)
    with pytest.raises(DatasetError) as caught:
        load_cranfield(folder)
    assert str(caught.value.problems[0]) == f"{folder / 'cran.qry'}: file not found"
    with pytest.raises(DatasetError, match="folder not found"):
        load_smart(tmp_path / "absent")


# Vaswani (TREC collection)


def test_vaswani_counts(vaswani: Dataset) -> None:
    assert_valid(vaswani)
    assert (len(vaswani.documents), len(vaswani.queries)) == (11429, 93)
    assert judgments(vaswani) == 2083 and grades(vaswani) == {1: 2083}
    assert len(vaswani.qrels) == 93 and changes(vaswani) == []
    files = rules(vaswani)["files"]
    assert files == {"documents": ["doc-text.trec"], "topics": "query-text.trec", "qrels": "qrels"}
    assert vaswani.name == "vaswani"


def test_vaswani_records(vaswani: Dataset) -> None:
    first = vaswani.documents_by_id["1"]
    assert first.text.startswith("compact memories have flexible capacities  a digital data")
    assert first.text.endswith("is described") and "<" not in first.text
    query = vaswani.queries[0]
    assert query.id == "1"
    assert query.text == (
        "MEASUREMENT OF DIELECTRIC CONSTANT OF LIQUIDS BY THE USE OF MICROWAVE TECHNIQUES"
    )
    assert vaswani.qrels["1"]["1239"] == 1


# TREC collection variants and errors

CLASSIC_TOPICS = """<top>
<head> Tipster Topic Description
<num> Number: 051
<dom> Domain: International Economics
<title> Topic: Airbus Subsidies

<desc> Description:
Document will discuss government assistance to Airbus Industrie.

<narr> Narrative:
To be relevant, a document must cite assistance.
</top>

<top>
<num> Number: 052
<title>
<desc> Description: South African sanctions.
</top>

<top>
<num> Number: 053
<title> Leveraged buyouts
</top>
"""

DOCUMENTS = """<DOC>
<DOCNO> AP-1 </DOCNO>
<HEAD>ignored header</HEAD>
<HEADLINE>Airbus <B>aid</B></HEADLINE>
<TEXT>
Governments help Airbus.
</TEXT>
</DOC>
<DOC><DOCNO>AP-2</DOCNO>Sanctions news.</DOC>
"""


def write_collection(folder: Path, documents: str, topics: str, qrels: str) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "docs.sgml").write_text(documents)
    (folder / "topics.51-53").write_text(topics)
    (folder / "qrels.51-53").write_text(qrels)
    (folder / "README.md").write_text("Format: <DOC><DOCNO>n</DOCNO>, <top><num>n</num>\n")
    return folder


def test_trec_topic_variants_and_grade_clamping(tmp_path: Path) -> None:
    qrels = "51 0 AP-1 4\n51 0 AP-2 -1\n052 0 AP-2 2\n53 0 AP-9 1\n99 0 AP-1 1\n"
    dataset = load_trec_collection(write_collection(tmp_path, DOCUMENTS, CLASSIC_TOPICS, qrels))
    assert_valid(dataset)
    first, second = dataset.queries
    assert (first.id, first.text) == ("51", "Airbus Subsidies")
    assert first.metadata == {
        "head": "Tipster Topic Description",
        "dom": "Domain: International Economics",
        "description": "Document will discuss government assistance to Airbus Industrie.",
        "narrative": "To be relevant, a document must cite assistance.",
    }
    assert (second.id, second.text) == ("52", "South African sanctions.")
    assert dataset.qrels == {"51": {"AP-1": 3, "AP-2": 0}, "52": {"AP-2": 2}}
    documents = dataset.documents_by_id
    assert documents["AP-1"].title == "Airbus aid" and documents["AP-1"].text == (
        "Governments help Airbus."
    )
    assert documents["AP-2"].text == "Sanctions news." and documents["AP-2"].title is None
    assert changes(dataset) == [
        {
            "subject": "52",
            "action": "altered",
            "reason": "empty <title>: <desc> used as query text",
        },
        {"subject": "51/AP-1", "action": "altered", "reason": "grade 4 outside 0..3, set to 3"},
        {"subject": "51/AP-2", "action": "altered", "reason": "grade -1 outside 0..3, set to 0"},
        {"subject": "53/AP-9", "action": "dropped", "reason": "no document AP-9 in the documents"},
        {"subject": "99/AP-1", "action": "dropped", "reason": "no topic 99 in the topics file"},
        {"subject": "53", "action": "dropped", "reason": "no judgments in qrels.51-53"},
    ]


def test_trec_malformed_documents_name_file_and_line(tmp_path: Path) -> None:
    documents = "<DOC>\n<DOCNO>1</DOCNO>\nok\n</DOC>\nstray text\n<DOC>\nno number\n</DOC>\n"
    documents += "<DOC>\n<DOCNO>1</DOCNO>\n</DOC>\n<DOC>\n<DOCNO>3</DOCNO>\n"
    folder = write_collection(tmp_path, documents, CLASSIC_TOPICS, "51 0 1 1\n")
    with pytest.raises(DatasetError) as caught:
        load_trec_collection(folder)
    path = folder / "docs.sgml"
    assert [str(problem) for problem in caught.value.problems] == [
        f"{path}:5: text outside <DOC>...</DOC>",
        f"{path}:12: <DOC> is not closed",
        f"{path}:6: expected one non-empty <DOCNO>",
        f"{path}:9: <DOCNO> 1 also at {path}:1",
    ]


def test_trec_malformed_topics_and_qrels(tmp_path: Path) -> None:
    topics = "<top>\n<title> no number\n</top>\n<top>\n<num> 7\n</top>\n"
    folder = write_collection(tmp_path, DOCUMENTS, topics, "7 0 AP-1 1\n7 0 AP-2 x\n")
    with pytest.raises(DatasetError) as caught:
        load_trec_collection(folder)
    assert [str(problem) for problem in caught.value.problems] == [
        f"{folder / 'topics.51-53'}:1: expected one topic number in <num>, got ''",
        f"{folder / 'topics.51-53'}:4: topic 7 has no <title> text",
        f"{folder / 'qrels.51-53'}:2: grade must be an integer, got 'x'",
    ]


def test_trec_files_missing_or_ambiguous(tmp_path: Path) -> None:
    folder = write_collection(tmp_path, DOCUMENTS, CLASSIC_TOPICS, "51 0 AP-1 1\n")
    (folder / "qrels.51-53").unlink()
    with pytest.raises(DatasetError) as caught:
        load_trec_collection(folder)
    assert [problem.message for problem in caught.value.problems] == [
        "no qrels file (a file of 'query iteration document grade' lines)"
    ]
    (folder / "qrels.a").write_text("51 0 AP-1 1\n")
    (folder / "qrels.b").write_text("51 0 AP-1 1\n")
    with pytest.raises(DatasetError, match=r"several files look like qrels: qrels\.a, qrels\.b"):
        load_trec_collection(folder)
    with pytest.raises(DatasetError, match="folder not found"):
        load_trec_collection(tmp_path / "absent")
