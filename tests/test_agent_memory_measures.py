"""Agent-memory measures on hand-computed cases: must-surface, importance weighting, tier
precision, cold start, decision chains, folder diversity, cost, and the equivalence rule."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from recallbench.core import Dataset, Document, Hit, Query, QueryResult, Run, RunSpec
from recallbench.measures import Rules, parse_measures
from recallbench.measures._dataset_eval import evaluate_dataset
from recallbench.report import build_report


def _doc(doc_id: str, tier: str = "normal", folder: str = "notes", text: str = "") -> Document:
    return Document(
        id=doc_id, text=text or f"text of {doc_id}", metadata={"tier": tier, "folder": folder}
    )


DOCUMENTS = (
    _doc("rule", "constitutional", "rules", "x" * 40),  # 10 tokens
    _doc("crit", "critical", "incidents", "y" * 20),  # 5 tokens
    _doc("note", "normal", "notes", "z" * 8),  # 2 tokens
    _doc("temp", "temporary", "notes", "w" * 4),  # 1 token
    _doc("other", "normal", "chat", "v" * 12),  # 3 tokens
    _doc("copy", "normal", "chat", "V" * 12),  # the same words as "other", once lower-cased
)
QUERIES = (
    Query(id="a", text="a", session_id="s1", chain="c1"),  # first of s1: cold
    Query(id="b", text="b", session_id="s1"),  # warm
    Query(id="c", text="c", tags=("cold-start",)),  # tagged cold
    Query(id="d", text="d"),  # no relevant memory
)
QRELS = {
    "a": {"rule": 3, "crit": 2, "note": 1},
    "b": {"crit": 1, "temp": 0},
    "c": {"rule": 1, "note": 2},
    "d": {},
}
DATASET = Dataset(
    name="tiny",
    documents=DOCUMENTS,
    queries=QUERIES,
    qrels=QRELS,
    chains={"c1": ("crit", "rule", "other")},
    equivalence={"same": ("other", "copy")},
)
RANKINGS = {
    "a": ["crit", "note", "temp", "rule"],
    "b": ["temp", "crit", "crit"],
    "c": ["note", "other"],
    "d": ["other", "copy"],
}


def _values(*names: str, rankings: dict[str, list[str]] = RANKINGS) -> dict[str, list[float]]:
    evaluation = evaluate_dataset(DATASET, rankings, parse_measures(list(names)), Rules())
    out: dict[str, list[float]] = {}
    for name in evaluation.values:
        population = evaluation.population(name)
        out[name] = [
            float(v) if chosen else math.nan
            for v, chosen in zip(evaluation.values[name], population, strict=True)
        ]
        out[f"mean {name}"] = [evaluation.mean(name)]
    return out


def _same(actual: list[float], expected: list[float]) -> bool:
    return len(actual) == len(expected) and all(
        (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y)
        for x, y in zip(actual, expected, strict=True)
    )


def test_must_surface_lists_missed_rules() -> None:
    nan = math.nan
    values = _values("must_surface@3", "must_surface@4")
    # a: "rule" at rank 4; c: "rule" never returned; b, d: no constitutional relevant memory
    assert _same(values["must_surface@3"], [0, nan, 0, nan])
    assert _same(values["must_surface@4"], [1, nan, 0, nan])
    evaluation = evaluate_dataset(DATASET, RANKINGS, parse_measures(["must_surface@3"]), Rules())
    assert evaluation.details["must_surface@3"] == {"a": ("rule",), "c": ("rule",)}


def test_importance_weighted_recall() -> None:
    values = _values("iw_recall@2")
    # a: relevant rule(4) crit(3) note(1) = 8; top 2 has crit, note -> 4/8
    # b: relevant crit(3); top 2 (temp, crit) -> 1; c: rule(4) note(1); top 2 has note -> 1/5
    assert _same(values["iw_recall@2"], [0.5, 1.0, 0.2, math.nan])
    assert values["mean iw_recall@2"] == [pytest.approx((0.5 + 1 + 0.2) / 3)]


def test_precision_by_tier() -> None:
    nan = math.nan
    values = _values("precision_temporary@3", "precision_normal@3")
    # temporary memories in the top 3: a has temp (not relevant), b has temp (grade 0)
    assert _same(values["precision_temporary@3"], [0, 0, nan, nan])
    # normal: a note (relevant); c note (relevant), other (not); d other, copy (unjudged)
    assert _same(values["precision_normal@3"], [1, nan, 0.5, 0])


def test_cold_and_warm_mrr_and_their_ratio() -> None:
    nan = math.nan
    values = _values("mrr_cold@10", "mrr_warm@10", "cold_start_ratio@10")
    # cold: a (first of s1) RR 1, c (tagged) RR 1; warm: b RR 1/2; d has no relevant memory
    assert _same(values["mrr_cold@10"], [1, nan, 1, nan])
    assert _same(values["mrr_warm@10"], [nan, 0.5, nan, nan])
    assert values["mean cold_start_ratio@10"] == [pytest.approx(1 / 0.5)]
    assert all(math.isnan(v) for v in values["cold_start_ratio@10"])


def test_chain_completeness_and_missed_members() -> None:
    nan = math.nan
    values = _values("chain_completeness@4")
    # chain c1 = crit, rule, other; a's top 4 has crit and rule
    assert _same(values["chain_completeness@4"], [2 / 3, nan, nan, nan])
    evaluation = evaluate_dataset(
        DATASET, RANKINGS, parse_measures(["chain_completeness@1"]), Rules()
    )
    assert evaluation.details["chain_completeness@1"] == {"a": ("rule", "other")}


def test_folder_redundancy() -> None:
    values = _values("ils_folder@3")
    # a: incidents, notes, notes -> 1 - 2/3; b: notes, incidents (crit repeated counts once) -> 0
    # c: notes, chat -> 0; d: chat, chat -> 1 - 1/2
    assert _same(values["ils_folder@3"], [1 / 3, 0, 0, 0.5])


def test_tokens_saving_noise_and_repeats() -> None:
    values = _values("tokens@2", "token_saving@2", "noise@3", "dedup_saving@3")
    # tokens: a crit 5 + note 2; b temp 1 + crit 5; c note 2 + other 3; d other 3 + copy 3
    assert _same(values["tokens@2"], [7, 6, 5, 6])
    corpus = 10 + 5 + 2 + 1 + 3 + 3
    assert _same(
        values["token_saving@2"], [1 - 7 / corpus, 1 - 6 / corpus, 1 - 5 / corpus, 1 - 6 / corpus]
    )
    # unjudged in the top 3: a temp (judged for b, not for a); b none (temp judged 0 there);
    # c "other"; d both
    assert _same(values["noise@3"], [1 / 3, 0, 0.5, 1])
    # repeats among the first 3 positions: b repeats crit (5 of 11 tokens); d "copy" has
    # the same words as "other" (3 of 6 tokens)
    assert _same(values["dedup_saving@3"], [0, 5 / 11, 0, 0.5])


def test_a_missing_query_scores_zero_where_defined() -> None:
    rankings = {k: v for k, v in RANKINGS.items() if k != "a"}
    values = _values(
        "must_surface@4", "iw_recall@4", "chain_completeness@4", "tokens@4", rankings=rankings
    )
    assert values["must_surface@4"][0] == 0 and values["iw_recall@4"][0] == 0
    assert values["chain_completeness@4"][0] == 0
    assert math.isnan(values["tokens@4"][0])  # cost is over the queries the system answered


def test_equivalence_classes_count_once() -> None:
    dataset = Dataset(
        name="eq",
        documents=(_doc("x"), _doc("x2"), _doc("y")),
        queries=(Query(id="q", text="q"),),
        qrels={"q": {"x": 2, "x2": 1, "y": 1}},
        equivalence={"X": ("x", "x2")},
    )
    rankings = {"q": ["x2", "x", "y"]}
    measures = parse_measures(["recall@1", "recall@3", "P@2", "mrr@10"])
    plain = evaluate_dataset(dataset, rankings, measures, Rules())
    merged = evaluate_dataset(dataset, rankings, measures, Rules(equivalence=True))
    # without the rule: 3 relevant memories; with it: 2 (the class and y), x repeats x2
    assert [plain.mean(m) for m in ("recall@1", "recall@3", "P@2")] == [1 / 3, 1.0, 1.0]
    assert [merged.mean(m) for m in ("recall@1", "recall@3", "P@2")] == [0.5, 1.0, 0.5]
    assert merged.mean("mrr@10") == 1.0
    assert "equivalence" in Rules(equivalence=True).describe()


def test_report_carries_details_and_context_means() -> None:
    results = tuple(
        QueryResult(query_id=qid, hits=tuple(Hit(doc_id=d) for d in ranking))
        for qid, ranking in RANKINGS.items()
    )
    run = Run(spec=RunSpec(system="s", dataset=DATASET.ref), results=results)
    report = build_report(
        DATASET, run, parse_measures(["must_surface@3", "cold_start_ratio@10", "mrr@10"])
    )
    assert report.details == {"must_surface@3": {"a": ["rule"], "c": ["rule"]}}
    assert report.means["must_surface@3"] == 0.0
    assert report.means["cold_start_ratio@10"] == pytest.approx(2.0)
    assert {q.id: q.values["cold_start_ratio@10"] for q in report.queries} == dict.fromkeys("abcd")


def test_agent_memory_measures_need_the_dataset() -> None:
    from recallbench import evaluate
    from recallbench.core import UnknownMeasureError

    with pytest.raises(UnknownMeasureError, match="needs the dataset"):
        evaluate({"q": {"d": 1}}, {"q": ["d"]}, ["must_surface@5"])


AGENT_MEASURES = [
    "must_surface@5",
    "iw_recall@10",
    "precision_constitutional@5",
    "precision_temporary@10",
    "mrr_cold@10",
    "mrr_warm@10",
    "cold_start_ratio@10",
    "chain_completeness@10",
    "ils_folder@10",
    "tokens@10",
    "token_saving@10",
    "noise@10",
    "dedup_saving@10",
]


def test_every_agent_measure_runs_on_the_bundled_dataset(tmp_path: Path) -> None:
    """Through `recallbench run`, with the bundled dataset's metadata (tiers, folders,
    sessions, chains, equivalence classes): every measure has a value and report.md its
    agent-memory section."""
    from click.testing import CliRunner

    from recallbench.cli import main

    args = ["run", "--no-store", "--equivalence", "--out", str(tmp_path), "-q"]
    for measure in AGENT_MEASURES:
        args += ["-m", measure]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert all(report["means"][m] is not None for m in AGENT_MEASURES), report["means"]
    assert 0 <= report["means"]["must_surface@5"] <= 1
    assert report["means"]["token_saving@10"] > 0.5
    assert "equivalence" in report["rules"]
    assert set(report["details"]) <= {"must_surface@5", "chain_completeness@10"}
    markdown = (tmp_path / "report.md").read_text()
    assert "## Agent memory" in markdown and "| must_surface@5 |" in markdown
    assert "cold_start_ratio@10" in markdown and ">= 0.7" in markdown
