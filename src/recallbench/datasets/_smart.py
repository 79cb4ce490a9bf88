"""SMART-format test collections from the Glasgow IR group: Cranfield 1400, CISI, and any
other collection in the same record grammar (MED, CACM, ADI, ...; see ``_smart_format``).

Rules, the same for every collection:

- a document's text is its ``.W`` field, its title the ``.T`` field (whitespace collapsed);
  a record without ``.W`` (CACM has many) takes its title as its text; a record with
  neither (Cranfield's 471 and 995, a trailing empty ``.I``) is dropped and recorded, with
  any judgment naming it; the other fields go into metadata;
- a query's text is its ``.W`` field (its title when it has none; dropped and recorded
  when it has neither); any other field goes into its metadata;
- a judgment naming a document or query that does not exist is dropped and recorded.

Cranfield (``cran.all.1400``, ``cran.qry``, ``cranqrel``):

- ``cran.qry`` numbers its queries 001..365 with gaps but ``cranqrel`` numbers them 1..225:
  the n-th query in ``cran.qry`` is query ``n`` (its ``.I`` number is kept as metadata);
- grades run backwards (Cleverdon: 1 = complete answer ... 4 = minimum interest) and ``-1``
  marks a reference of no interest: 1->3, 2->2, 3->1, 4->1, -1->0 (judged non-relevant),
  with relevance threshold 1, so that nDCG gains grow with relevance.

CISI (``CISI.ALL``, ``CISI.QRY``, ``CISI.REL``):

- every ``CISI.REL`` line (``qid docid 0 0.000000``) is a relevant pair, grade 1; the last
  two columns are constant and carry no grade;
- queries without judgments are dropped and recorded, as BEIR's loader keeps only the
  judged queries: an unjudged query can only score zero.

Other collections (one documents file ``*.ALL``, one queries file ``*.QRY``/``*.QUE``/
``query.text``, one judgments file ``*.REL``/``qrels.text``; names in any case):

- ids are the ``.I`` numbers without leading zeros (``qrels.text`` writes ``01``);
- a judgments file whose second column is always 0 is ``qid 0 docid grade`` (MED.REL, as
  TREC qrels); otherwise each line names a relevant pair ``qid docid ...`` (CACM, ADI),
  grade 1, the other columns ignored;
- queries without judgments are dropped and recorded, as for CISI.

NPL, TIME and LISA are not in this grammar (no ``.I`` records): ``smart:`` refuses them
with a located error (Vaswani/NPL loads as ``trec:``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from pydantic import JsonValue

from recallbench.core import Dataset, DatasetError, Document, Problem, Query
from recallbench.datasets._json_v1 import checked_dataset
from recallbench.datasets._provenance import Provenance, read_lines
from recallbench.datasets._smart_format import SmartRecord, read_smart

CRANFIELD_FILES = ("cran.all.1400", "cran.qry", "cranqrel")
CISI_FILES = ("CISI.ALL", "CISI.QRY", "CISI.REL")

CRANFIELD_GRADES = {1: 3, 2: 2, 3: 1, 4: 1, -1: 0}
"""Cleverdon's codes (1 best, 4 least, -1 no interest) as recallbench grades (3 best)."""

EMPTY_RECORDS = "records without .W take their title as text; with neither, dropped"


def _text_and_title(record: SmartRecord) -> tuple[str, str | None]:
    title = " ".join(record.collapsed("T")) or None
    return record.block("W") or title or "", title


def _documents(path: Path, provenance: Provenance, problems: list[Problem]) -> list[Document]:
    documents: list[Document] = []
    for record in read_smart(path, problems):
        text, title = _text_and_title(record)
        if not text:
            provenance.change(
                record.id, "dropped", f"empty record in {path.name}: no title or text"
            )
            continue
        documents.append(
            Document.model_construct(
                id=record.id, text=text, title=title, metadata=record.extra_metadata(("T", "W"))
            )
        )
    return documents


def _queries(
    path: Path,
    provenance: Provenance,
    problems: list[Problem],
    query_id: Callable[[int, SmartRecord], str],
) -> list[Query]:
    """Queries named by ``query_id(position, record)`` (position counts from 1); the
    record's own ``.I`` number is kept as metadata ``smart_id``."""
    queries: list[Query] = []
    for position, record in enumerate(read_smart(path, problems), start=1):
        text, _ = _text_and_title(record)
        if not text:
            provenance.change(record.id, "dropped", f"empty query in {path.name}: no text")
            continue
        metadata: dict[str, JsonValue] = {"smart_id": record.id}
        metadata.update(record.extra_metadata(("W",)))
        queries.append(
            Query.model_construct(id=query_id(position, record), text=text, metadata=metadata)
        )
    return queries


def _judgment_lines(
    path: Path, fields: int, problems: list[Problem]
) -> Iterator[tuple[int, str, str, int]]:
    """(line, query, document, first grade column) of a qrels file of ``fields`` columns."""
    for number, line in read_lines(path, problems):
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
            "empty_records": EMPTY_RECORDS,
        },
    )
    problems: list[Problem] = []
    documents = _documents(all_file, provenance, problems)
    queries = _queries(qry_file, provenance, problems, lambda position, _: str(position))
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
            "empty_records": EMPTY_RECORDS,
        },
    )
    problems: list[Problem] = []
    documents = _documents(all_file, provenance, problems)
    every_query = _queries(qry_file, provenance, problems, lambda _, record: record.id)
    known = ({query.id for query in every_query}, {document.id for document in documents})
    qrels: dict[str, dict[str, int]] = {}
    for number, query_id, doc_id, _ in _judgment_lines(rel_file, 4, problems):
        _add_judgment(
            qrels, (query_id, doc_id, 1), f"{rel_file}:{number}", known, provenance, problems
        )
    return _dataset(
        path,
        "cisi",
        "CISI: library and information science abstracts and queries (binary judgments)",
        (documents, _judged_only(every_query, qrels, rel_file, provenance), qrels),
        provenance,
        problems,
    )


