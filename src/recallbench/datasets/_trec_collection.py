"""A TREC-style test collection in one folder: documents, topics and qrels.

The files are found by content, not by name, because collections name them freely
(``doc-text.trec``, ``topics.301-350``, ``qrels.trec8.adhoc``):

- documents: every file holding ``<DOC>`` (a collection may split them over several files);
- topics: the one file holding ``<top>``;
- qrels: the one file whose first lines have four whitespace-separated fields, the first
  line ending in an integer (``query iteration document grade``); the qrels reader then
  reports any bad line.

Rules:

- a document is a ``<DOC>...</DOC>`` block: its id is ``<DOCNO>``; its title ``<TITLE>`` or
  ``<HEADLINE>`` when present; its text the ``<TEXT>`` blocks when present, otherwise the
  rest of the block, with SGML tags removed;
- a topic is a ``<top>...</top>`` block. Classic TREC topics do not close their fields, so a
  field runs from its tag to the next tag. ``<num>`` is the query id (``Number:`` removed;
  a numeric id loses its leading zeros, in the qrels too, as TREC-1..3 topics write
  ``051`` where their qrels write ``51``);
  ``<title>`` is the query text (``Topic:`` removed); ``<desc>``, ``<narr>`` and any other
  field go into metadata (``Description:``/``Narrative:`` removed). A topic with an empty
  title is asked by its description, and the change recorded;
- grades 0..3 are kept; a negative grade becomes 0 and a grade above 3 becomes 3 (the
  range recallbench's measures assume), each altered judgment recorded;
- judgments naming an unknown query or document are dropped, and so are queries without
  judgments (as BEIR's loader: an unjudged query can only score zero), each recorded.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from pathlib import Path

from pydantic import JsonValue

from recallbench.core import Dataset, DatasetError, Document, Problem, Query
from recallbench.datasets._json_v1 import checked_dataset
from recallbench.datasets._provenance import Provenance
from recallbench.datasets._trec import read_trec_qrels

SNIFF_BYTES = 1 << 16
"""How much of each file is read to tell documents, topics and qrels apart."""

MAX_GRADE = 3

_DOC_TAG = re.compile(r"<(/?)DOC>", re.IGNORECASE)
_TOP_TAG = re.compile(r"<(/?)top>", re.IGNORECASE)
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_FIELD = re.compile(r"<([A-Za-z]+)>([^<]*)")
_PREFIXES = {
    "num": re.compile(r"^number\s*:\s*", re.IGNORECASE),
    "title": re.compile(r"^topic\s*:\s*", re.IGNORECASE),
    "desc": re.compile(r"^description\s*:\s*", re.IGNORECASE),
    "narr": re.compile(r"^narrative\s*:\s*", re.IGNORECASE),
}
_FIELD_NAMES = {"desc": "description", "narr": "narrative"}


def _element(body: str, *tags: str) -> list[str]:
    """The contents of every ``<tag>...</tag>`` element of the given names, in order."""
    names = "|".join(tags)
    pattern = rf"<({names})>(.*?)</\1>"
    return [match.group(2) for match in re.finditer(pattern, body, re.IGNORECASE | re.DOTALL)]


def _plain(text: str) -> str:
    """Text without SGML tags, each line stripped, outer blank lines removed."""
    lines = (line.strip() for line in _TAG.sub(" ", text).strip().splitlines())
    return "\n".join(lines)


def _one_line(text: str) -> str:
    return " ".join(_TAG.sub(" ", text).split())


class _Text:
    """A file's text with ``file:line`` locations for character offsets."""

    def __init__(self, path: Path, problems: list[Problem]) -> None:
        self.path, self.text = path, ""
        try:
            self.text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            line = path.read_bytes()[: exc.start].count(b"\n") + 1
            problems.append(Problem(f"{path}:{line}", f"not UTF-8 text: {exc.reason}"))
        except OSError as exc:
            problems.append(Problem(str(path), f"cannot read: {exc.strerror}"))
        self._newlines = [match.start() for match in re.finditer("\n", self.text)]

    def at(self, offset: int) -> str:
        return f"{self.path}:{bisect_right(self._newlines, offset - 1) + 1}"

    def _stray_text(self, start: int, end: int, name: str, problems: list[Problem]) -> None:
        between = self.text[start:end]
        if between.strip():
            offset = start + len(between) - len(between.lstrip())
            problems.append(Problem(self.at(offset), f"text outside <{name}>...</{name}>"))

    def blocks(
        self, tag: re.Pattern[str], name: str, problems: list[Problem]
    ) -> list[tuple[int, str]]:
        """(offset, body) of every ``<name>...</name>`` block; stray or unclosed tags and
        text between blocks are problems."""
        found: list[tuple[int, str]] = []
        opened: re.Match[str] | None = None
        previous_end = 0
        for match in tag.finditer(self.text):
            if match.group(1):  # a closing tag
                if opened is None:
                    problems.append(Problem(self.at(match.start()), f"</{name}> without <{name}>"))
                else:
                    found.append((opened.start(), self.text[opened.end() : match.start()]))
                opened, previous_end = None, match.end()
                continue
            if opened is not None:
                problems.append(Problem(self.at(opened.start()), f"<{name}> is not closed"))
            else:
                self._stray_text(previous_end, match.start(), name, problems)
            opened = match
        if opened is not None:
            problems.append(Problem(self.at(opened.start()), f"<{name}> is not closed"))
        else:
            self._stray_text(previous_end, len(self.text), name, problems)
        return found


