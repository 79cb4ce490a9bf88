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
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from recallbench.core._columns import arrow, as_numpy

QRELS_COLUMNS = ("query", "iteration", "doc", "grade")
RUN_COLUMNS = ("query", "q0", "doc", "rank", "score", "tag")
BLOCK_SIZE = 1 << 22
"""4 MiB blocks: measured fastest here, and they keep the reader's peak memory low."""
LONE_CR = re.compile(rb"\r(?!\n)")


def plain_delimiter(path: Path) -> str | None:
    """The one-byte field separator of a plain file, None when the file is not plain."""
    try:
        handle = path.open("rb")
    except OSError:
        return None
    with handle:
        if not path.stat().st_size:
            return None
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _plain(data)


def _plain(data: mmap.mmap) -> str | None:
    """Single-byte checks only (memchr speed): an empty field, which a doubled, leading or
    trailing separator makes, is found in the table (:func:`has_empty_field`); a comment
    line by its query id starting with ``#``; blank lines both readers skip."""
    sep = b"\t" if data.find(b"\t") >= 0 else b" "
    other = b" " if sep == b"\t" else b"\t"
    if data[:3] == b"\xef\xbb\xbf" or any(
        data.find(bad) >= 0 for bad in (other, b"\0", b"\v", b"\f")
    ):
        return None
    if data.find(b"\r") >= 0 and LONE_CR.search(data) is not None:
        return None
    return sep.decode()


def has_empty_field(table: Any) -> bool:
    """Whether a column holds an empty field (C's split would see one field fewer)."""
    pc = arrow().compute
    for column in table.columns:
        for chunk in column.chunks:
            values = chunk.dictionary if hasattr(chunk, "dictionary") else chunk
            if len(values) and pc.min(pc.binary_length(values)).as_py() == 0:
                return True
    return False


def read_columns_fast(path: Path, names: Sequence[str], types: dict[str, str]) -> Any | None:
    """An Arrow table of the ``types`` columns, or None when the file is not plain or a
    field does not convert to its type (the line reader then reports it). The other
    columns are read too, dictionary-encoded (they repeat), to find empty fields."""
    delimiter = plain_delimiter(path)
    if delimiter is None:
        return None
    pa = arrow()
    from pyarrow import csv

    try:
        table = csv.read_csv(
            path,
            read_options=csv.ReadOptions(column_names=list(names), block_size=BLOCK_SIZE),
            parse_options=csv.ParseOptions(
                delimiter=delimiter, quote_char=False, escape_char=False
            ),
            convert_options=csv.ConvertOptions(
                column_types={
                    name: getattr(pa, types[name])()
                    if name in types
                    else pa.dictionary(pa.int32(), pa.binary())
                    for name in names
                },
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError):
        return None
    if has_empty_field(table.select([name for name in names if types.get(name) != "float64"])):
        return None
    return table.select(list(types))


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


WEIGHTS = np.random.default_rng(20251126).integers(1, 2**63, 64, dtype=np.uint64) | np.uint64(1)


def _string_hashes(column: Any) -> npt.NDArray[np.uint64]:
    """A 64-bit hash of each string of a column without empty strings, computed from
    Arrow's buffers in a few numpy passes (hashing in Arrow measured 8x slower here)."""
    parts = []
    for chunk in column.chunks if hasattr(column, "chunks") else [column]:
        if not len(chunk):
            continue
        _, offsets_buffer, data_buffer = chunk.buffers()
        offsets = np.frombuffer(
            offsets_buffer, dtype=np.int32, count=len(chunk) + 1, offset=chunk.offset * 4
        ).astype(np.int64)
        data = np.frombuffer(data_buffer, dtype=np.uint8)[offsets[0] : offsets[-1]]
        starts = offsets[:-1] - offsets[0]
        lengths = np.diff(offsets)
        position = np.arange(len(data), dtype=np.int64) - np.repeat(starts, lengths)
        mixed = (data.astype(np.uint64) + np.uint64(1)) * WEIGHTS[position % len(WEIGHTS)]
        parts.append(np.add.reduceat(mixed, starts) ^ lengths.astype(np.uint64))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)


def unique_pairs(first: npt.NDArray[np.int32], second: Any) -> bool:
    """Whether no two rows have the same (``first``, ``second``) pair: ``first`` an index,
    ``second`` an Arrow string column without empty strings. False may be a hash
    collision: callers then let the line reader, which compares the strings, decide."""
    if len(first) < 2:
        return True
    keys = _string_hashes(second) + first.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    keys.sort()
    return not bool(np.any(keys[1:] == keys[:-1]))


def index_queries(queries: Sequence[str]) -> tuple[tuple[str, ...], npt.NDArray[np.int32]]:
    """Distinct ids in order of first appearance and each row's index into them."""
    positions: dict[str, int] = {}
    index = np.fromiter(
        (positions.setdefault(q, len(positions)) for q in queries),
        dtype=np.int32,
        count=len(queries),
    )
    return tuple(positions), index
