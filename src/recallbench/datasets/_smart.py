"""SMART-format test collections from the Glasgow IR group: Cranfield 1400 and CISI.

A SMART file is a sequence of records. ``.I id`` starts a record; a line holding only a
field marker (``.T`` title, ``.A`` author, ``.B`` biblio, ``.W`` text, ``.X`` cross
references, ``.K`` keywords, ``.C`` classification) starts a field, whose content is every
line up to the next marker. A field may repeat (CISI gives one ``.A`` per author).

Rules, the same for both collections:

- a document's text is its ``.W`` field, its title the ``.T`` field (whitespace collapsed);
  authors, biblio, keywords, classification and cross references go into metadata;
- a query's text is its ``.W`` field; any other field goes into its metadata;
- a judgment naming a document or query that does not exist is dropped and recorded.

Cranfield (``cran.all.1400``, ``cran.qry``, ``cranqrel``):

- ``cran.qry`` numbers its queries 001..365 with gaps but ``cranqrel`` numbers them 1..225:
  the n-th query in ``cran.qry`` is query ``n`` (its ``.I`` number is kept as metadata);
- grades run backwards (Cleverdon: 1 = complete answer ... 4 = minimum interest) and ``-1``
  marks a reference of no interest: 1->3, 2->2, 3->1, 4->1, -1->0 (judged non-relevant),
  with relevance threshold 1, so that nDCG gains grow with relevance;
- two records (471 and 995) are empty; they are kept, as the collection has 1,400
  documents, and flagged.

CISI (``CISI.ALL``, ``CISI.QRY``, ``CISI.REL``):

- every ``CISI.REL`` line (``qid docid 0 0.000000``) is a relevant pair, grade 1; the last
  two columns are constant and carry no grade;
- queries without judgments are dropped and recorded, as BEIR's loader keeps only the
  judged queries: an unjudged query can only score zero.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import JsonValue

from recallbench.core import Dataset, DatasetError, Document, Problem, Query
from recallbench.datasets._json_v1 import check_references
from recallbench.datasets._provenance import Provenance

FIELDS = {
    "T": "title",
    "A": "authors",
    "B": "biblio",
    "W": "text",
    "X": "cross_references",
    "K": "keywords",
    "C": "classification",
}
"""SMART field letters and the names they get here (``.I`` starts a record)."""

CRANFIELD_FILES = ("cran.all.1400", "cran.qry", "cranqrel")
CISI_FILES = ("CISI.ALL", "CISI.QRY", "CISI.REL")

CRANFIELD_GRADES = {1: 3, 2: 2, 3: 1, 4: 1, -1: 0}
"""Cleverdon's codes (1 best, 4 least, -1 no interest) as recallbench grades (3 best)."""

_MARKER = re.compile(r"\.([A-Z])\s*")


@dataclass
class SmartRecord:
    """One ``.I`` record: its id, the line it starts on and its fields' raw lines."""

    id: str
    line: int
    fields: dict[str, list[list[str]]] = field(default_factory=dict)
    """Field letter -> one list of lines per occurrence of the field."""

    def has(self, letter: str) -> bool:
        return letter in self.fields

    def block(self, letter: str) -> str:
        """The field's lines as written (right-stripped), outer blank lines removed."""
        return "\n".join(
            "\n".join(line.rstrip() for line in lines) for lines in self.fields.get(letter, [])
        ).strip()

    def collapsed(self, letter: str) -> list[str]:
        """Each non-empty occurrence of the field on one line, whitespace collapsed."""
        values = (" ".join(" ".join(lines).split()) for lines in self.fields.get(letter, []))
        return [value for value in values if value]

    def extra_metadata(self, skip: tuple[str, ...]) -> dict[str, JsonValue]:
        """Every field but ``skip`` under its name: authors and cross references as lists
        (one entry per author, one per reference line), the others as one string."""
        metadata: dict[str, JsonValue] = {}
        for letter in self.fields:
            if letter in skip:
                continue
            if letter == "A":
                authors: list[JsonValue] = list(self.collapsed("A"))
                if authors:
                    metadata[FIELDS[letter]] = authors
            elif letter == "X":
                references: list[JsonValue] = [
                    " ".join(line.split())
                    for lines in self.fields["X"]
                    for line in lines
                    if line.strip()
                ]
                metadata[FIELDS[letter]] = references
            elif value := "; ".join(self.collapsed(letter)):
                metadata[FIELDS[letter]] = value
        return metadata