def query_key(topic: str) -> str:
    """A numeric topic number without leading zeros: TREC-1..3 topics write ``051`` where
    their qrels write ``51``."""
    return str(int(topic)) if topic.isdigit() else topic


def read_trec_documents(
    path: Path, problems: list[Problem], seen: dict[str, str] | None = None
) -> list[Document]:
    """Every ``<DOC>`` of a TREC documents file (see the module docstring for the rules).

    ``seen`` maps the ids already read (from other files of the collection) to where."""
    source = _Text(path, problems)
    seen = {} if seen is None else seen
    documents: list[Document] = []
    for offset, body in source.blocks(_DOC_TAG, "DOC", problems):
        numbers = _element(body, "DOCNO")
        doc_id = numbers[0].strip() if numbers else ""
        if len(numbers) != 1 or not doc_id:
            problems.append(Problem(source.at(offset), "expected one non-empty <DOCNO>"))
            continue
        if doc_id in seen:
            problems.append(Problem(source.at(offset), f"<DOCNO> {doc_id} also at {seen[doc_id]}"))
            continue
        seen[doc_id] = source.at(offset)
        titles = [_one_line(title) for title in _element(body, "TITLE", "HEADLINE")]
        texts = _element(body, "TEXT")
        if not texts:
            rest = re.sub(r"<(DOCNO|DOCID|TITLE|HEADLINE)>.*?</\1>", " ", body, flags=re.I | re.S)
            texts = [rest]
        documents.append(
            Document.model_construct(
                id=doc_id,
                text="\n".join(_plain(text) for text in texts).strip(),
                title=" ".join(title for title in titles if title) or None,
                metadata={},
            )
        )
    return documents


def read_trec_topics(path: Path, provenance: Provenance, problems: list[Problem]) -> list[Query]:
    """Every ``<top>`` of a TREC topics file (see the module docstring for the rules)."""
    source = _Text(path, problems)
    seen: dict[str, str] = {}
    queries: list[Query] = []
    for offset, body in source.blocks(_TOP_TAG, "top", problems):
        fields: dict[str, str] = {}
        for match in _FIELD.finditer(body):
            tag = match.group(1).lower()
            prefix = _PREFIXES.get(tag)
            value = _one_line(match.group(2))
            fields[tag] = prefix.sub("", value) if prefix else value
        number = fields.pop("num", "")
        if not number or len(number.split()) != 1:
            problems.append(
                Problem(source.at(offset), f"expected one topic number in <num>, got {number!r}")
            )
            continue
        query_id = query_key(number)
        if query_id in seen:
            problems.append(Problem(source.at(offset), f"topic {number} also at {seen[query_id]}"))
            continue
        seen[query_id] = source.at(offset)
        text = fields.pop("title", "")
        metadata: dict[str, JsonValue] = {
            _FIELD_NAMES.get(tag, tag): value for tag, value in fields.items() if value
        }
        if not text and metadata.get("description"):
            text = str(metadata["description"])
            provenance.change(query_id, "altered", "empty <title>: <desc> used as query text")
        if not text:
            problems.append(Problem(source.at(offset), f"topic {query_id} has no <title> text"))
            continue
        queries.append(Query(id=query_id, text=text, metadata=metadata))
    return queries


