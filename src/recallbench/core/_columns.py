"""Judgments and rankings as columns: the form large files are read and joined in.

Strings stay in Arrow arrays (compact, hashed in C++); everything numeric is numpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True, eq=False)
class QrelsColumns:
    """One row per judgment."""

    query_names: tuple[str, ...]
    """Distinct query ids, in order of first appearance."""
    query: npt.NDArray[np.int32]
    """Index into ``query_names`` of each judgment."""
    doc_names: pa.Array
    """Document ids (strings), one per judgment or distinct (see ``doc``)."""
    doc: npt.NDArray[np.int32] | None
    """Index into ``doc_names`` of each judgment, equal ids with equal indices (the first
    occurrence's); None when ``doc_names`` is the judgments' own column, left for the join
    to resolve in the same hash lookup as the run's ids."""
    grade: npt.NDArray[np.int64]

    def to_dict(self) -> dict[str, dict[str, int]]:
        qrels: dict[str, dict[str, int]] = {name: {} for name in self.query_names}
        docs = self.doc_names.to_pylist()
        index = self.doc.tolist() if self.doc is not None else range(len(docs))
        for q, d, grade in zip(self.query.tolist(), index, self.grade.tolist(), strict=True):
            qrels[self.query_names[q]][docs[d]] = grade
        return qrels


@dataclass(eq=False)
class RunColumns:
    """One row per returned document.

    Not frozen: a join that owns the columns drops the scores and document ids as soon as
    it is done with them (:meth:`release`), which lowers the peak memory of evaluating a
    run of tens of millions of lines by their size.
    """

    query_names: tuple[str, ...]
    query: npt.NDArray[np.int32]
    """Index into ``query_names`` of each row (int32: runs have millions of rows)."""
    doc: pa.Array | pa.ChunkedArray
    score: npt.NDArray[np.float64]
    tag: str
    ordered: bool = False
    """True when rows are already in the order to evaluate (a system's own order); False for
    TREC files, which are ordered by score descending, ties by document id descending."""

    def __len__(self) -> int:
        return len(self.query)

    def release(self, what: str) -> None:
        """Drop the ``"score"`` or ``"doc"`` column (the join that owns the run calls it)."""
        if what == "score":
            self.score = np.zeros(0)
        elif what == "doc":
            self.doc = arrow().chunked_array([], type=arrow().string())


def arrow() -> Any:
    """pyarrow, imported on first use (it costs ~0.15 s to import)."""
    import pyarrow
    import pyarrow.compute

    return pyarrow


def release_arrow_memory() -> None:
    """Hand memory Arrow's allocator keeps after a large step back to the system, so that
    the next step's peak does not stack on it (measured: 205 -> 165 MB after a 26 MB qrels)."""
    arrow().default_memory_pool().release_unused()


NUMERIC = {
    "int8": np.int8,
    "int32": np.int32,
    "int64": np.int64,
    "uint64": np.uint64,
    "double": np.float64,
}


def as_numpy(values: Any, null: int | None = None) -> npt.NDArray[Any]:
    """A numeric Arrow array or chunked array as a numpy array (a view of Arrow's buffer
    when there is one chunk and no null), nulls replaced by ``null`` (an error if None).

    pyarrow's own ``to_numpy`` and ``fill_null`` import pandas whenever pandas is
    installed, which costs 0.25 s on the first call; reading the buffers directly does not."""
    chunks = values.chunks if hasattr(values, "chunks") else [values]
    parts = []
    for chunk in chunks:
        dtype = np.dtype(NUMERIC[str(chunk.type)])
        validity, buffer = chunk.buffers()[:2]
        part = (
            np.frombuffer(
                buffer, dtype=dtype, count=len(chunk), offset=chunk.offset * dtype.itemsize
            )
            if buffer is not None
            else np.zeros(0, dtype=dtype)
        )
        if chunk.null_count:
            if null is None:
                raise ValueError("as_numpy: the array has nulls")
            bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
            valid = bits[chunk.offset : chunk.offset + len(chunk)].astype(bool)
            part = np.where(valid, part, null).astype(dtype, copy=False)
        parts.append(part)
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=NUMERIC[str(values.type)])


def from_numpy(values: npt.NDArray[Any]) -> Any:
    """A numeric numpy array as an Arrow array sharing its memory (``pa.array`` imports
    pandas, see :func:`as_numpy`)."""
    pa = arrow()
    kind = {dtype: name for name, dtype in NUMERIC.items()}[values.dtype.type]
    contiguous = np.ascontiguousarray(values)
    return pa.Array.from_buffers(
        getattr(pa, "float64" if kind == "double" else kind)(),
        len(contiguous),
        [None, pa.py_buffer(contiguous)],
    )


def take(values: Any, rows: npt.NDArray[np.int64]) -> Any:
    """``values[rows]`` as an Arrow array. For a chunked array each chunk gives its own
    rows: Arrow's own take first joins all the chunks into one copy (40 ms for 7M ids)."""
    if not hasattr(values, "chunks"):
        return values.take(from_numpy(rows))
    pa = arrow()
    ascending = bool(np.all(rows[1:] >= rows[:-1]))
    order = None if ascending else np.argsort(rows, kind="stable")
    ordered = rows if order is None else rows[order]
    bounds = np.cumsum([0] + [len(chunk) for chunk in values.chunks])
    cuts = np.searchsorted(ordered, bounds)
    parts = [
        chunk.take(from_numpy(ordered[start:end] - offset))
        for chunk, offset, start, end in zip(
            values.chunks, bounds[:-1].tolist(), cuts[:-1].tolist(), cuts[1:].tolist(), strict=True
        )
        if end > start
    ]
    if not parts:
        return pa.array([], type=values.type)
    joined = pa.concat_arrays(parts)
    if order is None:
        return joined
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return joined.take(from_numpy(inverse))