def _read_lines(path: Path, problems: list[Problem]) -> Iterator[tuple[int, str]]:
    """(line number, line without its end) of a UTF-8 text file; CRLF and LF alike.

    Decoded line by line, so that a bad byte is reported on its own line."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        problems.append(Problem(str(path), "file not found"))
        return
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                yield number, raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                problems.append(Problem(f"{path}:{number}", f"not UTF-8 text: {exc.reason}"))


def read_smart(path: Path, problems: list[Problem]) -> list[SmartRecord]:
    """Every record of a SMART file; each malformed line is reported with its ``file:line``."""
    records: list[SmartRecord] = []
    seen: dict[str, int] = {}
    current: SmartRecord | None = None
    lines: list[str] | None = None  # the open field's lines
    for number, line in _read_lines(path, problems):
        if line.startswith(".I") and (len(line) == 2 or line[2].isspace()):
            tokens = line.split()
            lines = None
            # a bad or repeated record is still opened, unlisted, so that its fields do
            # not add a problem on every line
            current = SmartRecord(tokens[1] if len(tokens) == 2 else "", number)
            if len(tokens) != 2:
                problems.append(Problem(f"{path}:{number}", "expected '.I <record id>'"))
                continue
            if tokens[1] in seen:
                problems.append(
                    Problem(
                        f"{path}:{number}",
                        f"record {tokens[1]!r} appears twice (first at line {seen[tokens[1]]})",
                    )
                )
                continue
            seen[tokens[1]] = number
            records.append(current)
        elif marker := _MARKER.fullmatch(line):
            letter = marker.group(1)
            if current is None:
                problems.append(Problem(f"{path}:{number}", f"field .{letter} before any .I"))
            elif letter not in FIELDS:
                known = ", ".join(f".{name}" for name in FIELDS)
                problems.append(
                    Problem(f"{path}:{number}", f"unknown field .{letter} (known: .I, {known})")
                )
                lines = None
            else:
                lines = []
                current.fields.setdefault(letter, []).append(lines)
        elif lines is not None:
            lines.append(line)
        elif line.strip() and current is not None:
            problems.append(
                Problem(f"{path}:{number}", "text outside a field (expected a marker such as .W)")
            )
        elif line.strip():
            problems.append(Problem(f"{path}:{number}", "text before the first .I record"))
    if not records and path.exists():
        problems.append(Problem(str(path), "no .I records: not a SMART file"))
    return records


def _require_text(path: Path, records: list[SmartRecord], problems: list[Problem]) -> None:
    for record in records:
        if not record.has("W"):
            problems.append(Problem(f"{path}:{record.line}", f"record {record.id!r} has no .W"))


def _documents(path: Path, provenance: Provenance, problems: list[Problem]) -> list[Document]:
    records = read_smart(path, problems)
    _require_text(path, records, problems)
    documents: list[Document] = []
    for record in records:
        text, title = record.block("W"), " ".join(record.collapsed("T")) or None
        if not text and not title:
            provenance.change(
                record.id, "flagged", f"empty record in {path.name}: no title or text"
            )
        documents.append(
            Document.model_construct(
                id=record.id, text=text, title=title, metadata=record.extra_metadata(("T", "W"))
            )
        )
    return documents


def _queries(
    path: Path, problems: list[Problem], query_id: Callable[[int, SmartRecord], str]
) -> list[Query]:
    """Queries named by ``query_id(position, record)`` (position counts from 1); the
    record's own ``.I`` number is kept as metadata ``smart_id``."""
    records = read_smart(path, problems)
    _require_text(path, records, problems)
    queries: list[Query] = []
    for position, record in enumerate(records, start=1):
        metadata: dict[str, JsonValue] = {"smart_id": record.id}
        metadata.update(record.extra_metadata(("W",)))
        queries.append(
            Query(id=query_id(position, record), text=record.block("W"), metadata=metadata)
        )
    return queries


