"""The fast path for large TREC files: Arrow's multi-threaded CSV reader.

It reads only what it reads exactly as the line reader does (see ``_trec_lines``), and
steps aside (returns None) for anything else, so that the line reader reads the file and
locates every problem: the size of a file never changes what is read.

A file is plain when its fields are separated by exactly one space, or exactly one tab, in
every line: no other ASCII whitespace (``\\v``, ``\\f``, the other separator, a ``\\r`` not
ending a line), no leading or trailing or doubled separator (no empty field), no line
starting with ``#``, no NUL byte and no byte order mark (Arrow skips one; trec_eval reads it
as part of the first id). Arrow then finds the same fields as C's ``isspace`` split, and
skips empty lines as the line reader does.
"""

from __future__ import annotations

import mmap
import re
from collections.abc import Sequence
from io import BufferedReader
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from recallbench.core._columns import arrow, as_numpy

QRELS_COLUMNS = ("query", "iteration", "doc", "grade")
RUN_COLUMNS = ("query", "q0", "doc", "rank", "score", "tag")
BLOCK_SIZE = 1 << 22
"""4 MiB blocks: measured fastest here, and they keep the reader's peak memory low."""
SCAN_BLOCK = 1 << 18
"""256 KiB: the byte scan's boolean temporaries stay in the CPU's cache (measured 2x faster
than 4 MiB blocks)."""
BOM = b"\xef\xbb\xbf"
NEVER_PLAIN = (b"\0", b"\v", b"\f")
NEWLINE, CR = ord("\n"), ord("\r")


def plain_delimiter(path: Path) -> str | None:
    """The one-byte field separator of a plain file, None when the file is not plain."""
    try:
        handle = path.open("rb")
    except OSError:
        return None
    with handle:
        return _plain(handle)


def _plain(handle: BufferedReader) -> str | None:
    """One pass over the bytes, block by block (read, not memory-mapped: mapped pages would
    count in the process's memory). Single bytes that are never plain are found by
    ``find`` (memchr speed); empty fields and lone ``\\r`` by :class:`_PairScan`. The
    first byte of each block's buffer is the previous block's last byte, so that pairs
    across blocks are seen; before the file's first byte it is a newline, so that a
    separator there is a leading one."""
    buffer = bytearray(SCAN_BLOCK + 1)
    buffer[0] = NEWLINE
    view = memoryview(buffer)
    size = handle.readinto(view[1:])
    if not size or buffer[1:4] == BOM:
        return None
    if buffer.find(b"\t", 1, size + 1) >= 0:
        sep = b"\t"
    elif buffer.find(b" ", 1, size + 1) >= 0:
        sep = b" "
    else:  # a first line of SCAN_BLOCK bytes and one field: the line reader refuses it
        return None
    never = (b" " if sep == b"\t" else b"\t", *NEVER_PLAIN)
    scan = _PairScan(buffer, sep[0])
    while size:
        if any(buffer.find(bad, 1, size + 1) >= 0 for bad in never):
            return None
        if scan.bad(size + 1, has_cr=buffer.find(b"\r", 0, size + 1) >= 0):
            return None
        buffer[0] = buffer[size]
        size = handle.readinto(view[1:])
    if buffer[0] in (sep[0], CR):  # a trailing separator, or a lone \r, ends the file
        return None
    return sep.decode()


class _PairScan:
    """Finds, in the first bytes of a buffer, two adjacent bytes that make an empty field
    (a separator next to another, or next to a line's start or end) or a lone ``\\r``
    (one not followed by ``\\n``).

    Its boolean arrays are allocated once and reused: numpy's fresh temporaries of a block's
    size measured 4x slower (each one new memory the kernel must zero)."""

    def __init__(self, buffer: bytearray, sep: int) -> None:
        self.codes = np.frombuffer(buffer, dtype=np.uint8)
        self.sep = sep
        self.is_sep = np.empty(len(buffer), dtype=bool)
        self.blank = np.empty(len(buffer), dtype=bool)
        self.other = np.empty(len(buffer), dtype=bool)
        self.pair = np.empty(len(buffer) - 1, dtype=bool)

    def bad(self, size: int, has_cr: bool) -> bool:
        codes, pair = self.codes[:size], self.pair[: size - 1]
        is_sep = np.equal(codes, self.sep, out=self.is_sep[:size])
        blank = np.equal(codes, NEWLINE, out=self.blank[:size])
        if has_cr:
            cr = np.equal(codes, CR, out=self.other[:size])
            not_newline = np.logical_not(blank[1:], out=pair)
            if np.logical_and(cr[:-1], not_newline, out=pair).any():
                return True
            np.logical_or(blank, cr, out=blank)
        np.logical_or(blank, is_sep, out=blank)
        # two blanks in a row: usually none (a file with LF line ends and no blank line)
        if not np.logical_and(blank[1:], blank[:-1], out=pair).any():
            return False
        # a blank line or a CRLF is two blanks in a row too: only one with a separator is bad
        either = np.logical_or(is_sep[1:], is_sep[:-1], out=self.other[: size - 1])
        return bool(np.logical_and(pair, either, out=pair).any())


