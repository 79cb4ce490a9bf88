"""The exact reader of TREC qrels and run files: trec_eval 10.0's rules, line by line.

What trec_eval 10.0 does (``get_qrels.c``, ``get_trec_results.c``, ``form_res_rels.c``,
``m_runid.c``; the ``-R qrels`` and ``-T trec_results`` defaults) and what recallbench does:

Bytes and whitespace
    trec_eval reads the file as bytes and splits fields with C's ``isspace`` in the "C"
    locale (it never calls ``setlocale``): space, tab, ``\\n``, ``\\v``, ``\\f``, ``\\r``.
    Only ``\\n`` ends a line, so a CRLF line's ``\\r`` is trailing whitespace and a lone
    ``\\r`` separates two fields of the same line. No other byte is whitespace: a no-break
    space (U+00A0), an ideographic space or any other non-ASCII character is part of an id.
    recallbench splits the same way (``bytes.split()``: exactly those six bytes), then
    decodes ids as UTF-8; bytes that are not UTF-8 are refused with their ``file:line``
    (trec_eval would compare them as bytes). A NUL byte (trec_eval: "File may contain no
    NULL characters"; it silently ends its reading there) is refused with its line.
    An empty (0-byte) file is refused by trec_eval ("Cannot read"); recallbench refuses an
    empty or comment-only qrels file, and reads an empty run file as a run without results
    (what a system that found nothing writes; trec_eval stops on it).

qrels: ``query iteration document grade``
    A line whose first byte is ``#`` is a comment, as in trec_eval. trec_eval 10.0 skips
    only one comment line at a time: a second comment line in a row is parsed as data
    (refused as malformed, or read as a judgment of query ``#`` when it has four words),
    and a comment as the last line crashes it (segmentation fault). recallbench refuses
    both, naming the line, so that a file it evaluates is one trec_eval evaluates the same
    way. A line with leading blanks is data even if its first field starts with ``#`` (as
    trec_eval). Exactly 4 fields, otherwise the line is refused (trec_eval: "Malformed
    line"). A blank line (nothing but whitespace), the last one included, is refused as
    trec_eval refuses it ("Malformed line"). The iteration field is ignored (never
    decoded).
    A (query, document) pair judged twice is refused, naming both lines, even with the
    same grade: trec_eval stops with "duplicate docs" when it evaluates that query.
    Negative grades are read (trec_eval: judged, in the pool, not relevant).

run: ``query Q0 document rank score tag [anything]``
    Leading blanks are skipped; a line that is then empty, or starts with ``#``, is
    skipped. At least 6 fields, otherwise refused; fields after the 6th are ignored, as are
    ``Q0`` and ``rank`` (trec_eval orders by score descending, then document id descending).
    The run's tag (printed as ``runid``) is the tag of the *last* data line: trec_eval
    keeps one pointer that every line overwrites (``m_runid.c`` prints it).
    A document returned twice for one query is refused, naming both lines: trec_eval stops
    with "duplicate docs" (only for queries it evaluates; recallbench for every query).

Numbers: every number right, or refused
    trec_eval converts with ``atol`` (grades) and ``atof`` (scores), which read the longest
    valid prefix and ignore the rest: ``1_000`` is 1, ``1.5`` as a grade is 1, ``１``
    (fullwidth) and ``abc`` are 0, ``1e`` is 1, ``0x1p3`` is 8.0, ``nan``/``inf`` are read.
    Python's ``int``/``float`` disagree on most of these (``1_000`` -> 1000, ``１`` -> 1).
    recallbench reads only tokens on which C and Python agree exactly and refuses every
    other token with its ``file:line`` (exit 2):

    - grade: ``[+-]?[0-9]+`` (ASCII digits only) within a signed 64-bit integer;
    - score: ``[+-]?([0-9]+.?[0-9]*|.[0-9]+)([eE][+-]?[0-9]+)?`` (ASCII), finite after
      conversion. Both ``strtod`` and Python round such a decimal correctly, so they give
      the same double; hexadecimal, ``nan``, ``inf``, overflow to infinity, underscores,
      non-ASCII digits and any trailing text are refused.

Queries judged in the qrels but absent from the run
    Without ``-c`` trec_eval 10.0 stops (exit 4, "result qid ... not found in qrels");
    recallbench ignores them, as trec_eval 9 did (they are not evaluated and not counted);
    with ``-c`` they score 0 in both. This is the evaluation's rule, not the reader's: the
    readers return every query of each file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path

from recallbench.core._errors import DatasetError, Problem, RunFileError

MAX_PROBLEMS = 50
"""Stop collecting problems after this many: a wrong file would otherwise print millions."""

GRADE = re.compile(rb"[+-]?[0-9]+")
SCORE = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
INT64 = 1 << 63
SECOND_COMMENT = (
    "a comment line right after another: trec_eval 10.0 skips one comment line at a time "
    "and reads this one as a judgment; join the comments into one line"
)
LAST_COMMENT = (
    "a comment as the last line: trec_eval 10.0 crashes on it; move it to the top of the file"
)
BLANK_QRELS_LINE = 'blank line: trec_eval 10.0 refuses it ("Malformed line"); remove it'


class Collector:
    """Problems of one file, each located by ``file:line``."""

    def __init__(self, path: Path, error: type[DatasetError]) -> None:
        self.path, self.error, self.problems = path, error, list[Problem]()

    def add(self, line: int, message: str) -> None:
        if len(self.problems) == MAX_PROBLEMS:
            self.raise_if_any()
        self.problems.append(Problem(f"{self.path}:{line}", message))

    def raise_if_any(self) -> None:
        if self.problems:
            more = " (stopped here)" if len(self.problems) >= MAX_PROBLEMS else ""
            raise self.error(str(self.path) + more, self.problems)


def data_lines(path: Path, qrels: bool, problems: Collector) -> Iterator[tuple[int, list[bytes]]]:
    """(line number, fields) of every data line, comments (and a run's blank lines)
    skipped; a qrels file's blank lines and comments trec_eval misreads are problems."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise problems.error(str(path), [Problem("", "file not found")]) from None
    with handle:
        comment = number = 0  # comment: the last comment line's number (qrels)
        for number, line in enumerate(handle, start=1):  # binary files split at b"\n" only
            if b"\0" in line:
                problems.add(number, "NUL byte in the line")
                continue
            # qrels: '#' in the very first column only; run: after leading blanks
            if line.startswith(b"#") if qrels else line.lstrip().startswith(b"#"):
                if qrels and comment == number - 1 and number > 1:
                    problems.add(number, SECOND_COMMENT)
                comment = number
                continue
            fields = line.split()  # C isspace in the "C" locale: b" \t\n\v\f\r"
            if fields:
                yield number, fields
            elif qrels:
                problems.add(number, BLANK_QRELS_LINE)
        if qrels and comment and comment == number:
            problems.add(comment, LAST_COMMENT)


def text(token: bytes, number: int, what: str, problems: Collector) -> str | None:
    """``token`` decoded as UTF-8, or None (and a problem) when it is not UTF-8."""
    try:
        return token.decode("utf-8")
    except UnicodeDecodeError as error:
        problems.add(number, f"{what} is not UTF-8 (byte {error.start + 1}): {token!r}")
        return None


def grade_of(token: bytes) -> int | None:
    """The grade ``atol`` reads, when it reads all of ``token`` (else None)."""
    if GRADE.fullmatch(token) is None:
        return None
    grade = int(token)
    return grade if -INT64 <= grade < INT64 else None


def score_of(token: bytes) -> float | None:
    """The score ``atof`` reads, when it reads all of ``token`` as a finite decimal."""
    if SCORE.fullmatch(token) is None:
        return None
    score = float(token)
    return score if math.isfinite(score) else None


def parse_qrels_lines(path: Path) -> tuple[list[str], list[str], list[int]]:
    """Every judgment of a qrels file; every malformed line reported with ``file:line``."""
    queries: list[str] = []
    docs: list[str] = []
    grades: list[int] = []
    seen: dict[tuple[str, str], int] = {}
    problems = Collector(path, DatasetError)
    for number, fields in data_lines(path, True, problems):
        if len(fields) != 4:
            problems.add(
                number, f"expected 4 fields (query iter document grade), got {len(fields)}"
            )
            continue
        query_id = text(fields[0], number, "query id", problems)
        doc_id = text(fields[2], number, "document id", problems)
        grade = grade_of(fields[3])
        if grade is None:
            problems.add(number, f"grade must be an integer, got {_shown(fields[3])}")
        if query_id is None or doc_id is None or grade is None:
            continue
        if _repeated(seen, query_id, doc_id, number, "judged", problems):
            continue
        queries.append(query_id)
        docs.append(doc_id)
        grades.append(grade)
    problems.raise_if_any()
    if not queries:
        raise DatasetError(str(path), [Problem(str(path), "no judgments (empty or only comments)")])
    return queries, docs, grades


def parse_run_lines(path: Path) -> tuple[list[str], list[str], list[float], str]:
    """Every ranked document of a run file and the last line's tag (the file's stem when
    there is no line); every malformed line reported with ``file:line``."""
    queries: list[str] = []
    docs: list[str] = []
    scores: list[float] = []
    last: tuple[int, bytes] | None = None
    seen: dict[tuple[str, str], int] = {}
    problems = Collector(path, RunFileError)
    for number, fields in data_lines(path, False, problems):
        if len(fields) < 6:
            problems.add(
                number, f"expected 6 fields (query Q0 document rank score tag), got {len(fields)}"
            )
            continue
        last = number, fields[5]
        query_id = text(fields[0], number, "query id", problems)
        doc_id = text(fields[2], number, "document id", problems)
        score = score_of(fields[4])
        if score is None:
            problems.add(
                number, f"score must be a number, got {_shown(fields[4])} (finite, decimal, ASCII)"
            )
        if query_id is None or doc_id is None or score is None:
            continue
        if _repeated(seen, query_id, doc_id, number, "returned", problems):
            continue
        queries.append(query_id)
        docs.append(doc_id)
        scores.append(score)
    tag = path.stem if last is None else text(last[1], last[0], "run tag", problems)
    problems.raise_if_any()
    return queries, docs, scores, tag or path.stem


def _repeated(
    seen: dict[tuple[str, str], int],
    query: str,
    doc: str,
    number: int,
    verb: str,
    problems: Collector,
) -> bool:
    """Whether (query, doc) came before; if so a problem names both lines (trec_eval
    stops with "duplicate docs")."""
    first = seen.setdefault((query, doc), number)
    if first != number:
        problems.add(
            number,
            f"document {doc!r} {verb} twice for query {query!r} (first at {problems.path}:{first})",
        )
    return first != number


def _shown(token: bytes) -> str:
    """A token as the user wrote it (its text when UTF-8, else its bytes)."""
    try:
        return repr(token.decode("utf-8"))
    except UnicodeDecodeError:
        return repr(token)
