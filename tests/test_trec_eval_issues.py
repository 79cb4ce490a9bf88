"""The reproductions of the trec_eval 10.0 conformance issue, one test each, on both engine
paths (exact line reader, compiled reader) and checked against the binary's own output."""

from __future__ import annotations

from pathlib import Path

import pytest

from recallbench.measures import Measure
from test_trec_eval_property import build_trec_eval, cli, run_binary

PATHS = ["lines", "compiled"]


@pytest.fixture(scope="module")
def binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_trec_eval(tmp_path_factory)


def files(folder: Path, qrels: list[str], run: list[str]) -> list[str]:
    (folder / "qrels").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    (folder / "run").write_text("\n".join(run) + "\n", encoding="utf-8")
    return [str(folder / "qrels"), str(folder / "run")]


def both(binary: Path, args: list[str], path: str) -> str:
    """recallbench's output, after checking it is trec_eval's byte for byte."""
    ours = cli(args, path)
    assert ours == run_binary(binary, args)
    return ours


def value(output: str, label: str, qid: str = "all") -> str:
    found = [
        line.split("\t")[2]
        for line in output.splitlines()
        if line.split("\t")[:2] == [f"{label:<22}", qid]
    ]
    assert len(found) == 1, output
    return found[0]


@pytest.mark.parametrize("path", PATHS)
def test_judged_only_drops_negative_grades(binary: Path, tmp_path: Path, path: str) -> None:
    paths = files(
        tmp_path,
        ["q1 0 a 1", "q1 0 b -1", "q1 0 c 0"],
        ["q1 Q0 b 1 3 t", "q1 Q0 a 2 2 t", "q1 Q0 c 3 1 t"],
    )
    out = both(binary, ["-J", "-m", "num_ret", "-m", "map", *paths], path)
    assert (value(out, "num_ret"), value(out, "map")) == ("2", "1.0000")


@pytest.mark.parametrize("path", PATHS)
def test_max_docs_cuts_before_judged_only(binary: Path, tmp_path: Path, path: str) -> None:
    paths = files(
        tmp_path,
        ["q1 0 a 1", "q1 0 b 0"],
        ["q1 Q0 x 1 3 t", "q1 Q0 y 2 2 t", "q1 Q0 a 3 1 t"],
    )
    out = both(binary, ["-J", "-M", "2", "-m", "num_ret", "-m", "map", *paths], path)
    assert (value(out, "num_ret"), value(out, "map")) == ("0", "0.0000")


@pytest.mark.parametrize("path", PATHS)
def test_complete_num_rel_counts_every_positive_grade(
    binary: Path, tmp_path: Path, path: str
) -> None:
    # grades 1 and 2, one query missing from the run: -l 2 counts 2 per query, but the
    # summary under -c counts every grade above 0 of every judged query (6)
    paths = files(
        tmp_path,
        ["q1 0 a 1", "q1 0 b 2", "q1 0 c 0", "q2 0 a 2", "q2 0 d 1", "q3 0 e 2", "q3 0 f 1"],
        ["q1 Q0 a 1 3 t", "q2 Q0 b 1 1 t"],
    )
    out = both(binary, ["-c", "-l", "2", "-q", "-m", "num_rel", *paths], path)
    assert [value(out, "num_rel", q) for q in ("q1", "q2", "q3", "all")] == ["1", "1", "1", "6"]


@pytest.mark.parametrize("path", PATHS)
def test_means_are_summed_left_to_right(binary: Path, tmp_path: Path, path: str) -> None:
    hits = [8, 10, 1, 7, 3, 5, 10, 3, 7, 1, 3, 10, 4, 5, 3, 1]
    qrels, run = [], []
    for number, k in enumerate(hits):
        qid = f"q{number:02d}"  # sorted as strings in this order
        qrels += [f"{qid} 0 r{i} 1" for i in range(10)]
        run += [f"{qid} Q0 {'r' if i < k else 'n'}{i} {i} {20 - i} t" for i in range(10)]
    out = both(binary, ["-m", "P.10", *files(tmp_path, qrels, run)], path)
    assert value(out, "P_10") == "0.5062"  # numpy's pairwise mean gives 0.5063


@pytest.mark.parametrize("path", PATHS)
def test_measures_print_in_trec_eval_order(binary: Path, tmp_path: Path, path: str) -> None:
    paths = files(tmp_path, ["q1 0 a 1"], ["q1 Q0 a 1 3 t", "q1 Q0 b 2 2 t"])
    sorted_cutoffs = both(binary, ["-m", "P.10,5", "-m", "map", *paths], path)
    assert [line.split()[0] for line in sorted_cutoffs.splitlines()] == ["map", "P_5", "P_10"]
    first_wins = both(binary, ["-m", "P.5", "-m", "P.10", *paths], path)
    assert [line.split()[0] for line in first_wins.splitlines()] == ["P_5"]
    defaults_give_way = both(binary, ["-m", "P", "-m", "P.10", *paths], path)
    assert [line.split()[0] for line in defaults_give_way.splitlines()] == ["P_10"]


@pytest.mark.parametrize("path", PATHS)
def test_runid_is_the_last_lines_tag(binary: Path, tmp_path: Path, path: str) -> None:
    paths = files(tmp_path, ["q1 0 a 1"], ["q1 Q0 a 1 3 first", "q1 Q0 b 2 2 last"])
    assert value(both(binary, ["-m", "runid", *paths], path), "runid") == "last"


@pytest.mark.parametrize("path", PATHS)
def test_judged_only_emptying_a_ranking_gives_nan(binary: Path, tmp_path: Path, path: str) -> None:
    paths = files(
        tmp_path,
        ["q1 0 a 1", "q1 0 b 0", "q2 0 c 1"],
        ["q1 Q0 x 1 3 t", "q1 Q0 y 2 2 t", "q2 Q0 c 1 1 t"],
    )
    out = both(binary, ["-J", "-q", "-m", "iprec_at_recall", "-m", "11pt_avg", *paths], path)
    for qid in ("q1", "all"):
        assert value(out, "iprec_at_recall_0.00", qid) == "  -nan"
        assert value(out, "11pt_avg", qid) == "  -nan"
    assert value(out, "iprec_at_recall_1.00", "q1") == "0.0000"


@pytest.mark.parametrize("path", PATHS)
def test_no_summary(binary: Path, tmp_path: Path, path: str) -> None:
    paths = files(tmp_path, ["q1 0 a 1", "q2 0 b 1"], ["q1 Q0 a 1 3 t", "q2 Q0 a 1 3 t"])
    assert both(binary, ["-n", *paths], path) == ""
    per_query = both(binary, ["-n", "-q", *paths], path)
    assert per_query and "\tall\t" not in per_query


def test_nan_renders_as_glibc_prints_it() -> None:
    assert Measure.parse("map").format_value(float("nan")) == "  -nan"
