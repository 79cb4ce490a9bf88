"""Calibration of a relevance judge against people: the library on generated labels, and
`judge calibrate` end to end against a real local HTTP endpoint (tests/judge_endpoint.py)
that answers from a lookup of the bundled dataset's grades, and against a closed port."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from rich.console import Console

from judge_endpoint import (
    MODEL,
    Endpoint,
    closed_port,
    dataset_grades,
    lookup_grader,
    serve,
)
from recallbench.cli._judge_calibrate import calibrate as calibrate_command
from recallbench.core import ConfigError, Dataset, Run
from recallbench.core._dataset import Document, LabelSource, Query
from recallbench.core._run import Hit, QueryResult, RunSpec
from recallbench.datasets import DEFAULT_DATASET, load_dataset
from recallbench.judges._calibrate import calibrate
from recallbench.judges._calibrate_model import FORMAT, Calibration, JudgeInfo
from recallbench.judges._calibrate_pairs import HumanPairs, human_pairs
from recallbench.judges._calibrate_ppi import COVERAGE_AT_10, MIN_HUMAN_SAMPLE
from recallbench.judges._calibrate_render import render_calibration, render_calibration_markdown
from recallbench.judges._calibrate_scores import judge_dataset
from recallbench.judges._judgment import NEUTRAL, Judgment
from recallbench.judges._task_kinds import Relevance
from recallbench.measures import parse_measure

JUDGE = JudgeInfo(
    model="test-judge", provider="openai", endpoint="http://x/v1", prompt="relevance v1"
)


def _label(grade: int | None, failure: Any = "timeout") -> Judgment[Relevance]:
    if grade is None:
        return Judgment(None, NEUTRAL, failure, "failed")
    return Judgment(Relevance(grade, 0.9, ""), grade / 3, model="test-judge")


def _dataset(
    qrels: dict[str, dict[str, int]],
    categories: Sequence[str] = ("a", "b"),
    label_sources: dict[str, dict[str, LabelSource]] | None = None,
) -> Dataset:
    docs = sorted({doc for judged in qrels.values() for doc in judged})
    queries = [
        Query(id=qid, text=f"question {qid}", category=categories[i % len(categories)])
        for i, qid in enumerate(qrels)
    ]
    return Dataset(
        name="generated",
        documents=tuple(Document(id=doc, text=f"memory {doc}") for doc in docs),
        queries=tuple(queries),
        qrels=qrels,
        label_sources=label_sources or {},
    )


def _grid(human: Sequence[int], per_query: int = 10) -> dict[str, dict[str, int]]:
    """Pairs with the given grades, ``per_query`` to a query."""
    qrels: dict[str, dict[str, int]] = {}
    for index, grade in enumerate(human):
        qrels.setdefault(f"q{index // per_query}", {})[f"d{index}"] = grade
    return qrels


def _calibrate(dataset: Dataset, judge: Sequence[int | None], **kw: Any) -> Calibration:
    pairs = human_pairs(dataset)
    return calibrate(dataset, pairs, [_label(g) for g in judge], JUDGE, resamples=1_000, **kw)


def _kappa(result: Calibration, labels: str, weighting: str) -> float | None:
    found = [k for k in result.kappas if k.labels == labels and k.weighting == weighting]
    return found[0].value


# ---------------------------------------------------------------- agreement


def test_perfect_agreement_is_kappa_one_everywhere() -> None:
    rng = np.random.default_rng(1)
    human = [int(g) for g in rng.integers(0, 4, size=200)]
    result = _calibrate(_dataset(_grid(human)), human)
    assert [k.value for k in result.kappas] == pytest.approx([1.0] * 4)
    assert all(k.low == pytest.approx(1.0) and k.high == pytest.approx(1.0) for k in result.kappas)
    confusion = np.array(result.confusion)
    assert confusion.sum() == 200 and np.count_nonzero(confusion - np.diag(np.diag(confusion))) == 0
    assert [g.agreement for g in result.categories] == [1.0, 1.0]
    assert result.coverage.judged == 200 and result.coverage.failed == {}


def test_independent_labels_are_kappa_near_zero() -> None:
    rng = np.random.default_rng(2)
    human = [int(g) for g in rng.integers(0, 4, size=2000)]
    judge = [int(g) for g in rng.integers(0, 4, size=2000)]
    result = _calibrate(_dataset(_grid(human, 50)), judge)
    for kappa in result.kappas:
        assert kappa.value is not None and abs(kappa.value) < 0.06
        assert kappa.low is not None and kappa.high is not None
        assert kappa.low < 0 < kappa.high  # chance agreement: the interval holds zero


def test_a_known_confusion_matrix_and_its_kappa() -> None:
    # people 0,0,1,1,2,2,3,3 ; judge 0,1,1,1,2,3,3,2
    human = [0, 0, 1, 1, 2, 2, 3, 3]
    judge = [0, 1, 1, 1, 2, 3, 3, 2]
    result = _calibrate(_dataset(_grid(human, 4)), judge)
    assert result.confusion == [[1, 1, 0, 0], [0, 2, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]]
    # Cohen 1960 by hand: p_o = 5/8; rows 2,2,2,2 /8, columns 1,3,2,2 /8: p_e = 8/32 = 1/4
    assert _kappa(result, "0-3", "unweighted") == pytest.approx((5 / 8 - 1 / 4) / (1 - 1 / 4))
    # binary at threshold 1: people 0,0,1,1,1,1,1,1 judge 0,1,1,1,1,1,1,1 -> p_o 7/8,
    # p_e = (2/8)(1/8) + (6/8)(7/8) = 44/64
    assert _kappa(result, "binary", "unweighted") == pytest.approx((7 / 8 - 44 / 64) / (20 / 64))


def test_negative_grades_count_as_zero_and_llm_labels_are_left_out() -> None:
    qrels = {"q0": {"d0": -1, "d1": 2, "d2": 3}, "q1": {"d3": 0, "d4": 1, "d5": 3}}
    llm = {"q1": {"d5": LabelSource(source="llm", by="m")}}
    dataset = _dataset(qrels, label_sources=llm)
    pairs = human_pairs(dataset)
    assert [(p.doc_id, p.scale_grade) for p in pairs.pairs][:1] == [("d0", 0)]
    assert len(pairs.pairs) == 5 and pairs.excluded_llm == 1
    result = _calibrate(dataset, [0, 2, 3, 0, 1])
    assert result.coverage.negative_grades == 1 and result.coverage.excluded_llm == 1
    assert _kappa(result, "0-3", "unweighted") == pytest.approx(1.0)
    assert any("below 0" in note for note in result.notes)
    assert any("LLM" in note for note in result.notes)


def test_failed_judgments_are_counted_and_left_out_of_kappa() -> None:
    human = [0, 1, 2, 3] * 10
    judge: list[int | None] = list(human)
    judge[0] = judge[5] = None
    dataset = _dataset(_grid(human))
    result = _calibrate(dataset, judge)
    assert result.coverage.judged == 38 and result.coverage.failed == {"timeout": 2}
    assert result.coverage.unreliable is False
    assert sum(map(sum, result.confusion or [])) == 38
    assert _kappa(result, "0-3", "quadratic") == pytest.approx(1.0)
    # under the judge's labels a failed pair is unjudged, the others carry the judge's grade
    pairs = human_pairs(dataset)
    judged = judge_dataset(dataset, pairs, [_label(g) for g in judge])
    assert "d0" not in judged.qrels["q0"] and "d5" not in judged.qrels["q0"]
    assert judged.qrels["q0"]["d1"] == 1


def test_every_judgment_failed_gives_no_kappa_and_says_so() -> None:
    human = [0, 1, 2, 3] * 3
    result = _calibrate(_dataset(_grid(human)), [None] * 12)
    assert not result.computable and result.kappas == [] and result.confusion is None
    assert result.coverage.failure_rate == 1.0 and result.coverage.unreliable
    assert any("every judgment failed" in note for note in result.notes)
    assert "cannot be computed" in render_calibration_markdown(result)


def test_a_dataset_without_human_labels_is_refused() -> None:
    dataset = _dataset({"q0": {"d0": 1}}, label_sources={"q0": {"d0": LabelSource(source="llm")}})
    with pytest.raises(ConfigError, match="no pair labelled by people"):
        calibrate(dataset, HumanPairs([], 1, 0), [], JUDGE)


# ---------------------------------------------------------------- ranking and PPI


def _run(dataset: Dataset, name: str, rankings: dict[str, list[str]]) -> Run:
    return Run(
        spec=RunSpec(system=name, dataset=dataset.ref),
        results=tuple(
            QueryResult(query_id=qid, hits=tuple(Hit(doc_id=doc) for doc in docs))
            for qid, docs in rankings.items()
        ),
    )


def test_reversed_rankings_under_the_judge_give_tau_minus_one() -> None:
    # people grade x > y > z, the judge z > y > x; system A returns x first, B y, C z
    qrels = {f"q{i}": {f"x{i}": 3, f"y{i}": 2, f"z{i}": 1} for i in range(6)}
    dataset = _dataset(qrels)
    pairs = human_pairs(dataset)
    flipped = {3: 1, 2: 2, 1: 3}
    judge = [flipped[p.grade] for p in pairs.pairs]
    runs = [
        (name, _run(dataset, name, {f"q{i}": [f"{doc}{i}"] for i in range(6)}))
        for name, doc in (("A", "x"), ("B", "y"), ("C", "z"))
    ]
    result = _calibrate(dataset, judge, runs=runs, measure=parse_measure("ndcg@1"))
    ranking = result.ranking
    assert ranking is not None and ranking.tau == pytest.approx(-1.0)
    assert (ranking.low, ranking.high) == (pytest.approx(-1.0), pytest.approx(-1.0))
    assert [s.human_rank for s in ranking.systems] == [1, 2, 3]
    assert [s.judge_rank for s in ranking.systems] == [3, 2, 1]
    # the same labels agree with themselves: tau = 1
    same = _calibrate(
        dataset, [p.grade for p in pairs.pairs], runs=runs, measure=parse_measure("ndcg@1")
    )
    assert same.ranking is not None and same.ranking.tau == pytest.approx(1.0)
    # no warning on tau at -1, nor at 1 with kappa 1 (6 queries: the small sample's only)
    assert [w.code for w in result.warnings + same.warnings] == ["small-human-sample"] * 2


def _inverting_setup() -> tuple[Dataset, list[int], list[tuple[str, Run]]]:
    """24 queries, each with memories people graded a 2, b 1, c 2, z 3, w 0; system A
    returns a, b, c, B a, b and C a. A judge that inverts every grade (g -> 3 - g) keeps
    the systems' order (each finds more of the middle grades than the next) while its
    labels contradict people's."""
    grades = {"a": 2, "b": 1, "c": 2, "z": 3, "w": 0}
    qrels = {f"q{i}": {f"{doc}{i}": grade for doc, grade in grades.items()} for i in range(24)}
    dataset = _dataset(qrels)
    judge = [3 - pair.grade for pair in human_pairs(dataset).pairs]
    runs = [
        (name, _run(dataset, name, {f"q{i}": [f"{doc}{i}" for doc in docs] for i in range(24)}))
        for name, docs in (("A", "abc"), ("B", "ab"), ("C", "a"))
    ]
    return dataset, judge, runs


