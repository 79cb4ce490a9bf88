"""`recallbench evaluate` and `recallbench.evaluate`: flags, formats, inputs, errors, and
agreement with `recallbench run` on the same judgments and run."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import recallbench
from recallbench.cli import main
from recallbench.core import Hit, QueryResult, Run, RunSpec
from recallbench.datasets import load_dataset, write_trec_qrels, write_trec_run


def evaluate_cli(*args: str) -> str:
    result = CliRunner().invoke(main, ["evaluate", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize(
    ("expected", "flags", "files"),
    [
        ("out.test.aq", ["-q", "-m", "all_trec"], ("qrels.test", "results.test")),
        ("out.test.aqc", ["-q", "-c", "-m", "all_trec"], ("qrels.test", "results.trunc")),
        (
            "out.test.aqcM",
            ["-q", "-c", "-M", "100", "-m", "all_trec"],
            ("qrels.test", "results.trunc"),
        ),
        (
            "out.test.aql",
            ["-q", "-l", "2", "-m", "all_trec", "-m", "relstring.20"],
            ("qrels.rel_level", "results.test"),
        ),
    ],
)
def test_flags_reproduce_trec_eval(
    trec_tests: Path, expected: str, flags: list[str], files: tuple[str, str]
) -> None:
    ours = evaluate_cli(*flags, *(str(trec_tests / name) for name in files))
    assert ours == (trec_tests / expected).read_text()


def test_json_and_csv_formats(trec_tests: Path) -> None:
    files = [str(trec_tests / "qrels.test"), str(trec_tests / "results.test")]
    document = json.loads(evaluate_cli("--format", "json", "-q", "-m", "P.5", "-m", "map", *files))
    assert document["run"] == "STANDARD"
    assert document["values"]["all"]["map"] == pytest.approx(0.1785, abs=5e-5)
    assert set(document["values"]) == {"301", "302", "303", "all"}
    rows = evaluate_cli("--format", "csv", "-m", "ndcg@10", *files).splitlines()
    assert rows[0] == "measure,query,value" and rows[1].startswith("ndcg_cut_10,all,0.")


def test_our_measure_names_work_too(trec_tests: Path) -> None:
    files = [str(trec_tests / "qrels.test"), str(trec_tests / "results.test")]
    assert evaluate_cli("-m", "P@5", *files) == evaluate_cli("-m", "P.5", *files)


def test_bad_input_exits_2_with_the_place(tmp_path: Path) -> None:
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 high\n")
    run.write_text("q1 Q0 d1 1 0.5 t\n")
    result = CliRunner().invoke(main, ["evaluate", str(qrels), str(run)])
    assert result.exit_code == 2
    assert f"{qrels}:2: grade must be an integer, got 'high'" in result.output
    assert "Traceback" not in result.output
    unknown = CliRunner().invoke(main, ["evaluate", "-m", "ndgc_cut.5", str(qrels), str(run)])
    assert unknown.exit_code == 2 and "supported:" in unknown.output
    missing = CliRunner().invoke(main, ["evaluate", str(tmp_path / "nope"), str(run)])
    assert missing.exit_code == 2 and "file not found" in missing.output
    negative = CliRunner().invoke(main, ["evaluate", "-l", "-1", str(qrels), str(run)])
    assert negative.exit_code == 2 and "-l" in negative.output
    repeated = CliRunner().invoke(main, ["evaluate", "-m", "P.5,5", str(qrels), str(run)])
    assert repeated.exit_code == 2 and "duplicate cutoffs" in repeated.output


QRELS = {"q1": {"a": 2, "b": 0, "c": 1}, "q2": {"x": 1}}
SCORES = {"q1": {"a": 0.5, "b": 0.9, "c": 0.5}, "q2": {"y": 1.0, "x": 0.2}}


def test_api_accepts_dicts_frames_runs_and_files(tmp_path: Path) -> None:
    measures = ["mrr@10", "ndcg_cut.10", "P.2"]
    reference = recallbench.evaluate(QRELS, SCORES, measures)
    # trec order: q1 = b (0.9), then the 0.5 tie by document id descending: c, a
    assert reference.per_query("q1")["mrr@10"] == 0.5
    frames = recallbench.evaluate(
        pd.DataFrame(
            [(q, d, g) for q, j in QRELS.items() for d, g in j.items()],
            columns=["query_id", "doc_id", "relevance"],
        ),
        pd.DataFrame(
            [(q, d, s) for q, j in SCORES.items() for d, s in j.items()],
            columns=["qid", "docno", "score"],
        ),
        measures,
    )
    ranked = recallbench.evaluate(QRELS, {"q1": ["b", "c", "a"], "q2": ["y", "x"]}, measures)
    run = Run(
        spec=RunSpec(system="s"),
        results=(
            QueryResult(query_id="q1", hits=(Hit(doc_id="b"), Hit(doc_id="c"), Hit(doc_id="a"))),
            QueryResult(query_id="q2", hits=(Hit(doc_id="y"), Hit(doc_id="x"))),
        ),
    )
    from_run = recallbench.evaluate(QRELS, run, measures)
    write_trec_qrels(QRELS, tmp_path / "qrels")
    write_trec_run(run, tmp_path / "run")
    from_files = recallbench.evaluate(tmp_path / "qrels", str(tmp_path / "run"), measures)
    for other in (frames, ranked, from_run, from_files):
        assert other.means() == reference.means()


def test_run_and_evaluate_agree_on_the_bundled_dataset(tmp_path: Path) -> None:
    out = tmp_path / "out"
    measures = [flag for name in ("ndcg@10", "map", "mrr@10", "recall@5") for flag in ("-m", name)]
    assert CliRunner().invoke(main, ["run", "--out", str(out), *measures]).exit_code == 0
    report = json.loads((out / "report.json").read_text())
    run = Run.model_validate_json((out / "run.json").read_text())
    dataset = load_dataset("agent-memory-sample")
    write_trec_qrels(dataset.qrels, tmp_path / "qrels")
    write_trec_run(run, tmp_path / "run")
    flags = ["--format", "json", "-q", "-c", *measures]
    values = json.loads(evaluate_cli(*flags, str(tmp_path / "qrels"), str(tmp_path / "run")))
    labels = {
        "ndcg@10": "ndcg_cut_10",
        "map": "map",
        "mrr@10": "recip_rank_10",
        "recall@5": "recall_5",
    }
    compared = 0
    for query in report["queries"]:
        if not query["included"]:
            continue
        for measure, label in labels.items():
            assert values["values"][query["id"]][label] == pytest.approx(
                query["values"][measure], abs=5e-5
            )
            compared += 1
    assert compared >= 400


@pytest.mark.parametrize("run_text", ["", "q9 Q0 d1 1 1.0 t\n"])
def test_a_run_sharing_no_query_with_the_qrels_is_refused(tmp_path: Path, run_text: str) -> None:
    """trec_eval stops (exit 7) rather than print means of nothing; so does evaluate,
    with a located message and exit 2, never a table of -nan."""
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "run").write_text(run_text)
    result = CliRunner().invoke(main, ["evaluate", str(tmp_path / "qrels"), str(tmp_path / "run")])
    assert result.exit_code == 2
    assert f"{tmp_path / 'run'}: 1 problem" in result.output
    assert "no query of the run is judged" in result.output and "nan" not in result.output
    # with -c the judged query scores 0, as in trec_eval
    complete = CliRunner().invoke(
        main, ["evaluate", "-c", "-m", "map", str(tmp_path / "qrels"), str(tmp_path / "run")]
    )
    assert complete.exit_code == 0 and "map                   \tall\t0.0000" in complete.output


def test_json_output_writes_trec_evals_nan_as_null(tmp_path: Path) -> None:
    """-J can leave a ranking empty; trec_eval prints -nan for its interpolated precision.
    JSON has no NaN: the value is null, and the document parses as strict JSON."""
    (tmp_path / "qrels").write_text("q1 0 a 1\nq2 0 b 1\n")
    (tmp_path / "run").write_text("q1 Q0 x 1 3 t\nq2 Q0 b 1 1 t\n")
    flags = ["-J", "-q", "--format", "json", "-m", "iprec_at_recall.0"]
    text = evaluate_cli(*flags, str(tmp_path / "qrels"), str(tmp_path / "run"))
    document = json.loads(text, parse_constant=lambda name: pytest.fail(f"not JSON: {name}"))
    values = document["values"]
    assert values["q1"]["iprec_at_recall_0.00"] is None
    assert values["q2"]["iprec_at_recall_0.00"] == 1.0
    assert values["all"]["iprec_at_recall_0.00"] is None


def _three_kinds_of_query() -> tuple[object, Run]:
    """A dataset whose run has a query answered, one with no relevant judgment, one that
    returned nothing and one that failed (issue 28 item 6: three means for one run)."""
    from recallbench.core import Dataset, Document, Query

    dataset = Dataset(
        name="three",
        documents=tuple(Document(id=d, text=d) for d in ("a", "b", "c")),
        queries=tuple(Query(id=q, text=q) for q in ("answered", "unjudged", "empty", "failed")),
        qrels={
            "answered": {"a": 1, "b": 0},
            "unjudged": {"b": 0},
            "empty": {"c": 1},
            "failed": {"a": 1},
        },
    )
    run = Run(
        spec=RunSpec(system="s"),
        results=(
            QueryResult(query_id="answered", hits=(Hit(doc_id="b"), Hit(doc_id="a"))),
            QueryResult(query_id="unjudged", hits=(Hit(doc_id="b"),)),
            QueryResult(query_id="empty", hits=()),
            QueryResult(query_id="failed", hits=(), error="timed out"),
        ),
    )
    return dataset, run


def test_api_on_a_dataset_and_run_gives_the_run_reports_means() -> None:
    from recallbench.measures import parse_measures
    from recallbench.report import build_report

    dataset, run = _three_kinds_of_query()
    measures = ["ndcg@10", "mrr@10", "recall@10"]
    report = build_report(dataset, run, parse_measures(measures))  # type: ignore[arg-type]
    result = recallbench.evaluate(dataset, run, measures)
    assert result.means() == pytest.approx(report.means)
    assert report.means["mrr@10"] == pytest.approx(0.5 / 3)  # unjudged left out, 0 for two
    assert int(result.included.sum()) == report.counts.evaluated == 3
    shown = repr(result)
    assert "mrr@10=0.1667 (n=3)" in shown
    assert "3 of 4 queries in the means (left out: 1 without a relevant judgment)" in shown
    assert "missing or failed queries score 0" in shown
    assert "queries without a relevant judgment left out" in shown
    # trec_eval's rules are one argument away, and named as such
    trec = recallbench.evaluate(dataset, run, measures, rules="trec")
    assert trec.mean("mrr@10") == pytest.approx(0.5 / 3)  # unjudged 0, failed missing: left out
    assert "queries without a relevant judgment score 0" in repr(trec)
    with pytest.raises(recallbench.core.ConfigError, match='pass rules="trec"'):
        recallbench.evaluate(dataset, run, measures, complete=True)


def test_a_query_that_returned_nothing_never_leaves_a_frame_input() -> None:
    """A frame has no row for a query with an empty ranking: its id in the qrels is enough
    for it to score 0, as the same run given as a Run or a dict of rankings."""
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
    run_frame = pd.DataFrame(
        [("q1", "a", 1.0), ("q2", "x", 1.0)], columns=["qid", "docno", "score"]
    )
    qrels_frame = pd.DataFrame(
        [(q, d, g) for q, judged in qrels.items() for d, g in judged.items()],
        columns=["query_id", "doc_id", "relevance"],
    )
    from_frames = recallbench.evaluate(qrels_frame, run_frame, ["mrr@10"])
    ranked = recallbench.evaluate(qrels, {"q1": ["a"], "q2": ["x"], "q3": []}, ["mrr@10"])
    assert from_frames.query_ids == ("q1", "q2", "q3")
    assert from_frames.mean("mrr@10") == ranked.mean("mrr@10") == pytest.approx(1 / 3)


def test_csv_output_is_rfc_4180_and_reads_back(tmp_path: Path) -> None:
    """Issue 28 item 7: ids were escaped with JSON rules (``ü,1`` -> ``\\u00fc,1``)."""
    import csv
    import io

    ids = ["plain", "ü,1", 'a,"b', "tab\tno"]
    qrels = "".join(f"{q.split()[0] if ' ' in q else q} 0 d 1\n" for q in ids if "\t" not in q)
    (tmp_path / "qrels").write_text(qrels, encoding="utf-8")
    run = "".join(f"{q} Q0 d 1 1.0 t\n" for q in ids if "\t" not in q)
    (tmp_path / "run").write_text(run, encoding="utf-8")
    text = evaluate_cli(
        "-q", "-m", "P.1", "--format", "csv", str(tmp_path / "qrels"), str(tmp_path / "run")
    )
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0] == ["measure", "query", "value"]
    assert {row[1] for row in rows[1:]} == {"plain", "ü,1", 'a,"b', "all"}
    assert all(len(row) == 3 for row in rows)


@pytest.mark.parametrize("depth", [str(2**63), str(2**70)])
def test_max_docs_beyond_a_long_is_read_as_no_cut(tmp_path: Path, depth: str) -> None:
    """Issue 28 item 8: trec_eval's atol saturates; recallbench raised OverflowError."""
    (tmp_path / "qrels").write_text("q1 0 a 1\nq1 0 b 0\n")
    (tmp_path / "run").write_text("q1 Q0 b 1 2 t\nq1 Q0 a 2 1 t\n")
    files = [str(tmp_path / "qrels"), str(tmp_path / "run")]
    for output in ("trec", "json", "csv"):
        cut = evaluate_cli("-M", depth, "-m", "map", "-m", "bpref", "--format", output, *files)
        whole = evaluate_cli("-m", "map", "-m", "bpref", "--format", output, *files)
        if output == "json":  # the options say what was asked (clamped)
            assert json.loads(cut)["options"]["max_docs"] == 2**63 - 1
            cut, whole = json.loads(cut)["values"], json.loads(whole)["values"]
        assert cut == whole
    dicts = recallbench.evaluate(
        {"q1": {"a": 1, "b": 0}},
        {"q1": {"a": 1.0, "b": 2.0}},
        ["map", "bpref"],
        max_docs=int(depth),
    )
    assert (
        dicts.means()
        == recallbench.evaluate(
            {"q1": {"a": 1, "b": 0}}, {"q1": {"a": 1.0, "b": 2.0}}, ["map", "bpref"]
        ).means()
    )
