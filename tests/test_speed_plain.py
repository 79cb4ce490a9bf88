"""The fast paths of `evaluate` give exactly what the exact paths give: plain files read by
the compiled engine's reader, `python -m recallbench evaluate` without the click command
line, and the API's join of dicts already in form."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

import recallbench
from recallbench.measures import _dict_input, _files
from recallbench.measures._files import evaluate_files
from recallbench.measures._trec_eval import TrecOptions
from recallbench.measures._trec_output import format_trec, trec_lines
from recallbench.measures._trec_sets import expand_trec_measures

MEASURES, _, _ = expand_trec_measures(["all_trec"])
OPTIONS = [
    TrecOptions(),
    TrecOptions(complete=True),
    TrecOptions(max_docs=3, judged_only=True),
    TrecOptions(relevance_level=2, complete=True, judged_only=True),
    TrecOptions(relevance_level=0, max_docs=2),
]
SCORES = ["1.", ".5", "-.5", "-0", "+3", "2.50", "-1.25", "10", "3", "3.0", "007.5", "4.25"]
SCORES += ["123456789012345", "4.25"]
ODD_SCORES = ["1e3", "1234567890123456", "0.1234567890123456"]
"""Read by atof, and by the compiled reader through strtod (an exponent, more than 15
digits)."""


def printed(qrels: Path, run: Path, options: TrecOptions) -> str:
    """What `evaluate -q` prints, or the error it stops with."""
    try:
        evaluation, tag = evaluate_files(qrels, run, MEASURES, options)
    except Exception as error:  # the same error either way is part of the contract
        return f"{type(error).__name__}: {error}"
    return format_trec(trec_lines(evaluation, True, tag))


def write_case(rng: random.Random, folder: Path) -> tuple[Path, Path]:
    """Small qrels and run files, mostly plain, with the variations a reader must get
    right: separators, CRLF, blank lines, a missing final newline, signs and dots in
    scores, ids longer than one word, ties, an unsorted run, repeats, odd bytes."""
    sep = rng.choice([" ", "\t", "  ", " \t"])
    eol = rng.choice(["\n", "\r\n"])
    qrels, run = [], []
    for q in range(rng.randint(1, 4)):
        qid = rng.choice(["q", "Q", "10", "2"]) + str(q)
        stems = ["d", "D", "x", "averyveryverylongdocumentidentifier"]
        if rng.random() < 0.05:
            stems.append(rng.choice(["doc_", "é", "#"]))
        docs = [rng.choice(stems) + str(rng.randint(0, 12)) for _ in range(rng.randint(1, 8))]
        for doc in dict.fromkeys(docs):
            if rng.random() < 0.6:
                grade = rng.choice(["0", "1", "2", "-1", "+1", "3", "02"])
                qrels.append(sep.join([qid, "0", doc, grade]))
        ranked = docs if rng.random() < 0.05 else list(dict.fromkeys(docs))
        for doc in ranked:
            score = rng.choice(ODD_SCORES if rng.random() < 0.02 else SCORES)
            run.append(sep.join([qid, "Q0", doc, "1", score, "tag"]))
    if rng.random() < 0.05:
        rng.shuffle(run)
    if rng.random() < 0.1:
        run.insert(1, "")
    qrels_path, run_path = folder / "qrels", folder / "run"
    qrels_path.write_text(eol.join(qrels) + (eol if rng.random() < 0.8 else ""))
    run_path.write_text(eol.join(run) + (eol if rng.random() < 0.8 else ""))
    return qrels_path, run_path


@pytest.mark.skipif(_files._ctrec is None, reason="recallbench.measures._ctrec was not built")
@pytest.mark.parametrize("seed", range(4))
def test_compiled_reader_prints_what_the_line_reader_prints(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    taken = 0
    for _ in range(60):
        qrels, run = write_case(rng, tmp_path)
        options = rng.choice(OPTIONS)
        taken += _files._ctrec.read_run(str(run)) is not None
        fast = printed(qrels, run, options)
        with mock.patch.object(_files, "_ctrec", None):
            exact = printed(qrels, run, options)
        assert fast == exact, (qrels.read_text(), run.read_text(), options)
    assert taken >= 30  # the compiled reader did take most cases


def test_module_main_prints_what_the_click_command_prints(tmp_path: Path) -> None:
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q1 0 a 1\nq1 0 b 0\nq2 0 c 2\nq3 0 z 1\n")
    run.write_text("q1 Q0 a 1 2.0 t\nq1 Q0 c 2 2.0 t\nq2 Q0 c 1 0.5 t\nq2 Q0 a 2 0.7 t\n")
    for flags in ([], ["-q", "-c", "-m", "ndcg_cut.2", "-m", "P.1"], ["-n", "-q", "-J"]):
        args = ["evaluate", *flags, str(qrels), str(run)]
        module = subprocess.run(
            [sys.executable, "-m", "recallbench", *args], capture_output=True, check=True
        )
        code = "import sys; from recallbench.cli import main; sys.argv[0] = 'recallbench'; main()"
        command = subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, check=True
        )
        assert module.stdout == command.stdout and module.stdout


def test_api_dicts_in_form_equal_the_ranked_lists_path() -> None:
    """recallbench's own engine (measures given as objects: the compiled engine takes
    trec_eval's names itself) on dicts in form and on ranked lists."""
    rng = random.Random(7)
    qrels = {f"q{q}": {f"d{d}": rng.randint(-1, 3) for d in range(0, 30, 2)} for q in range(20)}
    run = {
        f"q{q}": {f"d{d}": rng.choice([1.0, 2.0, 0.5, rng.random()]) for d in range(25)}
        for q in range(25)
    }
    run["q3"] = dict(reversed(list(run["q3"].items())))
    for options in (
        {},
        {"complete": True},
        {"max_docs": 5, "judged_only": True},
        {"relevance_level": 2},
    ):
        fast = recallbench.evaluate(qrels, run, MEASURES, **options)
        with mock.patch.object(_dict_input, "dict_table", return_value=None):
            exact = recallbench.evaluate(qrels, run, MEASURES, **options)
        assert fast.query_ids == exact.query_ids
        for name in exact.values:
            assert list(map(repr, fast.values[name])) == list(map(repr, exact.values[name]))