def test_a_grade_inverting_judge_keeps_tau_one_and_tau_never_shows_without_kappa() -> None:
    dataset, judge, runs = _inverting_setup()
    result = _calibrate(dataset, judge, runs=runs, measure=parse_measure("ndcg@3"))
    ranking = result.ranking
    assert ranking is not None and ranking.tau == pytest.approx(1.0)
    assert [s.human_rank for s in ranking.systems] == [s.judge_rank for s in ranking.systems]
    quadratic = _kappa(result, "0-3", "quadratic")
    assert quadratic is not None and quadratic < -0.5  # the labels contradict people's
    # JSON: kappa beside tau, and the warning
    data = json.loads(result.model_dump_json())
    assert data["ranking"]["kappa_quadratic"] == pytest.approx(quadratic)
    assert data["ranking"]["kappa_low"] is not None and data["ranking"]["kappa_high"] < 0
    assert [w["code"] for w in data["warnings"]] == ["tau-without-agreement"]
    message = result.warnings[0].message
    assert "tau-b between the system rankings is 1.000" in message
    assert f"quadratic kappa {quadratic:.3f}" in message and "inverts grades" in message
    # Markdown and terminal: the tau line carries kappa, the warning is there
    markdown = render_calibration_markdown(result)
    tau_line = next(line for line in markdown.splitlines() if line.startswith("Kendall's τ-b"))
    assert "τ-b = 1.000" in tau_line and f"quadratic κ = {quadratic:.3f}" in tau_line
    assert "## Warnings" in markdown and f"**tau-without-agreement**: {message}" in markdown
    console = Console(record=True, width=400)
    render_calibration(result, console)
    text = console.export_text()
    assert f"warning: {message}" in text
    assert f"τ-b = 1.000 [1.000, 1.000] over 24 queries, beside quadratic κ = {quadratic:.3f}" in (
        text
    )


