"""qrels that trec_eval 10.0 refuses or misreads are refused, with the line and the reason,
by both readers (the compiled engine's, which declines them, and the exact line reader,
which locates the problem) and through the command line and the API (issue 28, item 5)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import recallbench
from recallbench.cli import main
from recallbench.core import DatasetError, UnknownMeasureError
from recallbench.datasets import read_trec_qrels
from recallbench.datasets._trec_lines import BLANK_QRELS_LINE, LAST_COMMENT, SECOND_COMMENT
from test_trec_eval_property import build_trec_eval, engine

RUN = "q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\n"
CASES = {
    # two comment lines in a row: trec_eval reads the second as data (malformed here)
    "second-comment": ("# one\n# two words here x\nq1 0 d1 1\nq1 0 d2 0\n", 2, SECOND_COMMENT),
    # ... or, with four words, as a judgment of query "#"
    "second-comment-4": ("# one\n# a b 1\nq1 0 d1 1\nq1 0 d2 0\n", 2, SECOND_COMMENT),
    "blank": ("q1 0 d1 1\n\nq1 0 d2 0\n", 2, BLANK_QRELS_LINE),
    "trailing-blank": ("q1 0 d1 1\nq1 0 d2 0\n\n", 3, BLANK_QRELS_LINE),
    "whitespace-only": ("q1 0 d1 1\n \t \nq1 0 d2 0\n", 2, BLANK_QRELS_LINE),
    "last-whitespace": ("q1 0 d1 1\nq1 0 d2 0\n   ", 3, BLANK_QRELS_LINE),
    "first-blank": ("\nq1 0 d1 1\nq1 0 d2 0\n", 1, BLANK_QRELS_LINE),
    "last-comment": ("q1 0 d1 1\nq1 0 d2 0\n# end\n", 3, LAST_COMMENT),  # trec_eval crashes
}


@pytest.fixture(scope="module")
def binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_trec_eval(tmp_path_factory)


def _files(folder: Path, qrels: str) -> tuple[Path, Path]:
    (folder / "qrels").write_text(qrels)
    (folder / "run").write_text(RUN)
    return folder / "qrels", folder / "run"


@pytest.mark.parametrize("path", ["lines", "compiled"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_qrels_trec_eval_refuses_are_refused_with_the_line(
    binary: Path, tmp_path: Path, case: str, path: str
) -> None:
    text, line, reason = CASES[case]
    qrels, run = _files(tmp_path, text)
    theirs = subprocess.run([str(binary), "-m", "P.1", str(qrels), str(run)], capture_output=True)
    assert theirs.returncode != 0  # refused ("Malformed line"), a missing qid, or a crash
    with engine(path):
        result = CliRunner().invoke(main, ["evaluate", "-m", "P.1", str(qrels), str(run)])
        assert result.exit_code == 2, result.output
        assert f"{qrels}:{line}: {reason}" in result.output
        with pytest.raises(DatasetError) as caught:
            recallbench.evaluate(qrels, run, ["P.1"])
        assert [str(p) for p in caught.value.problems] == [f"{qrels}:{line}: {reason}"]
    with pytest.raises(DatasetError):
        read_trec_qrels(qrels)


@pytest.mark.parametrize("path", ["lines", "compiled"])
def test_one_comment_between_judgments_is_still_a_comment(
    binary: Path, tmp_path: Path, path: str
) -> None:
    qrels, run = _files(tmp_path, "# head\nq1 0 d1 1\n# middle\nq1 0 d2 0\n")
    theirs = subprocess.run(
        [str(binary), "-m", "P.1", "-m", "num_rel", str(qrels), str(run)], capture_output=True
    )
    with engine(path):
        result = CliRunner().invoke(
            main, ["evaluate", "-m", "P.1", "-m", "num_rel", str(qrels), str(run)]
        )
    assert result.exit_code == 0, result.output
    assert result.stdout == theirs.stdout.decode()


@pytest.mark.parametrize("measure", ["P.", "ndcg_cut."])
def test_a_measure_with_an_empty_parameter_is_refused(
    binary: Path, tmp_path: Path, measure: str
) -> None:
    """trec_eval: "improper measure in parameter"; recallbench evaluated the defaults."""
    qrels, run = _files(tmp_path, "q1 0 d1 1\nq1 0 d2 0\n")
    theirs = subprocess.run([str(binary), "-m", measure, str(qrels), str(run)], capture_output=True)
    assert theirs.returncode != 0
    result = CliRunner().invoke(main, ["evaluate", "-m", measure, str(qrels), str(run)])
    assert result.exit_code == 2, result.output
    assert "nothing after the '.'" in result.output
    with pytest.raises(UnknownMeasureError):
        recallbench.evaluate(qrels, run, [measure])