def _kind(path: Path) -> str | None:
    """``documents``, ``topics``, ``qrels`` or None, from the start of the file.

    Documents and topics files start with their first block; a README that merely shows
    the format does not."""
    try:
        with path.open("rb") as handle:
            data = handle.read(SNIFF_BYTES)
    except OSError:
        return None
    head = data.decode("utf-8", errors="replace")
    start = head.lstrip().lower()
    if start.startswith("<doc>"):
        return "documents"
    if start.startswith("<top>"):
        return "topics"
    lines = head.splitlines()
    if len(data) == SNIFF_BYTES:
        lines = lines[:-1]  # may be cut short
    rows = [line.split() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if rows and _is_int(rows[0][-1]) and all(len(fields) == 4 for fields in rows[:20]):
        return "qrels"
    return None


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def find_collection_files(path: Path) -> tuple[list[Path], Path, Path]:
    """(documents files, topics file, qrels file) of a collection folder, by content."""
    if not path.is_dir():
        raise DatasetError(str(path), [Problem(str(path), "folder not found")])
    found: dict[str, list[Path]] = {"documents": [], "topics": [], "qrels": []}
    for entry in sorted(path.iterdir()):
        if entry.is_file() and not entry.name.startswith("."):
            kind = _kind(entry)
            if kind is not None:
                found[kind].append(entry)
    problems: list[Problem] = []
    expected = {
        "documents": "a file containing <DOC>",
        "topics": "a file containing <top>",
        "qrels": "a file of 'query iteration document grade' lines",
    }
    for kind, files in found.items():
        if not files:
            problems.append(Problem(str(path), f"no {kind} file ({expected[kind]})"))
        elif len(files) > 1 and kind != "documents":
            names = ", ".join(file.name for file in files)
            problems.append(Problem(str(path), f"several files look like {kind}: {names}"))
    if problems:
        raise DatasetError(str(path), problems)
    return found["documents"], found["topics"][0], found["qrels"][0]


def _judgments(
    qrels_file: Path,
    known: tuple[set[str], set[str]],
    provenance: Provenance,
    problems: list[Problem],
) -> dict[str, dict[str, int]]:
    """The qrels, with grades brought into 0..3 and unknown ids dropped (all recorded)."""
    try:
        raw = read_trec_qrels(qrels_file)
    except DatasetError as error:
        problems.extend(error.problems or [Problem(error.source, "unreadable")])
        return {}
    query_ids, doc_ids = known
    qrels: dict[str, dict[str, int]] = {}
    for number, judged in raw.items():
        query_id = query_key(number)
        for doc_id, grade in judged.items():
            subject = f"{query_id}/{doc_id}"
            if query_id not in query_ids:
                provenance.change(subject, "dropped", f"no topic {query_id} in the topics file")
                continue
            if doc_id not in doc_ids:
                provenance.change(subject, "dropped", f"no document {doc_id} in the documents")
                continue
            kept = min(max(grade, 0), MAX_GRADE)
            if kept != grade:
                provenance.change(subject, "altered", f"grade {grade} outside 0..3, set to {kept}")
            qrels.setdefault(query_id, {})[doc_id] = kept
    return qrels


def load_trec_collection(path: Path) -> Dataset:
    """Read a TREC collection folder (see the module docstring for the rules)."""
    doc_files, topics_file, qrels_file = find_collection_files(path)
    provenance = Provenance(
        loader="trec-collection",
        version="1",
        source=path,
        rules={
            "files": {
                "documents": [file.name for file in doc_files],
                "topics": topics_file.name,
                "qrels": qrels_file.name,
            },
            "documents": "<DOC> blocks: id = <DOCNO>, title = <TITLE>/<HEADLINE>, "
            "text = <TEXT> blocks or else the rest of the block, tags removed",
            "query_text": "the topic's <title> ('Topic:' removed); <desc> when the title is "
            "empty; <desc>, <narr> and other fields in metadata",
            "query_ids": "the topic's <num> ('Number:' removed); numeric ids without leading "
            "zeros, in topics and qrels alike (TREC-1..3 topics write 051, qrels 51)",
            "grades": "0..3 kept; negative -> 0; above 3 -> 3 (each altered one recorded)",
            "unjudged_queries": "dropped, as BEIR keeps only judged queries",
            "relevance_threshold": 1,
        },
    )
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    documents = [doc for file in doc_files for doc in read_trec_documents(file, problems, seen)]
    every_query = read_trec_topics(topics_file, provenance, problems)
    known = ({query.id for query in every_query}, {document.id for document in documents})
    qrels = _judgments(qrels_file, known, provenance, problems)
    queries = []
    for query in every_query:
        if query.id in qrels:
            queries.append(query)
        else:
            provenance.change(query.id, "dropped", f"no judgments in {qrels_file.name}")
    dataset = Dataset.model_construct(
        name=path.resolve().name,
        version="1",
        description=f"TREC collection: {len(documents)} documents, {len(queries)} topics",
        relevance_threshold=1,
        metadata={"loader": provenance.metadata()},
        documents=tuple(documents),
        queries=tuple(queries),
        qrels=qrels,
    )
    return checked_dataset(dataset, str(path), problems)
