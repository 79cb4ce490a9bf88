"""The two TREC readers (the exact line reader, the compiled engine's reader) read the
same bytes the same way, in the same order, and read what trec_eval 10.0 reads or refuse
with a location (the compiled reader declines whatever it does not take, and the line
reader reports it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallbench.core import DatasetError
from recallbench.datasets._trec import read_trec_qrels, read_trec_rankings
from recallbench.measures import _files

Outcome = object

needs_compiled = pytest.mark.skipif(
    _files._ctrec is None, reason="recallbench.measures._ctrec was not built (no C compiler)"
)


def _ordered(value: Any) -> Any:
    """Dicts as lists of items, so that order counts in a comparison."""
    if isinstance(value, dict):
        return [(key, _ordered(item)) for key, item in value.items()]
    if isinstance(value, tuple):
        return tuple(_ordered(item) for item in value)
    return value


def _outcome(read: object, path: Path) -> Outcome:
    try:
        return read(path)  # type: ignore[operator]
    except DatasetError as error:
        return type(error).__name__, str(error)


def both_qrels(path: Path) -> Outcome:
    """What both readers make of a qrels file (asserting they agree)."""
    exact = _outcome(read_trec_qrels, path)
    assert _ordered(_outcome(_files.read_qrels, path)) == _ordered(exact)
    return exact


def both_runs(path: Path) -> Outcome:
    """What both readers make of a run file (asserting they agree)."""
    exact = _outcome(read_trec_rankings, path)
    assert _ordered(_outcome(_files.read_rankings, path)) == _ordered(exact)
    return exact


def write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


# --- regressions from the issue (each failed on the old readers) -------------------------


def test_non_ascii_spaces_are_part_of_ids_on_both_paths(tmp_path: Path) -> None:
    """C's isspace knows only ASCII blanks: U+00A0 and U+3000 belong to the id."""
    qrels = write(tmp_path / "qrels", "q\u00a01 0 d\u30001 1\nq2 0 d2 0\n")
    assert both_qrels(qrels) == {"q\u00a01": {"d\u30001": 1}, "q2": {"d2": 0}}
    run = write(tmp_path / "run", "q\u00a01 Q0 d\u2003x 1 1.5 t\n")
    assert both_runs(run) == ({"q\u00a01": ["d\u2003x"]}, "t")


@pytest.mark.parametrize("token", ["1_000", "\uff11", "0x1p3", "1e", "abc", "nan", "inf", "1e999"])
def test_scores_trec_eval_reads_in_part_are_refused(tmp_path: Path, token: str) -> None:
    run = write(tmp_path / "run", f"q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 {token} t\n")
    name, message = both_runs(run)  # type: ignore[misc]
    assert name == "RunFileError"
    assert f"run:2: score must be a number, got {token!r}" in message


@pytest.mark.parametrize(
    "token", ["1_000", "\uff11", "0x10", "1.0", "1e3", "", "99999999999999999999"]
)
def test_grades_trec_eval_reads_in_part_are_refused(tmp_path: Path, token: str) -> None:
    qrels = write(tmp_path / "qrels", f"q1 0 d1 1\nq1 0 d2 {token}\n")
    name, message = both_qrels(qrels)  # type: ignore[misc]
    assert name == "DatasetError"
    if token:
        assert f"qrels:2: grade must be an integer, got {token!r}" in message
    else:
        assert "qrels:2: expected 4 fields" in message


def test_numbers_c_and_python_agree_on_are_read(tmp_path: Path) -> None:
    run = write(
        tmp_path / "run",
        "q Q0 a 1 +.5 t\nq Q0 b 1 1. t\nq Q0 c 1 -0 t\nq Q0 d 1 1E+2 t\nq Q0 e 1 007 t\n",
    )
    assert both_runs(run) == ({"q": ["d", "e", "b", "a", "c"]}, "t")
    qrels = write(tmp_path / "qrels", "q 0 a +2\nq 0 b -1\nq 0 c 007\n")
    assert both_qrels(qrels) == {"q": {"a": 2, "b": -1, "c": 7}}


def test_duplicate_judgments_are_refused_naming_both_lines(tmp_path: Path) -> None:
    qrels = write(tmp_path / "qrels", "q1 0 d1 1\nq1 0 d2 0\nq1 0 d1 1\n")
    name, message = both_qrels(qrels)  # type: ignore[misc]
    assert name == "DatasetError"
    assert f"qrels:3: document 'd1' judged twice for query 'q1' (first at {qrels}:1)" in message


