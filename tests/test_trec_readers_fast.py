"""The Arrow fast path's own checks: each reason it steps aside (a byte scan for layouts
Arrow would read differently) or refuses (pairs seen twice, found by hashing) gives what
the line reader gives, and the checks fire on the fast path itself, not by luck."""

from __future__ import annotations

from collections.abc import Iterator, Sized
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from recallbench.core import DatasetError
from recallbench.datasets import _fast_read, _trec
from recallbench.datasets._trec import read_qrels_columns, read_trec_qrels, read_trec_rankings


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    saved = _trec.SMALL_FILE, _fast_read.SCAN_BLOCK, _fast_read.HASH_ROWS
    yield
    _trec.SMALL_FILE, _fast_read.SCAN_BLOCK, _fast_read.HASH_ROWS = saved


def _outcome(read: object, path: Path) -> object:
    try:
        return read(path)  # type: ignore[operator]
    except DatasetError as error:
        return type(error).__name__, str(error)


def same_qrels(path: Path) -> object:
    """Both readers' outcome for a qrels file (asserting they agree)."""
    _trec.SMALL_FILE = 1 << 62
    exact = _outcome(read_trec_qrels, path)
    _trec.SMALL_FILE = 0
    assert _outcome(read_trec_qrels, path) == exact
    assert _outcome(lambda p: read_qrels_columns(p).to_dict(), path) == exact
    return exact


def same_run(path: Path) -> object:
    """Both readers' outcome for a run file (asserting they agree)."""
    _trec.SMALL_FILE = 1 << 62
    exact = _outcome(read_trec_rankings, path)
    _trec.SMALL_FILE = 0
    assert _outcome(read_trec_rankings, path) == exact
    return exact


def refused(outcome: object) -> tuple[str, str]:
    """The error's name and text of an outcome that is a refusal."""
    assert isinstance(outcome, tuple)
    name, message = outcome
    return str(name), str(message)


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


RUN = b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\nq2 Q0 d1 1 0.5 t\n"
QRELS = b"q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 2\n"

# every layout the byte scan sends to the line reader, each at the start, the middle and
# the end of a file (and across the scan's blocks, see below)
NOT_PLAIN_RUNS = {
    "byte order mark": b"\xef\xbb\xbf" + RUN,
    "tab in a space file": RUN.replace(b"d2 2", b"d2\t2"),
    "space in a tab file": RUN.replace(b" ", b"\t").replace(b"d2\t2", b"d2 2"),
    "NUL": RUN.replace(b"d2", b"d\x002"),
    "vertical tab": RUN.replace(b"d2 2", b"d2\x0b2"),
    "form feed": RUN.replace(b"d2 2", b"d2\x0c2"),
    "lone CR inside a line": RUN.replace(b"d2 2", b"d2\r2"),
    "lone CR ending a line": RUN.replace(b"1.5 t\n", b"1.5 t\r"),
    "CR CR LF": RUN.replace(b"1.5 t\n", b"1.5 t\r\r\n"),
    "lone CR ending the file": RUN + b"q3 Q0 d1 1 0.5 t\r",
    "doubled separator after the query": RUN.replace(b"q1 Q0 d2", b"q1  Q0 d2"),
    "doubled separator after Q0": RUN.replace(b"Q0 d2", b"Q0  d2"),
    "doubled separator after the document": RUN.replace(b"d2 2", b"d2  2"),
    "doubled separator after the rank": RUN.replace(b"2 1.5", b"2  1.5"),
    "doubled separator after the score": RUN.replace(b"1.5 t", b"1.5  t"),
    "empty Q0": RUN.replace(b"q1 Q0 d2 2", b"q1  d2 2 x"),
    "empty rank": RUN.replace(b"d2 2 1.5 t", b"d2  1.5 t"),
    "empty tag": RUN.replace(b"1.5 t\n", b"1.5 \n"),
    "empty tag before CRLF": RUN.replace(b"1.5 t\n", b"1.5 \r\n"),
    "empty tag ending the file": RUN + b"q3 Q0 d1 1 0.5 ",
    "leading separator": RUN.replace(b"q1 Q0 d2", b" q1 Q0 d2"),
    "leading separator on the first line": b" " + RUN,
    "leading separator after CRLF": RUN.replace(b"\n", b"\r\n").replace(b"\nq2", b"\n q2"),
    "blank line of a separator": RUN.replace(b"t\nq2", b"t\n \nq2"),
    "trailing separator": RUN.replace(b"2.5 t\n", b"2.5 t \n"),
}


@pytest.mark.parametrize("name", list(NOT_PLAIN_RUNS))
def test_layouts_the_fast_path_leaves_to_the_line_reader(tmp_path: Path, name: str) -> None:
    run = write(tmp_path / "run", NOT_PLAIN_RUNS[name])
    assert _trec._fast_run(run) is None
    same_run(run)
    qrels_bytes = (
        NOT_PLAIN_RUNS[name]
        .replace(b" Q0 ", b" 0 ")
        .replace(b"\tQ0\t", b"\t0\t")
        .replace(b"  Q0 ", b"  0 ")
    )
    same_qrels(write(tmp_path / "qrels", qrels_bytes))