_BLANK_LINE = re.compile(rb"\n[ \t\v\f\r]*\n|\n[ \t\v\f\r]+\Z|\A[ \t\v\f\r]*\n")
"""A line of whitespace only: Arrow skips it; in qrels the line reader refuses it."""


def has_blank_line(path: Path) -> bool:
    """Whether ``path`` has a line of whitespace only (the empty end after a last newline
    is not a line)."""
    try:
        with (
            path.open("rb") as handle,
            mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view,
        ):
            return _BLANK_LINE.search(view) is not None
    except (OSError, ValueError):  # unreadable, or empty (mmap refuses 0 bytes)
        return True  # the line reader reports it


def read_columns_fast(path: Path, names: Sequence[str], types: dict[str, str]) -> Any | None:
    """An Arrow table of the ``types`` columns, or None when the file is not plain or a
    field does not convert to its type (the line reader then reports it). Arrow still
    counts every line's fields (a wrong count is an error); the other columns are not
    converted: a plain file has no empty field in them."""
    delimiter = plain_delimiter(path)
    if delimiter is None:
        return None
    pa = arrow()
    from pyarrow import csv

    try:
        return csv.read_csv(
            path,
            read_options=csv.ReadOptions(column_names=list(names), block_size=BLOCK_SIZE),
            parse_options=csv.ParseOptions(
                delimiter=delimiter, quote_char=False, escape_char=False
            ),
            convert_options=csv.ConvertOptions(
                include_columns=list(types),
                column_types={name: getattr(pa, kind)() for name, kind in types.items()},
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError):
        return None


def encode(column: Any) -> tuple[Any, npt.NDArray[np.int32]]:
    """Distinct values (an Arrow array, first appearance order) and each row's index.

    Chunks are combined first: encoding chunk by chunk and unifying the dictionaries
    afterwards measured 2-4x slower here.
    """
    whole = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    encoded = whole.dictionary_encode()
    return encoded.dictionary, as_numpy(encoded.indices)


def encode_runs(column: Any) -> tuple[list[str], npt.NDArray[np.int32]] | None:
    """Like :func:`encode` for a column whose values come in runs (a query's lines are
    usually together): run-end encoding finds the runs without hashing every row. None
    when the runs are too short for that to pay."""
    pc = arrow().compute
    chunks = column.chunks if hasattr(column, "chunks") else [column]
    encoded = [pc.run_end_encode(chunk) for chunk in chunks if len(chunk)]
    if sum(len(chunk.values) for chunk in encoded) * 4 > max(len(column), 1):
        return None
    positions: dict[str, int] = {}
    values: list[int] = []
    lengths: list[npt.NDArray[np.int64]] = []
    for chunk in encoded:
        values += [positions.setdefault(v, len(positions)) for v in chunk.values.to_pylist()]
        ends: npt.NDArray[np.int64] = as_numpy(chunk.run_ends).astype(np.int64)
        lengths.append(np.diff(ends, prepend=0))
    if not values:
        return [], np.zeros(0, dtype=np.int32)
    return list(positions), np.repeat(np.array(values, dtype=np.int32), np.concatenate(lengths))


def encode_queries(column: Any) -> tuple[tuple[str, ...], npt.NDArray[np.int32]]:
    """Distinct query ids (first appearance order) and each row's index."""
    runs = encode_runs(column)
    if runs is None:
        distinct, index = encode(column)
        return tuple(distinct.to_pylist()), index
    names, index = runs
    return tuple(names), index


def last_line(path: Path) -> bytes:
    """The last line of a file that does not end with a blank line (a plain file)."""
    with path.open("rb") as handle:
        size = handle.seek(0, 2)
        window = 1 << 16
        while True:
            start = max(0, size - window)
            handle.seek(start)
            tail = handle.read(size - start).rstrip(b"\r\n")
            cut = tail.rfind(b"\n")
            if cut >= 0 or start == 0:
                return tail[cut + 1 :]
            window *= 4  # a line longer than the window: look further back


MIX = np.uint64(0xBF58476D1CE4E5B9)
"""An odd 64-bit multiplier (splitmix64's): multiplying spreads each word over the high bits."""
LITTLE = np.dtype("<u8")
"""Words read little-endian on any machine: an id's first bytes are then a word's low
bytes, the ones :data:`LOW_BYTES` keeps (native order on x86 and ARM: no cost)."""
LOW_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)
"""``LOW_BYTES[k]`` keeps the first ``k`` bytes of a little-endian word."""