def test_a_human_sample_under_20_warns_why_with_the_measured_coverage() -> None:
    dataset, judge, runs = _ppi_setup(flip=0.2)
    measure = parse_measure("P@1")
    small = _calibrate(dataset, judge, runs=runs, measure=measure, human_sample=10)
    assert [w.code for w in small.warnings] == ["small-human-sample"]
    message = small.warnings[0].message
    assert "only 10 queries labelled by people (--human-sample 10)" in message
    assert "fewer than 20" in message and "hold the true mean less often than 95%" in message
    assert COVERAGE_AT_10 in message and "benchmarks/ppi_coverage.py" in message
    data = json.loads(small.model_dump_json())
    assert data["warnings"] == [{"code": "small-human-sample", "message": message}]
    assert f"- **small-human-sample**: {message}" in render_calibration_markdown(small)
    console = Console(record=True, width=400)
    render_calibration(small, console)
    assert f"warning: {message}" in console.export_text()
    enough = _calibrate(dataset, judge, runs=runs, measure=measure, human_sample=MIN_HUMAN_SAMPLE)
    assert enough.warnings == []


def _ppi_setup(flip: float, seed: int = 3) -> tuple[Dataset, list[int], list[tuple[str, Run]]]:
    """200 queries, each with a memory x returned first (relevant with probability 0.5 by
    people) and an anchor always relevant; the judge calls a non-relevant x relevant with
    probability ``flip`` (an upward bias in P@1)."""
    rng = np.random.default_rng(seed)
    qrels = {}
    judge = []
    for i in range(200):
        relevant = bool(rng.random() < 0.5)
        qrels[f"q{i}"] = {f"x{i}": 2 if relevant else 0, f"a{i}": 3}
        judged_relevant = relevant or bool(rng.random() < flip)
        judge += [2 if judged_relevant else 0, 3]
    dataset = _dataset(qrels)
    run = _run(dataset, "S", {f"q{i}": [f"x{i}", f"a{i}"] for i in range(200)})
    return dataset, judge, [("S", run)]


