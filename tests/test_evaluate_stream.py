"""`recallbench evaluate` on a streamed run (recallbench.measures._trec_native.stream_block):
a run larger than STREAM_THRESHOLD is read a block at a time, each query's lines evaluated
as read, so it must be grouped by query.

The streamed evaluation gives what reading the run whole gives (itself checked against
trec_eval 10.0 in test_trec_native and test_trec_eval_property, which also stream their
generated runs): with a block's end at every byte of a file with comments, blank lines,
CRLF, extra fields, queries on one side only and no final newline; the run's tag is its
last data line's. A run that is not grouped is refused with the line where a query comes
back and a command that groups it, and that command's output gives trec_eval's results.
The Python engine (recallbench's own measures) reads a streamed run a range of query
groups at a time, with the same results. A streamed run of 2M lines takes a fraction of
the memory of one read whole.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from recallbench import evaluate
from recallbench.cli import main
from recallbench.core import RunFileError
from recallbench.measures import _files, _trec_native
from recallbench.measures._files import evaluate_files
from recallbench.measures._trec_native import (
    STREAM_BLOCK,
    STREAM_BLOCK_VARIABLE,
    STREAM_THRESHOLD,
    evaluate_files_text,
    stream_block,
)
from recallbench.measures._trec_sets import expand_trec_measures
from test_trec_eval_property import build_trec_eval, in_process, options_of, run_binary
from test_trec_native import assert_same_evaluations, generated, group_by_query

pytestmark = pytest.mark.skipif(
    not _trec_native.available(), reason="recallbench.measures._ctrec was not built (no C compiler)"
)

QRELS = "a 0 x 1\na 0 y 0\na 0 v -1\nb 0 x 2\nb 0 z 1\nc 0 w 1\nd 0 u 3\n"
RUNS = {
    "comments, blanks, CRLF, no final newline": (
        "# a comment first\r\na Q0 x 1 2.5 t1\r\n  # after blanks\r\na Q0 y 2 1 t2 extra\r\n"
        "\r\n  b\tQ0 z 1 3 t3\r\nb Q0 q 2 3 t4\r\nz Q0 x 1 1 tz\r\nc Q0 w 1 1e0 tlast"
    ),
    "a comment last": "a Q0 x 1 2.5 t1\na Q0 y 2 1 t2\nb Q0 x 1 1 tb\n# not a tag\n",
    "one line": "b Q0 x 1 1 only",
    "run-only queries around": "y Q0 x 1 1 t\nb Q0 z 1 .5 t\nb Q0 x 2 .5 t\nzz Q0 x 1 1 u\n",
}
FLAG_SETS = (
    {},
    {"complete": True},
    {"max_docs": 1, "judged_only": True},
    {"relevance_level": 2},
)


def text(qrels: Path, run: Path, block: int, **flags: object) -> tuple[str, str] | None:
    return evaluate_files_text(
        qrels,
        run,
        ["all_trec", "runid"],
        per_query=True,
        block=block,
        **flags,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("name", list(RUNS))
def test_a_block_may_end_at_every_byte(tmp_path: Path, name: str) -> None:
    """Blocks of 1 byte to the whole file and more: every byte of the file is a block's
    last once, inside ids, numbers, separators, CRLF pairs and comments."""
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text(QRELS)
    run.write_text(RUNS[name])
    size = run.stat().st_size
    for flags in FLAG_SETS:
        whole = text(qrels, run, 0, **flags)
        assert whole is not None, (name, flags)
        for block in range(1, size + 3):
            assert text(qrels, run, block, **flags) == whole, (name, flags, block)


def test_the_tag_is_the_last_data_lines(tmp_path: Path) -> None:
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text(QRELS)
    for content, tag in (
        (RUNS["comments, blanks, CRLF, no final newline"], "tlast"),
        (RUNS["a comment last"], "tb"),
        ("a Q0 x 1 1 first\na Q0 y 1 1 second\r\n\n\n", "second"),
    ):
        run.write_text(content)
        for block in (1, 3, 4096, 0):
            done = text(qrels, run, block)
            assert done is not None and done[1] == tag, (content, block)
            assert f"runid                 \tall\t{tag}\n" in done[0]


def test_declines_as_the_whole_file_reader_declines(tmp_path: Path) -> None:
    """A line the line reader must report (a bad score, a NUL, a document returned twice,
    bytes that are not UTF-8, in a query evaluated or not) declines the streamed run too,
    whichever block holds it: the line reader then reports it with its line."""
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text(QRELS)
    good = b"a Q0 x 1 2 t\na Q0 y 2 1 t\nb Q0 z 1 1 t\n"
    for bad in (
        b"b Q0 x 1 1_0 t\n",
        b"b Q0 x 1 1 t\0\n",
        b"b Q0 z 1 1 t\n",
        b"b Q0 x 1 1 t\xff\n",
        b"zz Q0 x 1 nan t\n",
        b"zz Q0 x 1\n",
    ):
        run.write_bytes(good + bad)
        assert text(qrels, run, 0) is None, bad
        for block in (1, 5, 4096):
            assert text(qrels, run, block) is None, (bad, block)


def cli(args: list[str], block: int | None = None) -> tuple[int, str, str]:
    env = {STREAM_BLOCK_VARIABLE: str(block)} if block is not None else {}
    result = CliRunner().invoke(main, ["evaluate", *args], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def trec_eval(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_trec_eval(tmp_path_factory)


def test_a_run_not_grouped_is_refused_with_the_command_that_groups_it(
    trec_eval: Path, tmp_path: Path
) -> None:
    qrels, run = generated(tmp_path, 20261127, True)  # shuffled: queries come back
    lines = run.read_bytes().split(b"\n")
    seen: set[bytes] = set()
    previous = None
    comeback = None
    for number, line in enumerate(lines, start=1):
        query = line.split()[0] if line.split() else None
        if query is not None and query != previous:
            if query in seen:
                comeback = (number, query.decode())
                break
            seen.add(query)
            previous = query
    assert comeback is not None, "the generated run is grouped"
    code, out, err = cli([str(qrels), str(run)], block=64)
    assert code == 2 and out == ""
    where = f"{run}:{comeback[0]}: query {comeback[1]!r} comes back"
    assert where in err, err
    assert "Traceback" not in err
    code, _, own = cli(["-m", "P@3", str(qrels), str(run)], block=64)  # the Python engine
    assert code == 2 and where in own, own
    # the compiled engine stops at the same line (and declines: the reader above reports it)
    chosen = _trec_native.families(["official"])
    assert chosen is not None
    stopped = _trec_native._ctrec.evaluate_files(
        str(qrels), str(run), chosen[0], 1, 0, False, False, False, True, False, 64
    )
    assert stopped == _trec_native._ctrec.run_groups(str(run), 64) == comeback
    module = subprocess.run(  # python -m recallbench's short way, without click
        [sys.executable, "-m", "recallbench", "evaluate", str(qrels), str(run)],
        env={**os.environ, STREAM_BLOCK_VARIABLE: "64"},
        capture_output=True,
        text=True,
    )
    assert (module.returncode, module.stdout) == (2, "")
    assert where in module.stderr and "Traceback" not in module.stderr, module.stderr
    command = re.search(r"^\s+(LC_ALL=C sort .*)$", err, re.M)
    assert command is not None, err
    subprocess.run(["bash", "-c", command.group(1)], check=True)
    grouped = Path(f"{run}.grouped")
    args = ["-q", "-m", "all_trec", "-m", "runid"]
    expected = run_binary(trec_eval, [*args, str(qrels), str(run)])
    assert run_binary(trec_eval, [*args, str(qrels), str(grouped)]) == expected
    for block in (64, None):  # forced, and the default (small: read whole, any order)
        assert cli([*args, str(qrels), str(grouped)], block) == (0, expected, "")
    assert cli([*args, str(qrels), str(run)]) == (0, expected, "")


def test_the_api_streams_files_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    qrels, run = generated(tmp_path, 20261128, False)
    grouped = group_by_query(run)
    monkeypatch.setenv(STREAM_BLOCK_VARIABLE, "11")
    for options in ({}, {"complete": True, "judged_only": True, "max_docs": 4}):
        assert_same_evaluations(str(qrels), grouped, ["all_trec"], options)
    with pytest.raises(RunFileError, match="comes back after its lines ended"):
        evaluate(str(qrels), str(run), ["map"])


def test_which_runs_are_streamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over STREAM_THRESHOLD a run must be streamed; a smaller one is streamed when grouped
    and read whole when not (its streaming stops where a query comes back)."""
    small, large = tmp_path / "small", tmp_path / "large"
    small.write_text("q Q0 d 1 1 t\n")
    with large.open("wb") as sparse:  # no disk: a hole
        sparse.truncate(STREAM_THRESHOLD + 1)
    monkeypatch.delenv(STREAM_BLOCK_VARIABLE, raising=False)
    assert (stream_block(small), stream_block(large)) == (None, STREAM_BLOCK)
    assert stream_block(tmp_path / "missing") == 0
    monkeypatch.setenv(STREAM_BLOCK_VARIABLE, "3")
    assert (stream_block(small), stream_block(large)) == (3, 3)
    monkeypatch.setenv(STREAM_BLOCK_VARIABLE, "0")
    assert (stream_block(small), stream_block(large)) == (0, 0)
    monkeypatch.delenv(STREAM_BLOCK_VARIABLE)
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text(QRELS)
    blocks: list[int] = []
    real = _trec_native._ctrec.evaluate_files

    def evaluate_files(*args: object) -> object:
        blocks.append(args[-1])  # type: ignore[arg-type]
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(_trec_native._ctrec, "evaluate_files", evaluate_files)
    for content, tried in (
        ("a Q0 x 1 1 t\na Q0 y 1 1 t\nb Q0 x 1 1 t\n", [STREAM_BLOCK]),
        ("a Q0 x 1 1 t\nb Q0 x 1 1 t\na Q0 y 1 1 t\n", [STREAM_BLOCK, 0]),
    ):
        run.write_text(content)
        blocks.clear()
        done = evaluate_files_text(qrels, run, ["official"], per_query=True)
        assert blocks == tried
        assert done is not None and done == text_of(qrels, run)


