"""A whole-file reader for plain TREC files, for the sizes the line reader serves.

The line reader (:mod:`._trec_lines`) spends ~3 µs a line in Python. Most files are plain:
ASCII, one kind of line, no comment, no NUL. Such a file is split in one call
(``str.split`` on ASCII text splits at exactly C's ``isspace`` bytes once the four
separator controls ``\\x1c``-``\\x1f`` are ruled out), after numpy has checked that every
non-blank line has the expected number of fields. Anything else (a comment, a byte that
is not ASCII, an underscore that Python's ``float`` or ``int`` would read, a repeated
pair, a token the line reader refuses) returns None, and the line reader reads the file:
it alone reports problems, so both give the same result or the same error.
"""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path

import numpy as np
import numpy.typing as npt

from recallbench.datasets._trec_lines import INT64

# byte classes: 1 C isspace in the "C" locale; 2 a byte that sends the file to the line
# reader: NUL (ends trec_eval's reading), \x1c-\x1f (whitespace to str.split but not to
# isspace), ``#`` (may open a comment), ``_`` (read by Python's int and float, not by C's
# atol and atof), and every byte above ASCII
_CLASS = np.zeros(256, dtype=np.uint8)
_CLASS[[9, 10, 11, 12, 13, 32]] = 1
_CLASS[[0, 0x1C, 0x1D, 0x1E, 0x1F, ord("#"), ord("_"), *range(128, 256)]] = 2
_GRADE = re.compile(r"[+-]?[0-9]+")


def _plain_tokens(path: Path, fields: int) -> list[str] | None:
    """Every token of ``path`` when it is plain ASCII with exactly ``fields`` fields on
    each non-blank line; None otherwise (or when it cannot be read)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    raw = np.frombuffer(data, dtype=np.uint8)
    kind = _CLASS[raw]
    if np.any(kind == 2):
        return None
    space = kind == 1
    is_start = ~space
    is_start[1:] &= space[:-1]  # a field starts where a non-space follows a space
    # fields on each line: field starts counted up to each newline
    counted = np.cumsum(is_start, dtype=np.int64)[raw == 10]
    per_line = np.diff(counted, prepend=0)
    trailing = int(is_start.sum()) - (int(counted[-1]) if len(counted) else 0)
    wrong = per_line != fields
    if fields == 4:  # qrels: a blank line is the line reader's to refuse (as trec_eval does)
        if trailing == 0 and data and not data.endswith(b"\n"):
            return None  # a last line of whitespace only
    else:
        wrong &= per_line != 0
    if np.any(wrong) or trailing not in (0, fields):
        return None
    tokens = data.decode("ascii").split()
    return tokens if tokens else None


def split_qrels(path: Path) -> dict[str, dict[str, int]] | None:
    """A plain qrels file's judgments, as the line reader reads them, or None."""
    tokens = _plain_tokens(path, 4)
    if tokens is None:
        return None
    values: dict[str, int] = {}
    for token in set(tokens[3::4]):  # a few distinct grades
        if _GRADE.fullmatch(token) is None or not -INT64 <= int(token) < INT64:
            return None
        values[token] = int(token)
    qrels: dict[str, dict[str, int]] = {}
    grades = map(values.__getitem__, tokens[3::4])
    for query, doc, grade in zip(tokens[0::4], tokens[2::4], grades, strict=True):
        judged = qrels.get(query)
        if judged is None:
            judged = qrels[query] = {}
        judged[doc] = grade
    if sum(map(len, qrels.values())) != len(tokens) // 4:
        return None  # a pair judged twice: the line reader names both lines
    return qrels


def split_run(
    path: Path,
) -> tuple[list[str], list[int], list[str], npt.NDArray[np.float64], str] | None:
    """A plain run file whose queries' lines are contiguous: (query ids, where each
    query's rows start, with the end last; document ids, scores, tag), or None."""
    tokens = _plain_tokens(path, 6)
    if tokens is None:
        return None
    try:
        scores = np.array(list(map(float, tokens[4::6])), dtype=np.float64)
    except ValueError:
        return None
    if not np.isfinite(scores).all():
        return None  # nan, inf, or a decimal out of range: refused by the line reader
    queries, docs = tokens[0::6], tokens[2::6]
    bounds = [0, *(i for i in range(1, len(queries)) if queries[i] != queries[i - 1])]
    names = [queries[i] for i in bounds]
    bounds.append(len(queries))
    if len(set(names)) != len(names):
        return None  # a query's lines apart: left to the line reader
    for start, end in pairwise(bounds):
        if len(set(docs[start:end])) != end - start:
            return None  # a document returned twice: the line reader names both lines
    return names, bounds, docs, scores, tokens[-1]


def ranked_blocks(
    names: list[str], bounds: list[int], docs: list[str], scores: npt.NDArray[np.float64]
) -> dict[str, list[str]]:
    """Each query's documents in trec_eval's order: score descending, then document id
    descending (code-point order of str is UTF-8 byte order, that is strcmp's).

    Runs are usually written best first: then nothing moves. Otherwise the queries with a
    tie or out of order get one numpy sort by (query, score) and each group of tied scores
    a sort of its ids."""
    ranked = {name: docs[a:b] for name, a, b in zip(names, bounds, bounds[1:], strict=False)}
    block = np.repeat(np.arange(len(names)), np.diff(bounds))
    same = block[1:] == block[:-1]
    unsorted = np.unique(block[np.flatnonzero(same & (scores[1:] >= scores[:-1]))])
    if not len(unsorted):
        return ranked
    # only the queries with a tie or out of order: rows by (query, score descending)
    rows = np.concatenate([np.arange(bounds[b], bounds[b + 1]) for b in unsorted.tolist()])
    rows = rows[np.lexsort((-scores[rows], block[rows]))]
    ordered = [docs[i] for i in rows.tolist()]
    tied_score = scores[rows]
    tied = np.flatnonzero(
        (block[rows][1:] == block[rows][:-1]) & (tied_score[1:] == tied_score[:-1])
    )
    if len(tied):
        # runs of consecutive tied positions: group [tied[a], tied[b] + 1]
        opens = np.flatnonzero(np.concatenate(([True], np.diff(tied) != 1)))
        closes = np.append(opens[1:], len(tied)) - 1
        for first, last in zip(tied[opens].tolist(), (tied[closes] + 2).tolist(), strict=True):
            ordered[first:last] = sorted(ordered[first:last], reverse=True)
    start = 0
    for b in unsorted.tolist():
        size = bounds[b + 1] - bounds[b]
        ranked[names[b]] = ordered[start : start + size]
        start += size
    return ranked