def test_ppi_corrects_a_biased_judge_and_covers_the_target() -> None:
    dataset, judge, runs = _ppi_setup(flip=0.4)
    result = _calibrate(dataset, judge, runs=runs, measure=parse_measure("P@1"), human_sample=60)
    assert result.ranking is None and any("two systems" in note for note in result.notes)
    ppi = result.ppi
    assert ppi is not None and (ppi.labelled, ppi.unlabelled, ppi.queries) == (60, 140, 200)
    means = ppi.systems[0]
    target = means.target.estimate
    assert means.judge_only.estimate > target + 0.1  # the bias PPI must remove
    assert means.ppi is not None and means.ppi_tuned is not None
    assert means.ppi.low <= target <= means.ppi.high
    assert abs(means.ppi.estimate - target) < abs(means.judge_only.estimate - target)
    # PPI by hand: mean(f~) - mean(f - y) on the seeded split
    labelled = np.array([qid in ppi.labelled_queries for qid in [f"q{i}" for i in range(200)]])
    y = np.array([dataset.qrels[f"q{i}"][f"x{i}"] > 0 for i in range(200)], dtype=float)
    f = np.array(judge[0::2], dtype=float) > 0
    expected = f[~labelled].mean() - (f[labelled] - y[labelled]).mean()
    assert means.ppi.estimate == pytest.approx(expected)
    assert means.classical.estimate == pytest.approx(y[labelled].mean())