def text_of(qrels: Path, run: Path) -> tuple[str, str] | None:
    return evaluate_files_text(qrels, run, ["official"], per_query=True, block=0)


def write_large(folder: Path, queries: int, depth: int) -> tuple[Path, Path]:
    """A grouped run of queries x depth fixed-width lines and its qrels, written by numpy
    (digits filled column by column: no Python loop a line)."""
    template = np.frombuffer(b"q0000 Q0 d0000 1 000 t\n", np.uint8)
    lines = np.tile(template, (queries * depth, 1))
    rng = np.random.default_rng(7)
    for column, values in (
        (1, np.repeat(np.arange(queries), depth)),
        (10, np.tile(np.arange(depth), queries)),
        (17, rng.integers(0, 1000, queries * depth)),
    ):
        width = 3 if column == 17 else 4
        for k in range(width):
            lines[:, column + width - 1 - k] = 48 + (values // 10**k) % 10
    run = folder / "run"
    run.write_bytes(lines.tobytes())
    qrels = folder / "qrels"
    qrels.write_text(
        "".join(
            f"q{q:04d} 0 d{d:04d} {(q + d) % 3}\n"
            for q in range(queries)
            for d in range(0, depth, 50)
        )
    )
    return qrels, run


PEAK = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(status, usage.ru_maxrss)
"""


def peak_kib(command: list[str], block: int) -> int:
    """The peak RSS (KiB) of ``command`` run in a fresh process."""
    env = {**os.environ, STREAM_BLOCK_VARIABLE: str(block)}
    done = subprocess.run(
        [sys.executable, "-c", PEAK, *command], env=env, capture_output=True, text=True
    )
    status, peak = map(int, done.stdout.split())
    assert status == 0, done.stderr
    return peak


def test_a_streamed_run_takes_a_fraction_of_the_memory(tmp_path: Path) -> None:
    """2M lines (46 MB): read whole, ~70 bytes a line (~140 MB over Python's own); streamed
    in 1 MiB blocks, a block and a query's lines."""
    qrels, run = write_large(tmp_path, 2000, 1000)
    command = [sys.executable, "-m", "recallbench", "evaluate", str(qrels), str(run)]
    whole, streamed = peak_kib(command, 0), peak_kib(command, 2**20)
    assert 3 * streamed < whole, (streamed, whole)
    assert text(qrels, run, 2**20) == text(qrels, run, 0)


@pytest.mark.parametrize("flags", [(), ("-c",), ("-J", "-M", "3", "-l", "2")], ids=str)
def test_the_python_engine_reads_a_streamed_run_a_few_groups_at_a_time(
    trec_eval: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: tuple[str, ...]
) -> None:
    """recallbench's own measures (the Python engine) on a streamed run: read a range of
    query groups at a time (here a few groups a range), the per-query results joined in
    trec_eval's order, so that every line equals the run read whole, and trec_eval's
    where it has the measure."""
    qrels, run = generated(tmp_path, 20261129, "-c" not in flags)
    grouped = group_by_query(run)
    trec_measures = ("-m", "all_trec", "-m", "runid")
    own = ("-m", "P@3", "-m", "ndcg@5", "-m", "mrr@10", "-m", "map", "-m", "runid")
    ranges: list[int] = []
    real = _files._ctrec.read_run

    def read_run(path: str, offset: int = 0, length: int = 0) -> object:
        ranges.append(length)
        return real(path, offset, length)

    monkeypatch.setattr(_files._ctrec, "read_run", read_run)
    for measures in (trec_measures, own):
        monkeypatch.setenv(STREAM_BLOCK_VARIABLE, "0")
        whole = in_process(qrels, grouped, flags, measures)
        assert ranges == [0]
        ranges.clear()
        monkeypatch.setenv(STREAM_BLOCK_VARIABLE, "9")
        assert in_process(qrels, grouped, flags, measures) == whole, measures
        assert len(ranges) > 100 and 0 not in ranges
        ranges.clear()
        if measures == trec_measures:
            args = [*flags, *measures, "-q", str(qrels), str(grouped)]
            assert whole == run_binary(trec_eval, args)
    # the Evaluation itself: queries in trec_eval's order, means to the last bit
    chosen = expand_trec_measures(["all_trec", "P@3", "ndcg@5", "mrr@10"])[0]
    monkeypatch.setenv(STREAM_BLOCK_VARIABLE, "0")
    whole_evaluation, whole_tag = evaluate_files(qrels, grouped, chosen, options_of(flags))
    monkeypatch.setenv(STREAM_BLOCK_VARIABLE, "9")
    streamed, tag = evaluate_files(qrels, grouped, chosen, options_of(flags))
    assert (streamed.query_ids, tag) == (whole_evaluation.query_ids, whole_tag)
    assert list(streamed.missing) == list(whole_evaluation.missing)
    assert streamed.texts == whole_evaluation.texts
    for name, values in whole_evaluation.values.items():
        assert np.array_equal(streamed.values[name], values, equal_nan=True), name
    assert repr(streamed.means()) == repr(whole_evaluation.means())
    with pytest.raises(RunFileError, match="comes back after its lines ended"):
        in_process(qrels, run, flags, own)