def _judgment_lines(
    path: Path, fields: int, problems: list[Problem]
) -> Iterator[tuple[int, str, str, int]]:
    """(line, query, document, first grade column) of a qrels file of ``fields`` columns."""
    for number, line in _read_lines(path, problems):
        tokens = line.split()
        if not tokens:
            continue
        if len(tokens) != fields:
            problems.append(
                Problem(f"{path}:{number}", f"expected {fields} fields, got {len(tokens)}")
            )
            continue
        try:
            query, document = str(int(tokens[0])), str(int(tokens[1]))
            grade = int(tokens[2])
        except ValueError:
            problems.append(
                Problem(f"{path}:{number}", f"expected integer ids and grade, got {line.strip()!r}")
            )
            continue
        yield number, query, document, grade


def _add_judgment(
    qrels: dict[str, dict[str, int]],
    judgment: tuple[str, str, int],
    where: str,
    known: tuple[set[str], set[str]],
    provenance: Provenance,
    problems: list[Problem],
) -> None:
    """Add one judgment; unknown ids are dropped and recorded, conflicting repeats refused."""
    query, document, grade = judgment
    queries, documents = known
    subject = f"{query}/{document}"
    if query not in queries:
        provenance.change(subject, "dropped", f"{where}: no query {query}")
    elif document not in documents:
        provenance.change(subject, "dropped", f"{where}: no document {document}")
    elif (previous := qrels.get(query, {}).get(document)) is None:
        qrels.setdefault(query, {})[document] = grade
    elif previous != grade:
        problems.append(Problem(where, f"document {document} judged twice for query {query}"))
    else:
        provenance.change(subject, "dropped", f"{where}: repeated judgment")


def load_cranfield(path: Path) -> Dataset:
    """Read the Cranfield 1400 folder (see the module docstring for the rules)."""
    all_file, qry_file, rel_file = (path / name for name in CRANFIELD_FILES)
    provenance = Provenance(
        loader="cranfield",
        version="1",
        source=path,
        rules={
            "documents": "cran.all.1400: text = .W, title = .T, author/biblio in metadata",
            "query_text": "the .W field of cran.qry",
            "query_ids": "by position: the n-th query in cran.qry is query n, as cranqrel "
            "numbers them 1..225 while cran.qry's .I numbers run 001..365 with gaps "
            "(kept as metadata smart_id)",
            "grades": {str(code): grade for code, grade in CRANFIELD_GRADES.items()},
            "grade_scale": "Cleverdon: 1 complete answer, 2 high relevance, 3 useful, "
            "4 minimum interest; -1 reference of no interest, kept as judged non-relevant",
            "relevance_threshold": 1,
        },
    )
    problems: list[Problem] = []
    documents = _documents(all_file, provenance, problems)
    queries = _queries(qry_file, problems, lambda position, _: str(position))
    known = ({query.id for query in queries}, {document.id for document in documents})
    qrels: dict[str, dict[str, int]] = {}
    for number, query_id, doc_id, code in _judgment_lines(rel_file, 3, problems):
        if code not in CRANFIELD_GRADES:
            codes = ", ".join(str(code) for code in CRANFIELD_GRADES)
            problems.append(Problem(f"{rel_file}:{number}", f"grade {code} is not one of {codes}"))
            continue
        judgment = (query_id, doc_id, CRANFIELD_GRADES[code])
        _add_judgment(qrels, judgment, f"{rel_file}:{number}", known, provenance, problems)
    return _dataset(
        path,
        "cranfield",
        "Cranfield 1400: aeronautics abstracts and 225 queries, graded by Cleverdon",
        (documents, queries, qrels),
        provenance,
        problems,
    )


