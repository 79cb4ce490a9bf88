"""Reports measured with a judge's labels: the labels and the judge in the report, the
judge's failure rate and cost in the gate (fail closed under --strict), the judge's
regression limit."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.core import Dataset
from recallbench.datasets import load_dataset
from recallbench.gates import load_config
from recallbench.gates._gate import run_gate
from recallbench.judges._fill import unjudged_pool, with_labels
from recallbench.judges._judgment import JudgeStats, Judgment
from recallbench.judges._summary import METADATA_KEY, summarize
from recallbench.judges._task_kinds import Relevance
from recallbench.measures import parse_measures
from recallbench.report import Report, build_report
from recallbench.runner import run_dataset
from recallbench.systems import create_system


def _judged(failed_every: int, tokens: int = 1_000) -> tuple[Dataset, Report]:
    """The bundled dataset with builtin-lexical's unjudged top 2 labelled, every
    ``failed_every``-th judgment failed; and that run's report on it."""
    dataset = load_dataset("agent-memory-sample")
    run = asyncio.run(run_dataset(dataset, create_system("builtin-lexical"), 10))
    items = unjudged_pool(dataset, [run], depth=2).items
    judgments: list[Judgment[Relevance]] = [
        Judgment(None, 0.5, "timeout", "slow")
        if index % failed_every == 0
        else Judgment(Relevance(index % 4, 0.9, "r"), (index % 4) / 3, model="m", tokens_in=tokens)
        for index in range(len(items))
    ]
    stats = JudgeStats(asked=len(items), max_failure_rate=0.1)
    stats.failed["timeout"] = sum(1 for j in judgments if j.failed)
    summary = summarize(
        judgments, stats, model="m", provider="openai", prompt="relevance v1", params={},
        cost=0.002 * sum(1 for j in judgments if not j.failed),
    )  # fmt: skip
    judged = with_labels(dataset, items, judgments, "relevance v1")
    judged = judged.replaced(
        metadata={**judged.metadata, METADATA_KEY: summary.model_dump(mode="json")}
    )
    return judged, build_report(judged, run, parse_measures(("ndcg@10",)))


def _gates(tmp_path: Path, text: str) -> object:
    path = tmp_path / "recallbench.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path).config.gates


def test_the_report_names_the_labels_and_the_judge() -> None:
    judged, report = _judged(failed_every=1_000)
    assert report.labels["llm"] == sum(
        1 for by_doc in judged.label_sources.values() for _ in by_doc
    )
    assert report.labels["dataset"] == 375
    assert report.judge is not None and report.judge.model == "m" and not report.judge.unreliable
    assert any("labels are not the dataset authors'" in w for w in report.warnings)
    # and a report on a dataset without a judge says nothing of one
    plain = build_report(
        load_dataset("agent-memory-sample"),
        asyncio.run(
            run_dataset(load_dataset("agent-memory-sample"), create_system("builtin-lexical"), 10)
        ),
        parse_measures(("ndcg@10",)),
    )
    assert plain.judge is None and plain.labels == {}
    assert "judge" not in json.loads(plain.model_dump_json())


def test_an_unreliable_judge_warns_and_fails_closed_under_strict(tmp_path: Path) -> None:
    _, report = _judged(failed_every=3)  # a third of the judgments failed
    assert report.judge is not None and report.judge.unreliable
    assert any("unreliable" in w for w in report.warnings)
    gates = _gates(tmp_path, "")
    check = next(c for c in run_gate(report, gates, None).checks if c.group == "judge")  # type: ignore[arg-type]
    assert check.status == "warn" and "unreliable" in check.message
    strict = run_gate(report, gates, None, strict=True)  # type: ignore[arg-type]
    assert strict.exit_code == 1
    assert next(c for c in strict.checks if c.group == "judge").status == "fail"
    _, fine = _judged(failed_every=1_000)
    check = next(c for c in run_gate(fine, gates, None).checks if c.group == "judge")  # type: ignore[arg-type]
    assert check.status == "pass"


def test_cost_gates_bound_the_judge_spend(tmp_path: Path) -> None:
    _, report = _judged(failed_every=1_000)
    assert report.judge is not None
    spent = report.judge.cost_usd
    per_query = spent / report.counts.queries
    gates = _gates(
        tmp_path,
        f"[gates.cost]\nmax_usd = {spent / 2}\nmax_usd_per_query = {per_query * 2}\n"
        f"max_tokens = {report.judge.tokens_in + report.judge.tokens_out}\n",
    )
    checks = {
        c.name.split(" <=")[0]: c for c in run_gate(report, gates, None).checks if c.group == "cost"
    }  # type: ignore[arg-type]
    assert checks["judge cost"].status == "fail" and checks["judge cost"].value == pytest.approx(
        spent
    )
    assert checks["judge cost per query"].status == "pass"
    assert checks["judge tokens"].status == "pass"
    soft = _gates(tmp_path, f"[gates.cost]\nmax_usd = {spent / 2}\nblocking = false\n")
    (check,) = [c for c in run_gate(report, soft, None).checks if c.group == "cost"]  # type: ignore[arg-type]
    assert check.status == "warn"


def test_gate_reads_the_judge_from_report_json(tmp_path: Path) -> None:
    _, report = _judged(failed_every=3)
    path = tmp_path / "report.json"
    path.write_text(report.model_dump_json(), encoding="utf-8")
    config = tmp_path / "recallbench.toml"
    config.write_text("[gates.cost]\nmax_usd = 100\n", encoding="utf-8")
    common = ["gate", str(path), "--config", str(config), "--baseline", "none"]
    relaxed = CliRunner().invoke(main, common)
    assert relaxed.exit_code == 0, relaxed.output
    assert "judge failures" in relaxed.output
    strict = CliRunner().invoke(main, [*common, "--strict"])
    assert strict.exit_code == 1, strict.output


def test_regression_on_judge_labels_uses_the_judge_limit() -> None:
    from recallbench.gates._config import Gates
    from recallbench.gates._regression import _kind

    _, judged = _judged(failed_every=1_000)
    gates = Gates()
    assert _kind("ndcg@10", gates, judged) == "judge"
    plain = judged.model_copy(update={"labels": {}})
    assert _kind("ndcg@10", gates, plain) == "graded"