def test_ppi_with_a_perfect_judge_is_narrower_than_the_classical_mean() -> None:
    dataset, _, runs = _ppi_setup(flip=0.0)
    human = [p.grade for p in human_pairs(dataset).pairs]
    result = _calibrate(dataset, human, runs=runs, measure=parse_measure("P@1"), human_sample=50)
    means = result.ppi.systems[0] if result.ppi else None
    assert means is not None and means.ppi is not None and means.ppi_tuned is not None
    assert means.ppi.high - means.ppi.low < (means.classical.high - means.classical.low) / 1.5
    # a perfect judge: lambda = Cov(Y, f) / ((1 + n/N) Var f) = 1 / (1 + 50/150), up to the
    # variances being taken over different samples
    assert means.ppi_tuned.weight == pytest.approx(0.75, abs=0.03)


def test_ppi_with_a_useless_judge_falls_back_to_the_classical_mean() -> None:
    dataset, _, runs = _ppi_setup(flip=0.0)
    constant = [3] * len(human_pairs(dataset).pairs)  # says relevant to everything
    result = _calibrate(dataset, constant, runs=runs, measure=parse_measure("P@1"), human_sample=50)
    means = result.ppi.systems[0] if result.ppi else None
    assert means is not None and means.ppi_tuned is not None
    assert means.ppi_tuned.weight == 0.0
    assert means.ppi_tuned.estimate == pytest.approx(means.classical.estimate)
    assert means.ppi_tuned.high - means.ppi_tuned.low == pytest.approx(
        means.classical.high - means.classical.low
    )


def test_every_query_labelled_reports_the_classical_mean_and_says_why() -> None:
    dataset, judge, runs = _ppi_setup(flip=0.4)
    result = _calibrate(dataset, judge, runs=runs, measure=parse_measure("P@1"))
    assert result.ppi is not None and result.ppi.unlabelled == 0
    means = result.ppi.systems[0]
    assert means.ppi is None and means.classical == means.target.model_copy(
        update={"method": means.classical.method}
    )
    assert result.ppi.note is not None and "equals the classical mean" in result.ppi.note


def test_the_result_round_trips_and_renders() -> None:
    dataset, judge, runs = _ppi_setup(flip=0.2)
    result = _calibrate(dataset, judge, runs=runs, measure=parse_measure("P@1"), human_sample=40)
    assert result.format == FORMAT
    assert Calibration.model_validate_json(result.model_dump_json()) == result
    markdown = render_calibration_markdown(result)
    for heading in ("Cohen's κ", "Confusion matrix", "query category", "prediction-powered"):
        assert heading in markdown
    assert "test-judge (openai at http://x/v1), prompt relevance v1" in markdown
    console = Console(record=True, width=120)
    render_calibration(result, console)
    text = console.export_text()
    assert "0-3, quadratic" in text and "PPI++" in text and "test-judge" in text


# ---------------------------------------------------------------- the command


@pytest.fixture(scope="module")
def bundled() -> Dataset:
    return load_dataset(DEFAULT_DATASET)


@pytest.fixture(scope="module")
def endpoint(bundled: Dataset) -> Iterator[Endpoint]:
    with serve(lookup_grader(dataset_grades(bundled))) as running:
        yield running


def _config(tmp_path: Path, base_url: str) -> Path:
    path = tmp_path / "recallbench.toml"
    path.write_text(
        f'[judge]\nbase_url = "{base_url}"\nmodel = "{MODEL}"\nretries = 0\ntimeout = 2\n',
        encoding="utf-8",
    )
    return path


def _runs(tmp_path: Path, dataset: Dataset) -> list[str]:
    """Three runs on the bundled dataset: people's ideal order, the documents in file order,
    and the ideal order reversed within the top 10."""
    order = [doc.id for doc in dataset.documents]
    ideal = {
        q.id: sorted(dataset.qrels.get(q.id, {}), key=lambda d: -dataset.qrels[q.id][d])
        for q in dataset.queries
    }
    rankings = {
        "ideal": ideal,
        "file-order": {q.id: order[:10] for q in dataset.queries},
        "worst-first": {qid: list(reversed(docs)) + order[:5] for qid, docs in ideal.items()},
    }
    paths = []
    for name, ranked in rankings.items():
        path = tmp_path / name / "run.json"
        path.parent.mkdir()
        path.write_text(_run(dataset, name, ranked).model_dump_json(), encoding="utf-8")
        paths.append(str(path.parent))
    return paths


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(calibrate_command, list(args))


