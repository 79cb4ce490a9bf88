"""Plain TREC files straight from their bytes to a :class:`RankTable`, in numpy.

The exact line reader and the whole-file splitter build a Python string for every field
(``str.split`` and ``float`` measured ~75 ms of a 0.15 s evaluation of 100k run lines).
Here a file's bytes are classified once; each field is gathered into a fixed-width byte
matrix (8-byte words, big-endian, so that comparing words compares ids as ``strcmp``),
scores and grades are converted column-wise, and the join with the judgments is a hash
search verified byte for byte. No per-line Python object is made.

Only files read exactly as the line reader reads them are taken: plain ASCII (the byte
classes of :mod:`recallbench.datasets._trec_split`), the same number of fields on every
non-blank line, scores written as plain decimals of at most 15 digits, integer grades, each
query's run lines together, no document returned twice, no pair judged twice. Anything else
returns None and the exact readers decide (and locate any problem), so the results, and the
errors, are the same either way.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from recallbench.measures._evaluate import Evaluation
from recallbench.measures._measure import Measure
from recallbench.measures._table import BoolArray, FloatArray, IntArray, RankTable, _ranks
from recallbench.measures._trec_eval import TrecOptions, evaluate_trec_table, trec_query_ids

if TYPE_CHECKING:
    from pathlib import Path

Bytes = npt.NDArray[np.uint8]
Words = npt.NDArray[np.uint64]

# byte classes, as the whole-file splitter's: 1 C isspace in the "C" locale; 2 a byte that
# sends the file to the exact readers (NUL, \x1c-\x1f, '#', '_', anything above ASCII)
_CLASS = np.zeros(256, dtype=np.uint8)
_CLASS[[9, 10, 11, 12, 13, 32]] = 1
_CLASS[[0, 0x1C, 0x1D, 0x1E, 0x1F, ord("#"), ord("_"), *range(128, 256)]] = 2

MAX_DIGITS = 15
"""A decimal of at most 15 digits is an integer below 2**53 over a power of ten below
10**22, both exact doubles: one IEEE division then rounds the exact quotient, which is the
correctly rounded value that C's atof and Python's float give (Clinger's fast path)."""
MAX_WIDTH = 256
"""Fields wider than this (bytes) are left to the exact readers."""
PLAIN_LIMIT = 8 << 20
"""Files up to this size (bytes) are read here; larger ones by Arrow's reader, which
parses on every core and keeps less in memory at once."""
MIX = np.uint64(0xBF58476D1CE4E5B9)


@dataclass(frozen=True, eq=False)
class _Fields:
    """Where each field of a plain file starts and ends (``count`` fields a line)."""

    padded: Bytes
    """A space, the file's bytes, then MAX_WIDTH zero bytes (gathers never read past it)."""
    starts: IntArray
    ends: IntArray
    count: int

    def column(self, index: int) -> tuple[IntArray, IntArray]:
        return self.starts[index :: self.count], self.ends[index :: self.count]

    def text(self, start: int, end: int) -> str:
        return self.padded[start:end].tobytes().decode("ascii")


def _fields(path: Path, count: int) -> _Fields | None:
    """The fields of ``path`` when it is plain with ``count`` fields on every non-blank
    line, else None (also when it cannot be read: the exact reader reports that)."""
    # one space before the bytes, MAX_WIDTH zero bytes after: every field opens after a
    # space and closes before one, so field edges alternate, opening first. The file is
    # read straight into that buffer (a copy of it measured a fifth of this function).
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            padded = np.zeros(size + 1 + MAX_WIDTH, dtype=np.uint8)
            if not size or handle.readinto(padded[1 : size + 1].data) != size:
                return None
    except OSError:
        return None
    padded[0] = 32
    kind = _CLASS[padded]
    kind[size + 1 :] = 1
    if kind.max() > 1:
        return None
    space = kind.view(bool)
    edges = np.flatnonzero(space[1:] != space[:-1]) + 1
    del kind, space
    # fields on each line: fields closed up to each newline (two edges each), differenced
    newlines = np.flatnonzero(padded[: size + 1] == 10)
    before = np.searchsorted(edges, newlines, side="right") // 2
    per_line = np.diff(before, prepend=0)
    fields = len(edges) // 2
    trailing = fields - (int(before[-1]) if len(before) else 0)
    wrong = per_line != count
    if count == 4:  # qrels: a blank line is the exact reader's to refuse (as trec_eval does)
        if trailing == 0 and padded[size] != 10:
            return None  # a last line of whitespace only
    else:
        wrong &= per_line != 0
    if np.any(wrong) or trailing not in (0, count):
        return None
    starts, ends = edges[0::2], edges[1::2]
    if not fields or int((ends - starts).max()) > MAX_WIDTH - 8:
        return None
    return _Fields(padded, starts, ends, count)


def _gather(fields: _Fields, starts: IntArray, ends: IntArray) -> Bytes:
    """Each field's bytes as a row, zero-padded to a multiple of 8 bytes (wide enough for
    the longest): rows compare as the fields compare under ``strcmp``."""
    lengths = ends - starts
    width = max(8, (int(lengths.max()) + 7) // 8 * 8) if len(lengths) else 8
    windows = np.ndarray(
        (len(fields.padded) - width + 1, width),
        dtype=np.uint8,
        buffer=fields.padded,
        strides=(1, 1),
    )
    rows: Bytes = windows[starts]
    rows *= np.arange(width) < lengths[:, None]
    return rows


def _words(rows: Bytes, width: int) -> Words:
    """Rows of bytes as big-endian 8-byte words, ``width`` bytes wide (zero-padded)."""
    if rows.shape[1] < width:
        rows = np.pad(rows, ((0, 0), (0, width - rows.shape[1])))
    words: Words = rows.view(">u8").astype(np.uint64)
    return words


POWERS_OF_TEN = np.array([float(10**k) for k in range(MAX_DIGITS + 1)])
"""Exact doubles (10**22 is the last that is)."""
MAX_NUMBER_WIDTH = 16
"""Numbers are read from at most two words: sums of digit times power of ten stay below
10**16, exact in int64."""


def _numbers(
    rows: Bytes, lengths: IntArray, decimals: bool, max_digits: int
) -> tuple[IntArray, IntArray, BoolArray] | None:
    """Fields written ``[+-]digits`` (or with ``decimals`` ``[+-]digits[.digits]`` with a
    digit somewhere) of at most ``max_digits`` digits: their digits as an integer, how
    many of them follow the dot, and which are negative; None when any field is written
    otherwise. Read byte position by byte position (Horner's rule over all fields at
    once): arrays of one value a field, where whole-matrix steps measured 2x slower in a
    fresh process (each a new matrix of int64 the kernel must map)."""
    width = rows.shape[1]
    if width > MAX_NUMBER_WIDTH:
        return None
    columns = np.ascontiguousarray(rows.T)  # one array per byte position
    count = len(lengths)
    first = columns[0]
    negative = first == ord("-")
    bad = np.zeros(count, dtype=bool)
    mantissa = np.zeros(count, dtype=np.int64)
    digits = np.zeros(count, dtype=np.int64)
    fraction = np.zeros(count, dtype=np.int64)
    dots = np.zeros(count, dtype=np.int64)
    after_dot = np.zeros(count, dtype=bool)
    for position in range(width):
        column = columns[position]
        value = column - np.uint8(ord("0"))  # wraps below '0': not a digit either
        digit = value < 10
        allowed = digit | (lengths <= position)  # the zero padding after each field
        if decimals:
            dot = column == ord(".")
            allowed |= dot
        if position == 0:
            allowed |= negative | (first == ord("+"))
        bad |= ~allowed
        mantissa = np.where(digit, mantissa * 10 + value, mantissa)
        digits += digit
        if decimals:
            fraction += digit & after_dot
            dots += dot
            after_dot |= dot
    if bad.any() or np.any(digits == 0) or np.any(digits > max_digits) or np.any(dots > 1):
        return None
    return mantissa, fraction, negative


def _decimals(rows: Bytes, lengths: IntArray) -> FloatArray | None:
    """Plain decimals read exactly as atof reads them (see :data:`MAX_DIGITS`), or None."""
    read = _numbers(rows, lengths, True, MAX_DIGITS)
    if read is None:
        return None
    mantissa, fraction, negative = read
    scores: FloatArray = mantissa.astype(np.float64) / POWERS_OF_TEN[fraction]
    scores[negative] = -scores[negative]
    return scores


def _integers(rows: Bytes, lengths: IntArray) -> IntArray | None:
    """Integers (``[+-]digits``, at most 15 digits) as atol reads them, else None."""
    read = _numbers(rows, lengths, False, MAX_DIGITS)
    if read is None:
        return None
    grades, _, negative = read
    grades[negative] = -grades[negative]
    return grades


def _blocks(fields: _Fields, starts: IntArray, ends: IntArray) -> tuple[list[str], IntArray]:
    """Runs of equal values of a field: each run's text, and where each run opens."""
    words = _gather(fields, starts, ends).view(np.uint64)
    change = np.any(words[1:] != words[:-1], axis=1)
    opens = np.concatenate(([0], np.flatnonzero(change) + 1)).astype(np.int64)
    names = [fields.text(int(s), int(e)) for s, e in zip(starts[opens], ends[opens], strict=True)]
    return names, opens


def _mix(words: Words) -> Words:
    words *= MIX
    words ^= words >> np.uint64(31)
    return words


def _hash(docs: Words, query: IntArray) -> Words:
    """A 64-bit key of each (query, document) row: equal rows, equal keys (unequal rows
    that collide are caught by the byte-wise check after the search)."""
    keys = _mix(query.astype(np.uint64) + np.uint64(1))
    for column in range(docs.shape[1]):
        keys = _mix(keys ^ docs[:, column])
    return keys


@dataclass(frozen=True, eq=False)
class _Run:
    names: list[str]
    opens: IntArray
    """Row where each query's block opens, then the row count."""
    docs: Bytes
    score: FloatArray
    tag: str


@dataclass(frozen=True, eq=False)
class _Qrels:
    names: list[str]
    query: IntArray
    """Index into ``names`` of each judgment."""
    docs: Bytes
    grade: IntArray


def _read_run(path: Path) -> _Run | None:
    fields = _fields(path, 6)
    if fields is None:
        return None
    names, opens = _blocks(fields, *fields.column(0))
    if len(set(names)) != len(names):
        return None  # a query's lines apart: the exact reader orders them
    starts, ends = fields.column(4)
    score = _decimals(_gather(fields, starts, ends), ends - starts)
    if score is None:
        return None
    docs = _gather(fields, *fields.column(2))
    tag = fields.text(int(fields.starts[-1]), int(fields.ends[-1]))
    return _Run(names, np.append(opens, len(score)), docs, score, tag)


def _read_qrels(path: Path) -> _Qrels | None:
    fields = _fields(path, 4)
    if fields is None:
        return None
    starts, ends = fields.column(3)
    grade = _integers(_gather(fields, starts, ends), ends - starts)
    if grade is None:
        return None
    block_names, opens = _blocks(fields, *fields.column(0))
    index: dict[str, int] = {}
    block_index = np.array([index.setdefault(n, len(index)) for n in block_names], np.int64)
    query = np.repeat(block_index, np.diff(np.append(opens, len(grade))))
    return _Qrels(list(index), query, _gather(fields, *fields.column(2)), grade)


def _order(block: IntArray, score: FloatArray, docs: Words) -> IntArray | None:
    """trec_eval's order of the run's rows (score descending, then document id
    descending, within each query's block), None when the file's order already is.

    Runs are written best first: then only groups of tied scores move, sorted by one
    integer key (group, then the document's rank among all ids; one argsort measured 3x
    faster than a lexsort of group and id words)."""
    same = block[1:] == block[:-1]
    keys = [~docs[:, column] for column in reversed(range(docs.shape[1]))]
    if np.any(same & (score[1:] > score[:-1])):
        full: IntArray = np.lexsort((*keys, -score, block))
        return full
    tied = same & (score[1:] == score[:-1])
    if not np.any(tied):
        return None
    # rows i and i + 1 are in one group when tied[i]; only rows of some group move
    member = np.zeros(len(score), dtype=bool)
    member[:-1] = tied
    member[1:] |= tied
    rows = np.flatnonzero(member)
    opens = np.ones(len(rows), dtype=bool)
    opens[1:] = ~tied[rows[1:] - 1]
    group = np.cumsum(opens, dtype=np.int64)
    count = len(rows)
    by_id = np.argsort(keys[-1][rows]) if len(keys) == 1 else np.lexsort([k[rows] for k in keys])
    id_rank = np.empty(count, dtype=np.int64)
    id_rank[by_id] = np.arange(count, dtype=np.int64)
    order = np.arange(len(score), dtype=np.int64)
    order[rows] = rows[np.argsort(group * count + id_rank)]
    return order


def evaluate_plain(
    qrels: Path, run: Path, measures: Sequence[Measure], options: TrecOptions
) -> tuple[Evaluation, str] | None:
    """The evaluation of small plain files and the run's tag; None for any other files
    and when no query is evaluated (the exact readers then say why)."""
    try:
        if max(qrels.stat().st_size, run.stat().st_size) > PLAIN_LIMIT:
            return None
    except OSError:
        return None
    plain = read_table(qrels, run, options)
    if plain is None:
        return None
    table, absent, tag = plain
    if not table.num_queries:
        return None
    return evaluate_trec_table(table, measures, options, absent), tag


def read_table(
    qrels_path: Path, run_path: Path, options: TrecOptions
) -> tuple[RankTable, BoolArray, str] | None:
    """The table trec_eval evaluates under ``options``, which of its queries the run
    lacks, and the run's tag; None when either file is not plain (see the module doc)."""
    run = _read_run(run_path)
    if run is None:
        return None
    qrels = _read_qrels(qrels_path)
    if qrels is None:
        return None
    width = max(run.docs.shape[1], qrels.docs.shape[1])
    run_docs, judged_docs = _words(run.docs, width), _words(qrels.docs, width)
    rows = len(run.score)
    block = np.repeat(np.arange(len(run.names), dtype=np.int64), np.diff(run.opens))

    # queries in one numbering: the qrels' first, then the run's others
    common = {name: index for index, name in enumerate(qrels.names)}
    run_query = np.array([common.setdefault(n, len(common)) for n in run.names], np.int64)
    run_keys = _hash(run_docs, run_query[block])
    judged_keys = _hash(judged_docs, qrels.query)
    sorted_keys = np.sort(run_keys)
    if np.any(sorted_keys[1:] == sorted_keys[:-1]):
        return None  # a document returned twice (or two ids collide): the exact reader
    by_key = np.argsort(judged_keys)
    sorted_judged = judged_keys[by_key]
    if np.any(sorted_judged[1:] == sorted_judged[:-1]):
        return None  # a pair judged twice (or a collision): the exact reader
    found = np.minimum(np.searchsorted(sorted_judged, run_keys), max(len(by_key) - 1, 0))
    hit = np.flatnonzero(sorted_judged[found] == run_keys) if len(by_key) else found[:0]
    judgment = by_key[found[hit]]
    if not (
        np.array_equal(qrels.query[judgment], run_query[block[hit]])
        and np.array_equal(judged_docs[judgment], run_docs[hit])
    ):
        return None  # a hash collision: the exact reader compares strings

    order = _order(block, run.score, run_docs)
    rank_of = np.arange(rows, dtype=np.int64) - run.opens[block]
    if order is not None:
        rank_of[order] = rank_of.copy()
    table, missing = assemble_table(
        qrels.names,
        qrels.query,
        qrels.grade,
        run.names,
        np.diff(run.opens),
        block[hit],
        rank_of[hit],
        qrels.grade[judgment],
        options,
    )
    return table, missing, run.tag


def assemble_table(
    judged_names: Sequence[str],
    judged_query: IntArray,
    judged_grade: IntArray,
    run_names: Sequence[str],
    run_lengths: IntArray,
    hit_block: IntArray,
    hit_rank: IntArray,
    hit_grade: IntArray,
    options: TrecOptions,
) -> tuple[RankTable, BoolArray]:
    """The table trec_eval evaluates, and which of its queries the run lacks, from the
    judgments (query index into ``judged_names``, grade), the run's queries (names and
    lengths) and its judged rows (query index into ``run_names``, 0-based rank in trec
    order, grade); as the columnar join builds it. No document is returned twice."""
    ids = trec_query_ids(judged_names, run_names, options.complete)
    count = len(ids)
    final = {name: index for index, name in enumerate(ids)}
    judged_final = np.array([final.get(n, -1) for n in judged_names], dtype=np.int64)
    block_final = np.array([final.get(n, -1) for n in run_names], dtype=np.int64)

    row_query = block_final[hit_block]
    kept = row_query >= 0
    row_query, rank, grade = row_query[kept], hit_rank[kept], hit_grade[kept]
    # query by query, rank order within each: one integer key, usually already in order
    key = row_query * (int(rank.max(initial=0)) + 1) + rank
    if np.any(key[1:] < key[:-1]):
        by_query = np.argsort(key)  # keys are distinct: no document is returned twice
        row_query, rank, grade = row_query[by_query], rank[by_query], grade[by_query]

    num_ret = np.zeros(count, dtype=np.int64)
    evaluated = block_final >= 0
    num_ret[block_final[evaluated]] = run_lengths[evaluated]
    present = set(run_names)
    missing = np.array([name not in present for name in ids], dtype=bool)
    num_ret[missing] = 1  # trec_eval's one-document stand-in ranking (see STAND_IN)
    # trec_eval cuts at -M first, then -J drops every document without a grade >= 0
    if options.max_docs is not None:
        cut = rank < options.max_docs
        row_query, rank, grade = row_query[cut], rank[cut], grade[cut]
        num_ret = np.minimum(num_ret, options.max_docs)
    if options.judged_only:  # the rest close up their ranks
        judged = grade >= 0
        row_query, rank, grade = row_query[judged], rank[judged], grade[judged]
        rank, num_ret = _ranks(row_query, count)

    query_of_judgment = judged_final[judged_query]
    evaluated_judgment = query_of_judgment >= 0
    table = RankTable.from_columns(
        ids,
        options.relevance_level,
        query=row_query,
        rank=rank.astype(np.int64),
        grade=grade.astype(np.int64),
        num_ret=num_ret,
        judged_query=query_of_judgment[evaluated_judgment],
        judged_grade=judged_grade[evaluated_judgment],
    )
    return table, missing