@pytest.mark.parametrize("block", [3, 4, 5, 8])
@pytest.mark.parametrize("name", list(NOT_PLAIN_RUNS))
def test_the_scan_sees_pairs_across_its_blocks(tmp_path: Path, name: str, block: int) -> None:
    """The byte scan reads the file in blocks: a pair of bytes split between two blocks
    is seen as well (the first block holds the first separator: 3 bytes or more)."""
    _fast_read.SCAN_BLOCK = block
    run = write(tmp_path / "run", NOT_PLAIN_RUNS[name])
    assert _fast_read.plain_delimiter(run) is None or name in {
        "empty Q0"  # one separator in a row: Arrow's field count refuses it instead
    }
    assert _trec._fast_run(run) is None
    same_run(run)


@pytest.mark.parametrize("block", [3, 4, 5, 1 << 18])
@pytest.mark.parametrize(
    ("data", "separator"),
    [
        (RUN, " "),
        (RUN.replace(b" ", b"\t"), "\t"),
        (RUN.replace(b"\n", b"\r\n"), " "),
        (RUN.replace(b"t\nq2", b"t\n\n\r\n\nq2"), " "),  # blank lines, LF and CRLF
        (RUN.rstrip(b"\n"), " "),  # no newline at the end
        (RUN.replace(b"d1", "d\u00a0\u3000é".encode()), " "),  # non-ASCII bytes are data
        (RUN.replace(b"Q0", b"\xff"), " "),  # never decoded
    ],
)
def test_plain_layouts_stay_on_the_fast_path(
    tmp_path: Path, data: bytes, separator: str, block: int
) -> None:
    _fast_read.SCAN_BLOCK = block
    run = write(tmp_path / "run", data)
    assert _fast_read.plain_delimiter(run) == separator
    assert _trec._fast_run(run) is not None
    same_run(run)


def test_a_first_block_without_separator_steps_aside(tmp_path: Path) -> None:
    """The separator is the first block's; a first line longer than a block and without
    any separator is one field, which the line reader refuses."""
    _fast_read.SCAN_BLOCK = 4
    run = write(tmp_path / "run", b"abcdefgh\tQ0\td\t1\t1\tt\n")
    assert _fast_read.plain_delimiter(run) is None
    same_run(run)


@pytest.mark.parametrize(
    "token", ["nan", "NaN", "inf", "-inf", "NULL", "null", "NA", "N/A", "#N/A", "0x10", "1e999"]
)
def test_scores_arrow_reads_but_the_line_reader_refuses(tmp_path: Path, token: str) -> None:
    run = write(tmp_path / "run", RUN.replace(b"1.5", token.encode()))
    assert _trec._fast_run(run) is None
    name, message = refused(same_run(run))
    assert name == "RunFileError"
    assert "run:2: score must be a number" in message


@pytest.mark.parametrize("token", ["NA", "null", "1.0", "0x1", "+", "9" * 20, "1e3"])
def test_grades_arrow_reads_but_the_line_reader_refuses(tmp_path: Path, token: str) -> None:
    qrels = write(tmp_path / "qrels", QRELS.replace(b"d2 0", b"d2 " + token.encode()))
    assert _trec._fast_qrels(qrels) is None
    name, message = refused(same_qrels(qrels))
    assert name == "DatasetError"
    assert "qrels:2: grade must be an integer" in message