def test_calibrate_on_the_bundled_dataset_then_replays_identically(
    tmp_path: Path, endpoint: Endpoint, bundled: Dataset
) -> None:
    config = _config(tmp_path, endpoint.base_url)
    cache = tmp_path / "judgments.jsonl"
    runs = _runs(tmp_path, bundled)
    common = ["--config", str(config), "--judge-cache", str(cache), "--human-sample", "40"]
    before = endpoint.calls
    first = _invoke(*runs, *common, "--out", str(tmp_path / "a"))
    assert first.exit_code == 0, first.output
    pairs = len(human_pairs(bundled).pairs)
    assert endpoint.calls - before == pairs
    for shown in (MODEL, endpoint.base_url, "relevance v1", "0-3, quadratic", "people 3", "τ-b"):
        assert shown in first.output
    assert f"judge calls: {pairs:,} made, 0 replayed" in first.output
    assert f"spent now: {pairs:,} calls made, 0 replayed" in first.output  # no prices

    data = json.loads((tmp_path / "a" / "calibration.json").read_text(encoding="utf-8"))
    assert data["format"] == FORMAT and data["coverage"]["judged"] == pairs
    assert data["judge"]["endpoint"] == endpoint.base_url
    assert data["coverage"]["tokens_in"] > 0 and data["coverage"]["cost_usd"] is None  # no prices
    assert sum(map(sum, data["confusion"])) == pairs
    quadratic = next(k for k in data["kappas"] if k["weighting"] == "quadratic")
    assert 0.7 < quadratic["value"] < 1.0 and quadratic["low"] < quadratic["value"]
    assert data["ranking"]["tau"] == pytest.approx(1.0)
    assert data["ranking"]["systems"][0]["system"] == "ideal"
    assert data["ppi"]["labelled"] == 40 and all(s["ppi"] for s in data["ppi"]["systems"])
    assert data["warnings"] == []  # 40 people's queries, kappa high beside tau
    assert data["ranking"]["kappa_quadratic"] == quadratic["value"]
    markdown = (tmp_path / "a" / "calibration.md").read_text(encoding="utf-8")
    assert MODEL in markdown and endpoint.base_url in markdown

    # the second run asks nothing (--strict: replay only) and writes the same numbers
    second = _invoke(*runs, *common, "--strict", "--out", str(tmp_path / "b"))
    assert second.exit_code == 0, second.output
    assert endpoint.calls - before == pairs
    assert f"0 made, {pairs:,} replayed" in second.output
    replayed = json.loads((tmp_path / "b" / "calibration.json").read_text(encoding="utf-8"))
    # only the time and what this invocation spent differ between a run and its replay
    assert data.pop("spent")["calls"] == pairs and replayed.pop("spent")["calls"] == 0
    data.pop("created_at")
    replayed.pop("created_at")
    assert replayed == data
    differ = ("- Made ", "- Judge cost: ")
    body = [line for line in markdown.splitlines() if not line.startswith(differ)]
    again = (tmp_path / "b" / "calibration.md").read_text(encoding="utf-8").splitlines()
    assert [line for line in again if not line.startswith(differ)] == body


def test_a_human_sample_of_10_warns_in_the_terminal_the_files_and_under_quiet(
    tmp_path: Path, endpoint: Endpoint, bundled: Dataset
) -> None:
    config = _config(tmp_path, endpoint.base_url)
    cache = tmp_path / "judgments.jsonl"
    runs = _runs(tmp_path, bundled)
    common = [*runs, "--config", str(config), "--judge-cache", str(cache)]
    result = _invoke(*common, "--human-sample", "10", "--out", str(tmp_path / "a"))
    assert result.exit_code == 0, result.output  # a warning, not a failure
    shown = "warning: only 10 queries labelled by people (--human-sample 10)"
    assert shown in " ".join(result.output.split())
    data = json.loads((tmp_path / "a" / "calibration.json").read_text(encoding="utf-8"))
    assert [w["code"] for w in data["warnings"]] == ["small-human-sample"]
    markdown = (tmp_path / "a" / "calibration.md").read_text(encoding="utf-8")
    assert "## Warnings" in markdown and data["warnings"][0]["message"] in markdown
    quiet = _invoke(*common, "--human-sample", "10", "--strict", "-q")
    assert quiet.exit_code == 0, quiet.output
    assert " ".join(quiet.output.split()).startswith(shown)  # stderr: the report is not shown


