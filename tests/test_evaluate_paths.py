"""The compiled engine's reader and the exact line reader give the same judgments and
rankings (in the same order), and `recallbench evaluate` equals trec_eval's own outputs
byte for byte."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallbench.core import RunFileError
from recallbench.datasets import read_trec_qrels, read_trec_rankings
from recallbench.measures import _files
from recallbench.measures._trec_eval import TrecOptions, evaluate_trec
from recallbench.measures._trec_output import trec_lines
from recallbench.measures._trec_sets import expand_trec_measures

MEASURES, _, _ = expand_trec_measures(["all_trec"])

needs_compiled = pytest.mark.skipif(
    _files._ctrec is None, reason="recallbench.measures._ctrec was not built (no C compiler)"
)


def both_paths(qrels: Path, run: Path, options: TrecOptions) -> tuple[list, list]:  # type: ignore[type-arg]
    """The Python engine's lines from the compiled engine's reader and from the exact line
    reader; the judgments and rankings themselves must be equal too, in the same order."""
    judged, (rankings, tag) = _files.read_qrels(qrels), _files.read_rankings(run)
    exact_judged, (exact_rankings, exact_tag) = read_trec_qrels(qrels), read_trec_rankings(run)
    assert [(q, list(j.items())) for q, j in judged.items()] == [
        (q, list(j.items())) for q, j in exact_judged.items()
    ]
    assert list(rankings.items()) == list(exact_rankings.items())
    assert tag == exact_tag
    compiled = evaluate_trec(judged, rankings, MEASURES, options)
    exact = evaluate_trec(exact_judged, exact_rankings, MEASURES, options)
    return list(trec_lines(compiled, per_query=True)), list(trec_lines(exact, per_query=True))


OPTIONS = [
    TrecOptions(),
    TrecOptions(complete=True),
    TrecOptions(relevance_level=2),
    TrecOptions(max_docs=7),
    TrecOptions(judged_only=True),
    TrecOptions(complete=True, judged_only=True, max_docs=3),
]


@needs_compiled
@pytest.mark.parametrize("options", OPTIONS, ids=str)
@pytest.mark.parametrize(
    ("qrels", "run"),
    [
        ("qrels.test", "results.test"),
        ("qrels.comment.test", "results.comment.test"),
        ("qrels.rel_level", "results.trunc"),
    ],
)
def test_trec_files_give_the_same_lines(
    trec_tests: Path, qrels: str, run: str, options: TrecOptions
) -> None:
    compiled, exact = both_paths(trec_tests / qrels, trec_tests / run, options)
    assert compiled == exact
    assert len(compiled) > 100


@needs_compiled
@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    shuffled=st.booleans(),
    options=st.sampled_from(OPTIONS),
)
def test_generated_files_give_the_same_lines(
    seed: int,
    shuffled: bool,
    options: TrecOptions,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Ties, interleaved or shuffled lines, queries on one side only, ids that sort
    differently as strings and as numbers. Documents returned twice are refused by both
    readers alike (tests/test_trec_readers.py)."""
    rng = random.Random(seed)
    folder = tmp_path_factory.mktemp("gen")
    queries = [str(n) for n in rng.sample(range(1, 40), 6)]
    qrels_lines, run_lines = [], []
    for query in queries[:5]:
        for doc in rng.sample(range(30), 12):
            qrels_lines.append(f"{query} 0 D{doc} {rng.randint(-1, 3)}\n")
    for query in queries[1:]:
        docs = rng.sample(range(30), rng.randint(0, 20))
        for rank, doc in enumerate(docs):
            score = rng.choice([1.0, 0.5, 0.25, rng.random()])
            run_lines.append(f"{query} Q0 D{doc} {rank} {score!r} tag\n")
    if shuffled:
        rng.shuffle(run_lines)
        rng.shuffle(qrels_lines)
    else:
        run_lines.sort(key=lambda line: (line.split()[0], -float(line.split()[4])))
    (folder / "qrels").write_text("".join(qrels_lines))
    (folder / "run").write_text("".join(run_lines) or "1 Q0 D1 1 1.0 tag\n")
    compiled, exact = both_paths(folder / "qrels", folder / "run", options)
    assert compiled == exact


def test_cli_output_equals_trec_eval_byte_for_byte(trec_tests: Path) -> None:
    from click.testing import CliRunner

    from recallbench.cli import main

    cases = {
        "out.test": [],
        "out.test.a": ["-m", "all_trec"],
        "out.comment.test": [],
    }
    for expected, flags in cases.items():
        files = (
            ["qrels.comment.test", "results.comment.test"]
            if "comment" in expected
            else ["qrels.test", "results.test"]
        )
        result = CliRunner().invoke(
            main, ["evaluate", *flags, *(str(trec_tests / f) for f in files)]
        )
        assert result.exit_code == 0, result.output
        assert result.stdout == (trec_tests / expected).read_text(), expected


def test_conflicting_judgments_are_refused_whichever_reader(tmp_path: Path) -> None:
    """The compiled reader declines a pair judged twice; the line reader names both lines."""
    from recallbench.core import DatasetError

    (tmp_path / "qrels").write_text("q1 0 d1 1\nq1 0 d2 0\nq1 0 d1 2\n")
    with pytest.raises(DatasetError, match="'d1' judged twice for query 'q1'"):
        _files.read_qrels(tmp_path / "qrels")
    # the same judgment twice is refused too, naming both lines (trec_eval 10.0 stops with
    # "duplicate docs" whatever the grades)
    (tmp_path / "qrels").write_text("q1 0 d1 1\nq1 0 d1 1\n")
    with pytest.raises(DatasetError, match=r"qrels:2: document 'd1' judged twice .*qrels:1\)"):
        _files.read_qrels(tmp_path / "qrels")
    (tmp_path / "run").write_text("q1 Q0 d1 1 1.0 t\nq1 Q0 d1 2 0.5 t\n")
    with pytest.raises(RunFileError, match="d1"):
        _files.read_rankings(tmp_path / "run")
