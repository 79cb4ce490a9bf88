"""The columnar file path (Arrow reader + vectorised join) equals the dict path exactly,
and `recallbench evaluate` equals trec_eval's own outputs byte for byte."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallbench.datasets import (
    read_qrels_columns,
    read_run_columns,
    read_trec_qrels,
    read_trec_rankings,
)
from recallbench.measures import _doc_identity
from recallbench.measures._join import table_from_columns
from recallbench.measures._trec_eval import TrecOptions, evaluate_trec, evaluate_trec_table
from recallbench.measures._trec_output import trec_lines
from recallbench.measures._trec_sets import expand_trec_measures

MEASURES, _, _ = expand_trec_measures(["all_trec"])


def both_paths(qrels: Path, run: Path, options: TrecOptions) -> tuple[list, list]:  # type: ignore[type-arg]
    table, missing = table_from_columns(read_qrels_columns(qrels), read_run_columns(run), options)
    columnar = evaluate_trec_table(table, MEASURES, options, missing)
    rankings, _ = read_trec_rankings(run)
    exact = evaluate_trec(read_trec_qrels(qrels), rankings, MEASURES, options)
    return list(trec_lines(columnar, per_query=True)), list(trec_lines(exact, per_query=True))


@contextmanager
def batches_of(size: int) -> Iterator[None]:
    saved = _doc_identity.BATCH_JUDGMENTS, _doc_identity.BATCH_ROWS
    _doc_identity.BATCH_JUDGMENTS = _doc_identity.BATCH_ROWS = size
    try:
        yield
    finally:
        _doc_identity.BATCH_JUDGMENTS, _doc_identity.BATCH_ROWS = saved


OPTIONS = [
    TrecOptions(),
    TrecOptions(complete=True),
    TrecOptions(relevance_level=2),
    TrecOptions(max_docs=7),
    TrecOptions(judged_only=True),
    TrecOptions(complete=True, judged_only=True, max_docs=3),
]


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
    columnar, exact = both_paths(trec_tests / qrels, trec_tests / run, options)
    assert columnar == exact
    assert len(columnar) > 100


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    shuffled=st.booleans(),
    options=st.sampled_from(OPTIONS),
    batch=st.sampled_from([1, 7, 1 << 14]),
)
def test_generated_files_give_the_same_lines(
    seed: int,
    shuffled: bool,
    options: TrecOptions,
    batch: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Ties, interleaved or shuffled lines, queries on one side only, ids that sort
    differently as strings and as numbers, and document ids looked up in batches of a few
    queries (``batch`` judgments or run rows). Documents returned twice are refused by
    both readers alike (tests/test_trec_readers.py)."""
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
    with batches_of(batch):
        columnar, exact = both_paths(folder / "qrels", folder / "run", options)
    assert columnar == exact


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


def test_conflicting_judgments_are_refused_on_the_columnar_path(tmp_path: Path) -> None:
    from recallbench.core import DatasetError

    (tmp_path / "qrels").write_text("q1 0 d1 1\nq1 0 d2 0\nq1 0 d1 2\n")
    (tmp_path / "run").write_text("q1 Q0 d1 1 1.0 t\n")
    with pytest.raises(DatasetError, match="'d1' judged twice for query 'q1'"):
        table_from_columns(
            read_qrels_columns(tmp_path / "qrels"),
            read_run_columns(tmp_path / "run"),
            TrecOptions(),
        )
    # the same judgment twice is refused too, naming both lines (trec_eval 10.0 stops with
    # "duplicate docs" whatever the grades)
    (tmp_path / "qrels").write_text("q1 0 d1 1\nq1 0 d1 1\n")
    with pytest.raises(DatasetError, match=r"qrels:2: document 'd1' judged twice .*qrels:1\)"):
        read_qrels_columns(tmp_path / "qrels")
