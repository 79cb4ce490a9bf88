"""The compiled engine's reader of plain TREC files and the tie ordering of scored dicts give
exactly what the line reader gives: the same judgments and rankings in the same order, or
(the compiled reader declining) the same located error."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from recallbench.core import DatasetError, RunFileError
from recallbench.datasets import _trec
from recallbench.measures import _files
from recallbench.measures._dict_input import ranked_blocks
from recallbench.measures._table import build_table

IDS = ["d1", "d10", "d2", "D2", "é", "ü1", "a b", "x\u00a0y", "日本", "z", "Z9", "_u", "#c"]


needs_compiled = pytest.mark.skipif(
    _files._ctrec is None, reason="recallbench.measures._ctrec was not built (no C compiler)"
)


def _attempt(read: object, path: Path) -> object:
    """What ``read`` gives (dicts as item lists: order counts), or the error it raises."""
    try:
        value = read(path)  # type: ignore[operator]
    except (DatasetError, RunFileError) as error:
        return (type(error).__name__, str(error))
    if isinstance(value, tuple):  # rankings and tag
        return list(value[0].items()), value[1]
    return [(query, list(judged.items())) for query, judged in value.items()]  # type: ignore[attr-defined]


def _run_text(rng: random.Random, odd: bool) -> str:
    lines = []
    for q in range(rng.randint(1, 6)):
        docs = rng.sample([f"d{i}" for i in range(40)] + (IDS if odd else []), rng.randint(0, 30))
        for rank, doc in enumerate(docs):
            score = rng.choice([f"{rng.randint(0, 5)}", f"{rng.random():.1f}", "1e0", "-0.0"])
            sep = rng.choice([" ", "\t", "  "]) if odd else " "
            lines.append(sep.join([f"q{q}", "Q0", doc, str(rank + 1), score, "tag"]))
    if odd:
        extras = [
            "",
            "   ",
            "# comment",
            "q0 Q0 dup 1 1.0 t",
            "q0 Q0 dup 2 1.0 t",
            "q1 Q0 d1 1 1_0 t",
            "q2 Q0 dx 1 nan t",
            "q2 Q0 dy 1 1.0 t extra",
            "q3 Q0 d\x1c9 1 2.0 t",
            "q4 Q0 dz 1 2.0\r",
            "q5 Q0 dw 1 0x1p3 t",
            "q0 Q0 x",
        ]
        for extra in rng.sample(extras, rng.randint(0, 3)):
            lines.insert(rng.randint(0, len(lines)), extra)
    if odd and rng.random() < 0.3 and lines:  # a query's lines apart
        lines.append(lines[0])
        lines[-1] = lines[-1].replace("Q0 ", "Q0 moved", 1)
    return "\n".join(lines) + rng.choice(["\n", "", "\r\n"])


@pytest.mark.parametrize("seed", range(60))
@needs_compiled
def test_runs_read_alike(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    path = tmp_path / "run"
    path.write_bytes(_run_text(rng, odd=seed % 2 == 1).encode())
    assert _attempt(_files.read_rankings, path) == _attempt(_trec.read_trec_rankings, path)


def _qrels_text(rng: random.Random, odd: bool) -> str:
    lines = []
    for q in range(rng.randint(1, 5)):
        for doc in rng.sample([f"d{i}" for i in range(30)] + (IDS if odd else []), 8):
            lines.append(f"q{q} 0 {doc} {rng.choice(['0', '1', '2', '-1', '+3', '007'])}")
    if odd:
        extras = [
            "#c 0 d 1",
            "q0 0 d1 1.5",
            "q0 0 d2",
            "",
            "q0 0 d3 1_0",
            "q0 0 d4 1 x",
            "q9 0 e 99999999999999999999",
            "q0 0 d0 1",
            "q0 0 d0 2",
        ]
        for extra in rng.sample(extras, rng.randint(0, 3)):
            lines.insert(rng.randint(0, len(lines)), extra)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("seed", range(40))
@needs_compiled
def test_qrels_read_alike(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    path = tmp_path / "qrels"
    path.write_bytes(_qrels_text(rng, odd=seed % 2 == 1).encode())
    assert _attempt(_files.read_qrels, path) == _attempt(_trec.read_trec_qrels, path)


@needs_compiled
def test_the_compiled_reader_steps_aside_only_where_it_must(tmp_path: Path) -> None:
    """Declined: what the line reader refuses or reads differently; taken: everything
    else, read as the line reader reads it."""
    declined = {
        b"q Q0 d 1 1_0 t\n": "underscore",
        b"q Q0 d 1 inf t\n": "infinite",
        b"q Q0 d 1 1.0 t\nq Q0 d 2 0.5 t\n": "returned twice",
        b"q Q0 d\x1c 1 1.0 t\n": "a separator control",
        b"q Q0 d\xff 1 1.0 t\n": "not UTF-8",
        b"q Q0 d\x00 1 1.0 t\n": "NUL",
        b"q Q0 d 1\n": "4 fields",
        b"": "empty",
    }
    path = tmp_path / "run"
    for data, why in declined.items():
        path.write_bytes(data)
        assert _files._ctrec.read_run(str(path)) is None, why
    taken = {
        "q Q0 é 1 1.0 t\n": "not ASCII",
        "q Q0 d 1 1.0 t x\n": "7 fields",
        "a Q0 d 1 1.0 t\nb Q0 d 1 1.0 t\na Q0 e 1 1.0 t\n": "a query's lines apart",
        "  # a comment\nq Q0 d 1 1e3 t\n\n": "a comment, a blank line, an exponent",
    }
    for text, why in taken.items():
        path.write_text(text)
        assert _files._ctrec.read_run(str(path)) is not None, why
        assert _attempt(_files.read_rankings, path) == _attempt(_trec.read_trec_rankings, path)
    path.write_text("q 0 d 1\nq 0 d 2\n")
    assert _files._ctrec.read_qrels(str(path)) is None
    path.write_text("q 0 d 1\r\nq 0 e -2")
    assert _files._ctrec.read_qrels(str(path)) == {"q": {"d": 1, "e": -2}}
    path.write_text("q 0 d 1\r\n\n  \nq 0 e -2")  # blank qrels lines: the line reader refuses
    assert _files._ctrec.read_qrels(str(path)) is None


@pytest.mark.parametrize("seed", range(30))
def test_tie_ordering_is_trec_evals(seed: int) -> None:
    rng = np.random.default_rng(seed)
    names, bounds, docs, scores = [], [0], [], []
    for q in range(int(rng.integers(1, 8))):
        count = int(rng.integers(0, 50))
        pool = [f"d{i}" for i in range(60)] + IDS
        chosen = list(rng.choice(pool, size=min(count, len(pool)), replace=False))
        docs += [str(doc) for doc in chosen]
        scores += list(np.round(rng.random(len(chosen)) * rng.choice([1, 3, 1000]), 0))
        names.append(f"q{q}")
        bounds.append(len(docs))
    score_array = np.array(scores, dtype=np.float64)
    expected = {
        name: [d for _, d in sorted(zip(scores[a:b], docs[a:b], strict=True), reverse=True)]
        for name, a, b in zip(names, bounds, bounds[1:], strict=False)
    }
    assert ranked_blocks(names, bounds, docs, score_array) == expected


def test_build_table_alike_with_and_without_repeats() -> None:
    qrels = {"q": {"a": 2, "b": 0, "c": 1}, "r": {"x": 1}}
    plain = build_table(qrels, {"q": ["z", "c", "a"], "r": []}, ["q", "r"])
    repeated = build_table(qrels, {"q": ["z", "c", "z", "a", "c"], "r": []}, ["q", "r"])
    assert plain.rank.tolist() == [1, 2] and plain.grade.tolist() == [1, 2]
    assert repeated.rank.tolist() == [1, 3] and repeated.grade.tolist() == [1, 2]
    assert repeated.duplicates.tolist() == [2, 0] and plain.duplicates.tolist() == [0, 0]
    assert repeated.num_ret.tolist() == [5, 0]