def _judged_only(
    queries: list[Query], qrels: dict[str, dict[str, int]], rel_file: Path, provenance: Provenance
) -> list[Query]:
    """The queries with judgments; the others are dropped and recorded."""
    for query in queries:
        if query.id not in qrels:
            provenance.change(query.id, "dropped", f"no judgments in {rel_file.name}")
    return [query for query in queries if query.id in qrels]


def _number(record: SmartRecord) -> str:
    """A record's id without leading zeros, as judgment files write it (``01`` is 1)."""
    return str(int(record.id)) if record.id.isdigit() else record.id


def _pairs(path: Path, problems: list[Problem]) -> tuple[str, list[tuple[str, str, str, int]]]:
    """The layout of a generic judgments file and its (where, query, document, grade)."""
    rows: list[tuple[str, list[str]]] = []
    for number, line in read_lines(path, problems):
        tokens = line.split()
        if not tokens:
            continue
        where = f"{path}:{number}"
        if len(tokens) < 2 or not all(token.lstrip("-").isdigit() for token in tokens[:2]):
            problems.append(Problem(where, f"expected 'query document ...', got {line.strip()!r}"))
            continue
        rows.append((where, tokens))
    trec = bool(rows) and all(len(tokens) == 4 and tokens[1] == "0" for _, tokens in rows)
    judgments: list[tuple[str, str, str, int]] = []
    for where, tokens in rows:
        if not trec:
            judgments.append((where, str(int(tokens[0])), str(int(tokens[1])), 1))
        elif tokens[2].isdigit() and tokens[3].isdigit():
            judgments.append((where, str(int(tokens[0])), str(int(tokens[2])), int(tokens[3])))
        else:
            problems.append(Problem(where, "expected 'query 0 document grade' (integers >= 0)"))
    layout = "query 0 document grade (TREC qrels)" if trec else "query document ...: relevant"
    return layout, judgments


def load_smart_collection(path: Path, files: tuple[Path, Path, Path]) -> Dataset:
    """Read a SMART collection other than Cranfield and CISI from its documents, queries
    and judgments files (see the module docstring for the rules)."""
    all_file, qry_file, rel_file = files
    problems: list[Problem] = []
    layout, pairs = _pairs(rel_file, problems)
    provenance = Provenance(
        loader="smart",
        version="1",
        source=path,
        rules={
            "files": [file.name for file in files],
            "documents": f"{all_file.name}: text = .W, title = .T, other fields in metadata",
            "query_text": f"the .W field of {qry_file.name}",
            "ids": "the .I numbers without leading zeros",
            "judgments": layout,
            "unjudged_queries": "dropped, as BEIR keeps only judged queries",
            "relevance_threshold": 1,
            "empty_records": EMPTY_RECORDS,
        },
    )
    documents = [
        document.model_copy(update={"id": str(int(document.id))})
        if document.id.isdigit()
        else document
        for document in _documents(all_file, provenance, problems)
    ]
    every_query = _queries(qry_file, provenance, problems, lambda _, record: _number(record))
    known = ({query.id for query in every_query}, {document.id for document in documents})
    qrels: dict[str, dict[str, int]] = {}
    for where, query_id, doc_id, grade in pairs:
        _add_judgment(qrels, (query_id, doc_id, grade), where, known, provenance, problems)
    name = path.resolve().name.lower()
    return _dataset(
        path,
        name,
        f"{name}: a SMART test collection ({all_file.name}, {qry_file.name}, {rel_file.name})",
        (documents, _judged_only(every_query, qrels, rel_file, provenance), qrels),
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
    dataset = Dataset.model_construct(
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
    return checked_dataset(dataset, str(path), problems)


def _generic_files(folder: Path) -> tuple[Path, Path, Path] | list[str]:
    """The documents, queries and judgments files of a SMART collection folder, or what
    is missing or ambiguous."""
    kinds: dict[str, Callable[[str], bool]] = {
        "documents (*.ALL)": lambda name: name.endswith(".all") or ".all." in name,
        "queries (*.QRY, *.QUE, query.text)": lambda name: (
            name.endswith((".qry", ".que")) or name == "query.text"
        ),
        "judgments (*.REL, qrels.text)": lambda name: name.endswith(".rel") or name == "qrels.text",
    }
    entries = sorted(entry for entry in folder.iterdir() if entry.is_file())
    found: list[Path] = []
    trouble: list[str] = []
    for label, matches in kinds.items():
        hits = [entry for entry in entries if matches(entry.name.lower())]
        if len(hits) == 1:
            found.append(hits[0])
        else:
            names = ", ".join(entry.name for entry in hits)
            trouble.append(f"{label}: {'none' if not hits else 'several: ' + names}")
    return trouble if trouble else (found[0], found[1], found[2])


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
    """Read a SMART collection folder: Cranfield and CISI by their file names, any other
    by its ``*.ALL``, ``*.QRY`` and ``*.REL`` files (see the module docstring).

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
    files = _generic_files(folder)
    if isinstance(files, tuple):
        return load_smart_collection(folder, files)
    message = "not a SMART collection folder: " + "; ".join(files)
    raise DatasetError(str(path), [Problem(str(folder), message)])