def _mix(words: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    words *= MIX
    words ^= words >> np.uint64(31)
    return words


HASH_ROWS = 1 << 14
"""Ids hashed at a time: 16K rows keep each temporary at 128 KiB, memory the allocator
reuses from one slice to the next (temporaries of a whole chunk are fresh memory each
time, which measured 2x slower here)."""


class _Words:
    """The 8 bytes starting at any offset of an Arrow data buffer that ends at ``end``, as
    little-endian words (unaligned loads, which x86 and ARM allow), read in place: the
    last 7 offsets, whose 8 bytes would run past the buffer, are read from a zero-padded
    copy of its last bytes."""

    def __init__(self, data: Any, end: int) -> None:
        self.last = end - 8  # the last offset read in place
        self.main = np.ndarray((max(self.last + 1, 0),), dtype=LITTLE, buffer=data, strides=(1,))
        self.base = max(self.last, 0)
        tail = np.zeros(16, dtype=np.uint8)
        if end > self.base:
            tail[: end - self.base] = np.frombuffer(
                data, dtype=np.uint8, count=end - self.base, offset=self.base
            )
        self.tail = np.ndarray((9,), dtype=LITTLE, buffer=tail, strides=(1,))

    def at(self, offsets: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
        """The words at ``offsets`` (ascending: only the last ones can be near the end)."""
        if len(offsets) and offsets[-1] <= self.last:
            return self.main[offsets]
        if not len(self.main):
            return self.tail[offsets - self.base]
        words = self.main[np.minimum(offsets, self.last)]
        far = offsets > self.last
        words[far] = self.tail[offsets[far] - self.base]
        return words


def _string_hashes(column: Any) -> npt.NDArray[np.uint64]:
    """A 64-bit hash of each string of a column, read from Arrow's buffers eight bytes at
    a time (hashing in Arrow measured 8x slower here, byte by byte in numpy 4x)."""
    chunks = [c for c in (column.chunks if hasattr(column, "chunks") else [column]) if len(c)]
    hashes = np.empty(sum(len(chunk) for chunk in chunks), dtype=np.uint64)
    done = 0
    for chunk in chunks:
        _, offsets_buffer, data_buffer = chunk.buffers()
        offsets = np.frombuffer(
            offsets_buffer, dtype=np.int32, count=len(chunk) + 1, offset=chunk.offset * 4
        )
        words = _Words(data_buffer if data_buffer is not None else b"", int(offsets[-1]))
        for start in range(0, len(chunk), HASH_ROWS):
            bounds = offsets[start : start + HASH_ROWS + 1].astype(np.int64)
            hashes[done + start : done + start + len(bounds) - 1] = _hash_ids(bounds, words)
        done += len(chunk)
    return hashes


def _hash_ids(bounds: npt.NDArray[np.int64], words: _Words) -> npt.NDArray[np.uint64]:
    """The hash of each id from ``bounds[i]`` to ``bounds[i + 1]``: its length, then each
    of its 8-byte words (the last one cut to the id's bytes), mixed in turn."""
    starts, lengths = bounds[:-1], np.diff(bounds)
    hashes = _mix(lengths.astype(np.uint64))  # ids that differ only by trailing NULs differ
    if lengths.min() > 0:  # the usual case: every id's first word, without gathering rows
        hashes ^= words.at(starts) & LOW_BYTES[np.minimum(lengths, 8)]
        _mix(hashes)
        read = 8
    else:
        read = 0
    rows = np.flatnonzero(lengths > read)  # the ids with bytes left, ascending
    while len(rows):
        left = lengths[rows] - read
        word = words.at(starts[rows] + read) & LOW_BYTES[np.minimum(left, 8)]
        hashes[rows] = _mix(hashes[rows] ^ word)
        rows = rows[left > 8]
        read += 8
    return hashes


def unique_pairs(first: npt.NDArray[np.int32], second: Any) -> bool:
    """Whether no two rows have the same (``first``, ``second``) pair: ``first`` an index,
    ``second`` an Arrow string column. False may be a hash collision: callers then let the
    line reader, which compares the strings, decide.

    A pair can repeat only among the rows of one ``first`` value. When each value's rows
    are contiguous (the usual layout), whole blocks are hashed and checked about
    :data:`HASH_ROWS` rows at a time: no array the size of the file, and each block
    sorted on its own (measured 3x faster here than one sort of all rows)."""
    if len(first) < 2:
        return True
    bounds = _block_bounds(first)
    if bounds is None:  # a value's rows are not contiguous: one sort of all rows
        keys = _mix(_string_hashes(second) ^ _mix(first.astype(np.uint64) + np.uint64(1)))
        keys.sort()
        return not bool(np.any(keys[1:] == keys[:-1]))
    # groups of whole blocks: a group ends at the first block end past a multiple of
    # HASH_ROWS (a block longer than that is a group of its own)
    marks = np.searchsorted(bounds, np.arange(HASH_ROWS, len(first), HASH_ROWS))
    cuts = np.unique(np.concatenate(([0], marks, [len(bounds) - 1]))).tolist()
    for low, high in pairwise(cuts):
        start, end = int(bounds[low]), int(bounds[high])
        hashes = _string_hashes(second.slice(start, end - start))
        if not _unique_in_blocks(hashes, np.diff(bounds[low : high + 1])):
            return False
    return True


def _block_bounds(first: npt.NDArray[np.int32]) -> npt.NDArray[np.int64] | None:
    """Where each block of equal values starts, then the end; None when a value comes
    back after another."""
    starts = np.concatenate(([0], np.flatnonzero(first[1:] != first[:-1]) + 1))
    # blocks whose values are not all distinct: some value comes back (renumbered by first
    # appearance, the blocks' values are then 0, 1, 2, ... exactly when they are distinct)
    if len(np.unique(first[starts])) != len(starts):
        return None
    return np.append(starts, len(first)).astype(np.int64)


def _unique_in_blocks(hashes: npt.NDArray[np.uint64], lengths: npt.NDArray[np.int64]) -> bool:
    """Whether no hash repeats within a block (``lengths`` consecutive hashes each).

    Their high 32 bits are compared first (sorting them measured 2x faster); only when
    two of those are equal, which happens by chance in one block of 2000 of 1000 ids, are
    the blocks compared again on all 64 bits."""
    count, width = len(lengths), int(lengths.max())
    if count * width > 2 * len(hashes):  # blocks too uneven to pad: one sort
        keys = _mix(hashes ^ _mix(np.repeat(np.arange(1, count + 1, dtype=np.uint64), lengths)))
        keys.sort()
        return not bool(np.any(keys[1:] == keys[:-1]))
    high = (hashes >> np.uint64(32)).astype(np.uint32)
    return _unique_rows(high, lengths, width) or _unique_rows(hashes, lengths, width)


def _unique_rows(values: npt.NDArray[Any], lengths: npt.NDArray[np.int64], width: int) -> bool:
    """Whether no value repeats within a block, each block a row of a matrix ``width``
    wide (sorted in place; ``values`` is the caller's to give)."""
    count = len(lengths)
    if count * width == len(values):  # all blocks equally long
        padded = values.reshape(count, width)
    else:  # each block a row, padded with the largest value
        padded = np.full((count, width), np.iinfo(values.dtype).max, dtype=values.dtype)
        # value i of block b goes to b * width + (i - start of b)
        shift = np.arange(count, dtype=np.int64) * width - (np.cumsum(lengths) - lengths)
        padded.ravel()[np.arange(len(values)) + np.repeat(shift, lengths)] = values
    padded.sort(axis=1)
    # the padding sorts last: a row's first ``length`` values are its block's, sorted
    same = padded[:, 1:] == padded[:, :-1]
    if count * width != len(values):
        same &= np.arange(1, width) < lengths[:, None]
    return not bool(np.any(same))


def index_queries(queries: Sequence[str]) -> tuple[tuple[str, ...], npt.NDArray[np.int32]]:
    """Distinct ids in order of first appearance and each row's index into them."""
    positions: dict[str, int] = {}
    index = np.fromiter(
        (positions.setdefault(q, len(positions)) for q in queries),
        dtype=np.int32,
        count=len(queries),
    )
    return tuple(positions), index