def test_documents_returned_twice_are_refused_naming_both_lines(tmp_path: Path) -> None:
    run = write(tmp_path / "run", "q1 Q0 d1 1 2 t\nq2 Q0 d1 1 2 t\nq1 Q0 d1 2 1 t\n")
    name, message = both_runs(run)  # type: ignore[misc]
    assert name == "RunFileError"
    assert f"run:3: document 'd1' returned twice for query 'q1' (first at {run}:1)" in message


def test_run_tag_is_the_last_lines_tag(tmp_path: Path) -> None:
    """trec_eval's runid: every line overwrites one pointer (m_runid.c prints it)."""
    run = write(tmp_path / "run", "q1 Q0 a 1 2 first\nq1 Q0 b 2 1 second\nq2 Q0 a 1 1 last\n")
    assert both_runs(run) == ({"q1": ["a", "b"], "q2": ["a"]}, "last")


def test_bytes_that_are_not_utf8_are_located(tmp_path: Path) -> None:
    qrels = write(tmp_path / "qrels", b"q1 0 d1 1\nq1 0 d\xff 1\n")
    name, message = both_qrels(qrels)  # type: ignore[misc]
    assert name == "DatasetError"
    assert "qrels:2: document id is not UTF-8 (byte 2): b'd\\xff'" in message
    run = write(tmp_path / "run", b"q1 Q0 d1 1 1 t\xe9\n")
    name, message = both_runs(run)  # type: ignore[misc]
    assert "run:1: run tag is not UTF-8" in message


def test_empty_files(tmp_path: Path) -> None:
    """trec_eval refuses both; recallbench refuses judgments that judge nothing and reads
    an empty run as a run without results (what a system that found nothing writes)."""
    qrels = write(tmp_path / "qrels", "")
    assert both_qrels(qrels) == (
        "DatasetError",
        f"{qrels}: 1 problem\n  {qrels}: no judgments (empty or only comments)",
    )
    assert both_qrels(write(qrels, "# only a comment\n"))[0] == "DatasetError"  # type: ignore[index]
    assert both_runs(write(tmp_path / "run", "")) == ({}, "run")


def test_field_counts(tmp_path: Path) -> None:
    assert "expected 6 fields" in both_runs(write(tmp_path / "r5", "q Q0 d 1 2\n"))[1]  # type: ignore[index]
    assert both_runs(write(tmp_path / "r7", "q Q0 d 1 2 t extra\n")) == ({"q": ["d"]}, "t")
    for name, line in (("q3", "q 0 d\n"), ("q5", "q 0 d 1 x\n")):
        assert "expected 4 fields" in both_qrels(write(tmp_path / name, line))[1]  # type: ignore[index]
    assert both_qrels(write(tmp_path / "neg", "q 0 d -1\n")) == {"q": {"d": -1}}


def test_layouts_a_csv_reader_would_read_differently(tmp_path: Path) -> None:
    """A byte order mark (a CSV reader skips it), a lone CR (one ends the line there), an
    empty field from a doubled separator (one keeps it), a vertical tab (C splits there)."""
    bom = write(tmp_path / "bom", b"\xef\xbb\xbfq 0 d 1\n")
    assert both_qrels(bom) == {"\ufeffq": {"d": 1}}
    lone_cr = write(tmp_path / "cr", "q 0 d 1\rq 0 e 1\n")
    assert "expected 4 fields" in both_qrels(lone_cr)[1]  # type: ignore[index]
    doubled = write(tmp_path / "doubled", "q Q0 d  1.0 t\n")
    assert "expected 6 fields" in both_runs(doubled)[1]  # type: ignore[index]
    vtab = write(tmp_path / "vtab", "q\x0b0 d 1\n")
    assert both_qrels(vtab) == {"q": {"d": 1}}


def test_comments_follow_trec_eval(tmp_path: Path) -> None:
    """qrels: '#' in the first column only; run: also after leading blanks."""
    qrels = write(tmp_path / "qrels", "# c\n #q 0 d 1\n# c\nq 0 d#1 1\n")
    assert both_qrels(qrels) == {"#q": {"d": 1}, "q": {"d#1": 1}}
    run = write(tmp_path / "run", "  # c\n\n\t\nq Q0 d#1 1 1 t\n")
    assert both_runs(run) == ({"q": ["d#1"]}, "t")