def test_cost_on_a_replay_says_spent_now_and_recorded(
    tmp_path: Path, endpoint: Endpoint, bundled: Dataset
) -> None:
    config = _config(tmp_path, endpoint.base_url)
    config.write_text(
        config.read_text(encoding="utf-8") + "price_in = 1.0\nprice_out = 2.0\n", encoding="utf-8"
    )
    cache = tmp_path / "judgments.jsonl"
    pairs = len(human_pairs(bundled).pairs)
    common = ["--config", str(config), "--judge-cache", str(cache)]
    first = _invoke(*common, "--out", str(tmp_path / "a"))
    assert first.exit_code == 0, first.output
    data = json.loads((tmp_path / "a" / "calibration.json").read_text(encoding="utf-8"))
    recorded = data["coverage"]["cost_usd"]
    assert recorded > 0 and data["spent"]["cost_usd"] == pytest.approx(recorded)
    assert (
        f"spent now ${recorded:.4f} ({pairs} calls made, 0 replayed); recorded ${recorded:.4f}"
        in (" ".join(first.output.split()))
    )
    second = _invoke(*common, "--strict", "--out", str(tmp_path / "b"))
    assert second.exit_code == 0, second.output
    again = json.loads((tmp_path / "b" / "calibration.json").read_text(encoding="utf-8"))
    assert again["spent"] == {
        "calls": 0, "replayed": pairs, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0,
    }  # fmt: skip
    assert again["coverage"]["cost_usd"] == recorded  # what the judgments cost when asked
    line = (
        f"Judge cost: spent now $0.0000 (0 calls made, {pairs} replayed); recorded ${recorded:.4f}"
    )
    assert line in " ".join(second.output.split())
    assert line in (tmp_path / "b" / "calibration.md").read_text(encoding="utf-8")


def test_strict_with_an_empty_cache_exits_2_and_asks_nothing(
    tmp_path: Path, endpoint: Endpoint
) -> None:
    cache = tmp_path / "empty.jsonl"
    cache.write_text("", encoding="utf-8")
    before = endpoint.calls
    result = _invoke(
        "--config", str(_config(tmp_path, endpoint.base_url)),
        "--judge-cache", str(cache), "--strict", "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "not in the judge cache" in result.output and "--strict" in result.output
    assert "Traceback" not in result.output
    assert endpoint.calls == before and not (tmp_path / "out" / "calibration.json").exists()


def test_a_closed_port_fails_every_judgment_counts_them_and_exits_69(tmp_path: Path) -> None:
    config = _config(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")
    out = tmp_path / "out"
    result = _invoke("--config", str(config), "--judge-cache", "none", "--out", str(out))
    assert result.exit_code == 69, result.output
    assert "kappa cannot be computed" in result.output and "Traceback" not in result.output
    data = json.loads((out / "calibration.json").read_text(encoding="utf-8"))
    pairs = data["coverage"]["pairs"]
    assert pairs > 0 and data["coverage"] == {**data["coverage"], "judged": 0}
    assert data["coverage"]["failed"] == {"connection": pairs}
    assert data["kappas"] == [] and data["coverage"]["unreliable"] is True
    assert "connection" in (out / "calibration.md").read_text(encoding="utf-8")


def test_without_a_judge_table_the_command_says_how_to_add_one(tmp_path: Path) -> None:
    config = tmp_path / "recallbench.toml"
    config.write_text("k = 10\n", encoding="utf-8")
    result = _invoke("--config", str(config))
    assert result.exit_code == 2 and "no [judge] table" in result.output


def test_a_run_made_on_another_dataset_is_refused(tmp_path: Path, endpoint: Endpoint) -> None:
    other = _dataset({"q0": {"d0": 1}})
    path = tmp_path / "run.json"
    path.write_text(_run(other, "S", {"q0": ["d0"]}).model_dump_json(), encoding="utf-8")
    result = _invoke("--config", str(_config(tmp_path, endpoint.base_url)), str(path))
    assert result.exit_code == 2 and "the run was made on generated" in result.output


def test_help_shows_examples() -> None:
    result = _invoke("--help")
    assert result.exit_code == 0
    assert "--human-sample" in result.output and "Examples:" in result.output
    assert "--strict" in result.output and "69" in result.output
