"""Arrow <-> numpy conversion of numeric columns without pyarrow's pandas-importing paths."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from recallbench.core._columns import as_numpy, from_numpy, take


def test_as_numpy_reads_slices_chunks_and_replaces_nulls() -> None:
    array = pa.array([5, None, 7, 8, None, 10], type=pa.int32())
    assert as_numpy(array, null=-1).tolist() == [5, -1, 7, 8, -1, 10]
    assert as_numpy(array.slice(2, 3), null=-1).tolist() == [7, 8, -1]
    assert as_numpy(array.slice(2, 2)).tolist() == [7, 8]  # the slice has no null
    chunked = pa.chunked_array([pa.array([1.5, 2.5]), pa.array([], pa.float64()), pa.array([3.0])])
    assert as_numpy(chunked).tolist() == [1.5, 2.5, 3.0]
    assert as_numpy(pa.chunked_array([], type=pa.int64())).dtype == np.int64
    with pytest.raises(ValueError, match="nulls"):
        as_numpy(array)


def test_from_numpy_round_trips() -> None:
    values = np.array([3, 1, 2], dtype=np.int64)[::-1]  # not contiguous
    arrow = from_numpy(values)
    assert arrow.type == pa.int64()
    assert arrow.to_pylist() == [2, 1, 3]
    assert as_numpy(from_numpy(np.array([0.5]))).tolist() == [0.5]


def test_take_from_chunks_in_any_order() -> None:
    chunked = pa.chunked_array(
        [pa.array(["a", "b"]), pa.array([], pa.string()), pa.array(["c", "d", "e"])]
    )
    assert take(chunked, np.array([4, 0, 2, 2, 1], dtype=np.int64)).to_pylist() == list("eaccb")
    assert take(chunked, np.array([1, 3], dtype=np.int64)).to_pylist() == ["b", "d"]
    assert take(chunked, np.zeros(0, dtype=np.int64)).to_pylist() == []
    assert take(pa.array(["x", "y"]), np.array([1], dtype=np.int64)).to_pylist() == ["y"]