def load_cisi(path: Path) -> Dataset:
    """Read the CISI folder (see the module docstring for the rules)."""
    all_file, qry_file, rel_file = (path / name for name in CISI_FILES)
    provenance = Provenance(
        loader="cisi",
        version="1",
        source=path,
        rules={
            "documents": "CISI.ALL: text = .W, title = .T, authors/biblio/keywords/"
            "classification/cross references in metadata",
            "query_text": "the .W field of CISI.QRY (.T/.A/.B in metadata)",
            "query_ids": "the .I number, as CISI.REL uses it",
            "grades": "every CISI.REL line is relevant, grade 1 (its last two columns are "
            "always 0 0.000000)",
            "unjudged_queries": "dropped, as BEIR keeps only judged queries",
            "relevance_threshold": 1,
        },
    )
    problems: list[Problem] = []
    documents = _documents(all_file, provenance, problems)
    every_query = _queries(qry_file, problems, lambda _, record: record.id)
    known = ({query.id for query in every_query}, {document.id for document in documents})
    qrels: dict[str, dict[str, int]] = {}
    for number, query_id, doc_id, _ in _judgment_lines(rel_file, 4, problems):
        _add_judgment(
            qrels, (query_id, doc_id, 1), f"{rel_file}:{number}", known, provenance, problems
        )
    queries = []
    for query in every_query:
        if query.id in qrels:
            queries.append(query)
        else:
            provenance.change(query.id, "dropped", "no judgments in CISI.REL")
    return _dataset(
        path,
        "cisi",
        "CISI: library and information science abstracts and queries (binary judgments)",
        (documents, queries, qrels),
        provenance,
        problems,
    )


def _dataset(
    path: Path,
    name: str,
    description: str,
    content: tuple[list[Document], list[Query], dict[str, dict[str, int]]],
    provenance: Provenance,
    problems: list[Problem],
) -> Dataset:
    documents, queries, qrels = content
    check_references(str(path), documents, queries, qrels, problems)
    return Dataset(
        name=name,
        version="1",
        description=description,
        license="none stated",
        relevance_threshold=1,
        metadata={"loader": provenance.metadata()},
        documents=tuple(documents),
        queries=tuple(queries),
        qrels=qrels,
    )


def smart_collection(path: Path) -> str | None:
    """``"cranfield"`` or ``"cisi"`` when the folder holds that collection's files."""
    if not path.is_dir():
        return None
    names = {entry.name for entry in path.iterdir()}
    if all(name in names for name in CRANFIELD_FILES):
        return "cranfield"
    if all(name in names for name in CISI_FILES):
        return "cisi"
    return None


def load_smart(path: Path) -> Dataset:
    """Read a SMART collection folder, Cranfield or CISI, told apart by its file names.

    A path to one of the collection's files stands for its folder.
    """
    folder = path.parent if path.is_file() else path
    collection = smart_collection(folder)
    if collection == "cranfield":
        return load_cranfield(folder)
    if collection == "cisi":
        return load_cisi(folder)
    if not folder.is_dir():
        raise DatasetError(str(path), [Problem(str(path), "folder not found")])
    names = {entry.name for entry in folder.iterdir()}
    missing = [
        f"{label} needs {', '.join(name for name in files if name not in names)}"
        for label, files in (("Cranfield", CRANFIELD_FILES), ("CISI", CISI_FILES))
    ]
    message = "not a SMART collection folder: " + "; ".join(missing)
    raise DatasetError(str(path), [Problem(str(folder), message)])