# --- the same generated bytes through both readers ---------------------------------------

ID_CHARS = st.sampled_from(list("aZ09_-.:/'\"#\u00a0\u3000\u00e9\u4e2d\U0001f600\\,;"))
IDS = st.one_of(
    st.text(ID_CHARS, min_size=1, max_size=6),
    st.text(ID_CHARS, min_size=300, max_size=400),  # very long ids
)
SEPARATORS = st.sampled_from([" ", "\t", "  ", " \t"])
ENDS = st.sampled_from(["\n", "\r\n", " \n", "\t\r\n"])
SCORES = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.from_regex(r"[+-]?[0-9]{1,30}(\.[0-9]{0,30})?([eE][+-]?[0-9]{1,3})?", fullmatch=True),
    st.sampled_from(["1_000", "\uff11", "nan", "-inf", "0x1p3", "1e", ".", "NULL", "1e400"]),
)
GRADES = st.one_of(
    st.integers(-3, 4).map(str),
    st.sampled_from(["+1", "007", "0x10", "1.0", "1_0", "NA", "\uff11", "9" * 25]),
)


@st.composite
def trec_file(draw: st.DrawFn, run: bool) -> str:
    plain = draw(st.booleans())  # plain files are those the fast path reads itself
    sep = " " if plain else draw(SEPARATORS)
    lines = []
    for _ in range(draw(st.integers(1, 12))):
        query, doc = draw(st.sampled_from(["1", "2", "q\u00a0"])), draw(IDS)
        middle = (
            f"Q0{sep}{doc}{sep}1{sep}{draw(SCORES)}{sep}{draw(IDS)}"
            if run
            else (f"0{sep}{doc}{sep}{draw(GRADES)}")
        )
        end = "\n" if plain else draw(ENDS)
        lines.append(f"{query}{sep}{middle}{end}")
        if not plain and draw(st.integers(0, 5)) == 0:
            lines.append(draw(st.sampled_from(["\n", "# comment\n", "  \n"])))
    return "".join(lines)


@settings(max_examples=300, deadline=None)
@given(text=trec_file(run=False))
def test_generated_qrels_read_the_same_on_both_paths(
    text: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    both_qrels(write(tmp_path_factory.mktemp("q") / "qrels", text))


@settings(max_examples=300, deadline=None)
@given(text=trec_file(run=True))
def test_generated_runs_read_the_same_on_both_paths(
    text: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    both_runs(write(tmp_path_factory.mktemp("r") / "run", text))


@needs_compiled
def test_plain_files_are_read_by_the_compiled_reader(tmp_path: Path) -> None:
    """The agreement above is not the compiled reader always stepping aside."""
    qrels = write(tmp_path / "qrels", "q\u00a01 0 d\u30001 1\nq2 0 \"d'#2 -1\n")
    assert _files._ctrec.read_qrels(str(qrels)) == {
        "q\u00a01": {"d\u30001": 1},
        "q2": {"\"d'#2": -1},
    }
    run = write(tmp_path / "run", "q1\tQ0\td#1\t1\t1e-3\ta\r\nq1\tQ0\td2\t2\t0.25\tb\r\n")
    assert _files._ctrec.read_run(str(run)) == (["q1"], [["d2", "d#1"]], [[0.25, 0.001]], "b")


def test_a_document_returned_twice_is_written_once_at_its_first_rank(tmp_path: Path) -> None:
    """A system may return a memory twice; it is scored once at its first rank, so the TREC
    file says exactly that and reads back (a reader refuses a document twice)."""
    from recallbench.core import Hit, QueryResult, Run, RunSpec
    from recallbench.datasets import read_trec_run, write_trec_run

    hits = (Hit(doc_id="a", score=1e-5), Hit(doc_id="b", score=3e-6), Hit(doc_id="a", score=0.0))
    run = Run(spec=RunSpec(system="s"), results=(QueryResult(query_id="q1", hits=hits),))
    write_trec_run(run, tmp_path / "run")
    assert (tmp_path / "run").read_text() == "q1 Q0 a 1 1e-05 s\nq1 Q0 b 2 3e-06 s\n"
    back = read_trec_run(tmp_path / "run")
    assert [(h.doc_id, h.score) for h in back.results[0].hits] == [("a", 1e-5), ("b", 3e-6)]