def test_comment_lines_step_aside(tmp_path: Path) -> None:
    run = write(tmp_path / "run", RUN + b"#q Q0 d 1 1 t\n")
    assert _trec._fast_run(run) is None
    same_run(run)
    qrels = write(tmp_path / "qrels", b"#c 0 d 1\n" + QRELS)
    assert _trec._fast_qrels(qrels) is None
    assert same_qrels(qrels) == {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": 2}}


# --- pairs seen twice ----------------------------------------------------------------------


def _run_lines(queries: list[str], docs: list[str]) -> bytes:
    return "".join(
        f"{q} Q0 {d} {rank} {100 - rank} t\n"
        for rank, (q, d) in enumerate(zip(queries, docs, strict=True))
    ).encode()


def _duplicate_layouts() -> dict[str, tuple[list[str], list[str]]]:
    long = "x" * 37
    grouped_q = ["a"] * 6 + ["b"] * 6 + ["c"] * 6
    docs = [f"d{i}" for i in range(18)]
    return {
        "in one query": (grouped_q, [*docs[:3], docs[1], *docs[4:]]),
        "last rows of a block": (grouped_q, [*docs[:10], docs[10], docs[10], *docs[12:]]),
        "last rows of the file": (grouped_q, [*docs[:17], docs[16]]),
        "blocks of uneven lengths": (grouped_q[2:], [*docs[:13], docs[12], docs[15], docs[16]]),
        "interleaved queries": (
            ["a", "b", "a", "b", "a", "b"],
            ["d1", "d1", "d2", "d2", "d3", "d1"],
        ),
        "one long block and short ones": (
            ["a"] * 14 + ["b", "c", "d", "d"],
            [*docs[:14], "x", "x", "x", "x"],
        ),
        "long ids differing at the end": (
            ["a"] * 4,
            [long + "1", long + "2", long + "12", long + "2"],
        ),
        "ids differing only by length": (["a"] * 3, ["d", "dd", "dd"]),
        "non-ASCII ids": (["a"] * 3, ["\u00e9", "e\u0301", "\u00e9"]),
    }


@pytest.mark.parametrize("rows", [1, 3, 8, 1 << 14])
@pytest.mark.parametrize("layout", list(_duplicate_layouts()))
def test_duplicates_found_by_hashing_name_both_lines(
    tmp_path: Path, layout: str, rows: int
) -> None:
    """Whatever the layout and however the rows are cut into hashed groups."""
    _fast_read.HASH_ROWS = rows
    queries, docs = _duplicate_layouts()[layout]
    run = write(tmp_path / "run", _run_lines(queries, docs))
    assert _trec._fast_run(run) is None
    name, message = refused(same_run(run))
    assert name == "RunFileError"
    assert "returned twice for query" in message
    assert f"(first at {run}:" in message
    qrels_bytes = "".join(f"{q} 0 {d} 1\n" for q, d in zip(queries, docs, strict=True))
    qrels = write(tmp_path / "qrels", qrels_bytes.encode())
    assert _trec._fast_qrels(qrels) is None
    name, message = refused(same_qrels(qrels))
    assert "judged twice for query" in message


@pytest.mark.parametrize("rows", [1, 3, 1 << 14])
@pytest.mark.parametrize("layout", list(_duplicate_layouts()))
def test_distinct_pairs_stay_on_the_fast_path(tmp_path: Path, layout: str, rows: int) -> None:
    """The same layouts with every pair made distinct are read by the fast path."""
    _fast_read.HASH_ROWS = rows
    queries, docs = _duplicate_layouts()[layout]
    seen: set[tuple[str, str]] = set()
    distinct = []
    for query, doc in zip(queries, docs, strict=True):
        while (query, doc) in seen:
            doc += "_"
        seen.add((query, doc))
        distinct.append(doc)
    run = write(tmp_path / "run", _run_lines(queries, distinct))
    assert _trec._fast_run(run) is not None
    same_run(run)


def test_a_hash_collision_steps_aside_rather_than_refuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Equal hashes of different ids (made here by a hash that gives every id the same
    value) leave the file to the line reader, which compares the ids themselves."""

    def collide(column: Sized) -> npt.NDArray[np.uint64]:
        return np.zeros(len(column), dtype=np.uint64)

    monkeypatch.setattr(_fast_read, "_string_hashes", collide)
    run = write(tmp_path / "run", RUN)
    assert _trec._fast_run(run) is None
    assert same_run(run) == ({"q1": ["d1", "d2"], "q2": ["d1"]}, "t")


@pytest.mark.parametrize("run_bytes", [RUN, RUN + b"q2 Q0 d3 2 0.25 t\n"])
def test_hashes_equal_in_their_high_half_only_stay_on_the_fast_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_bytes: bytes
) -> None:
    """Blocks are first compared on their hashes' high 32 bits; equal high halves (made
    here for every id) are compared again on all 64 bits, not refused."""

    def low_only(column: Sized) -> npt.NDArray[np.uint64]:
        return np.arange(len(column), dtype=np.uint64)

    monkeypatch.setattr(_fast_read, "_string_hashes", low_only)
    run = write(tmp_path / "run", run_bytes)
    assert _trec._fast_run(run) is not None
    same_run(run)


def test_string_hashes_depend_on_the_bytes_only() -> None:
    """Equal ids hash equally wherever they are (chunk, offset, end of a buffer); ids that
    differ, by one byte, by length or by trailing NUL bytes, hash differently."""
    pa = pytest.importorskip("pyarrow")
    ids = ["", "a", "a\x00", "a\x00\x00", "abcdefgh", "abcdefgh\x00", "abcdefghi", "é"]
    ids += ["x" * n for n in range(1, 30)] + ["y" * 15 + "z", "y" * 16]
    whole = pa.array(ids * 2, pa.string())
    chunked = pa.chunked_array([whole.slice(0, 3), whole.slice(3, 30), whole.slice(33)])
    for column in (whole, chunked, whole.slice(5)):
        hashes = _fast_read._string_hashes(column).tolist()
        values = column.to_pylist()
        assert len(set(hashes)) == len(set(values))
        by_value = dict(zip(values, hashes, strict=True))
        assert [by_value[value] for value in values] == hashes
