"""`recallbench gate` and `recallbench baseline`: thresholds, the rolling baseline, the
significance guard, strict mode and the CI outputs, on reports built by the real pipeline."""

from __future__ import annotations

import asyncio
import json
import xml.etree.ElementTree as ET
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import markdown_shown
from recallbench.cli import main
from recallbench.core import Dataset, Document, Query
from recallbench.datasets import load_dataset
from recallbench.measures import parse_measures
from recallbench.report import Report, build_report
from recallbench.runner import run_dataset
from recallbench.store import open_store
from recallbench.systems import create_system

MEASURES = parse_measures(["mrr@10", "ndcg@10", "recall@10", "P@3"])


@pytest.fixture(scope="module")
def bundled_report() -> Report:
    dataset = load_dataset("agent-memory-sample")
    run = asyncio.run(run_dataset(dataset, create_system("builtin-lexical"), k=20))
    return build_report(dataset, run, MEASURES)


def _write(path: Path, report: Report) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report.model_dump_json())
    return path


def _scaled(report: Report, measure: str, factor: float, later: int = 1) -> Report:
    """The same report with ``measure`` scaled on every query (a consistent regression)."""
    queries = [
        q.model_copy(update={"values": {**q.values, measure: v * factor}})
        if (v := q.values.get(measure)) is not None
        else q
        for q in report.queries
    ]
    kept = [q.values[measure] for q in queries if q.values.get(measure) is not None]
    return report.model_copy(
        update={
            "queries": queries,
            "means": {**report.means, measure: sum(kept) / len(kept)},
            "created_at": report.created_at + timedelta(minutes=later),
        }
    )


def _gate(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """The gate through the CLI, in a terminal wide enough that no message wraps."""
    result = CliRunner(env={"COLUMNS": "400", **(env or {})}).invoke(main, ["gate", *args])
    return result.exit_code, result.output


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "recallbench.toml"
    path.write_text(text)
    return path


def test_thresholds_pass_warn_and_fail(bundled_report: Report, tmp_path: Path) -> None:
    report = _write(tmp_path / "report.json", bundled_report)
    mrr = bundled_report.means["mrr@10"]
    assert mrr is not None
    passing = _config(tmp_path, f'[gates.measures."mrr@10"]\nmin = {mrr - 0.1:.3f}\n')
    code, out = _gate(str(report), "--config", str(passing), "--baseline", "none")
    assert code == 0, out
    assert "gate PASS" in out and f"mrr@10 = {mrr:.4f} >= minimum" in out

    warning = _config(tmp_path, f'[gates.measures."mrr@10"]\nmin = 0.1\ntarget = {mrr + 0.1:.3f}\n')
    code, out = _gate(str(report), "--config", str(warning), "--baseline", "none")
    assert code == 0, out
    assert "gate WARN" in out and "misses target" in out
    code, out = _gate(str(report), "--config", str(warning), "--baseline", "none", "--strict")
    assert code == 1 and "failed by --strict" in out

    failing = _config(
        tmp_path,
        f'[gates.measures."MRR@10"]\nmin = {mrr + 0.05:.3f}\n'
        f'[gates.measures."ndcg@10"]\nmin = 0.99\nblocking = false\n',
    )
    code, out = _gate(str(report), "--config", str(failing), "--baseline", "none")
    assert code == 1, out
    assert "gate FAIL" in out and "< minimum" in out and "(non-blocking)" in out


def test_categories_latency_errors_and_stability(bundled_report: Report, tmp_path: Path) -> None:
    report = _write(tmp_path / "report.json", bundled_report)
    causal = next(g for g in bundled_report.breakdowns["category"] if g.name == "causal")
    recall = causal.means["recall@10"]
    assert recall is not None
    config = _config(
        tmp_path,
        f'[gates.categories.causal."recall@10"]\nmin = {recall + 0.01:.4f}\n'
        "[gates.latency]\np99 = 0.000001\n"
        "[gates]\nmax_error_rate = 0.0\nmin_stability = 0.9\n",
    )
    code, out = _gate(str(report), "--config", str(config), "--baseline", "none", "-q")
    assert code == 1
    code, out = _gate(str(report), "--config", str(config), "--baseline", "none")
    assert "recall@10 [causal]" in out and "latency p99" in out
    assert "0 of 120 queries failed" in out
    assert "run with `recallbench run --repeat 2`" in out


def test_min_recall_per_query_from_the_dataset(tmp_path: Path) -> None:
    documents = tuple(
        Document(id=f"d{i}", text=f"memory number {i} about topic{i}") for i in range(4)
    )
    queries = (
        Query(id="q0", text="topic0", min_recall=1.0),
        Query(id="q1", text="topic1 topic2", min_recall=1.0),
        Query(id="q2", text="topic3"),
    )
    qrels = {"q0": {"d0": 2}, "q1": {"d1": 2, "d3": 1}, "q2": {"d3": 3}}
    dataset = Dataset(name="tiny", documents=documents, queries=queries, qrels=qrels)
    run = asyncio.run(run_dataset(dataset, create_system("builtin-lexical"), k=10))
    report = build_report(dataset, run, parse_measures(["recall@10"]))
    path = _write(tmp_path / "report.json", report)
    config = _config(tmp_path, "[gates]\nmin_recall_measure = 'recall@10'\n")
    code, out = _gate(str(path), "--config", str(config), "--baseline", "none")
    assert code == 1, out
    assert "1 of 2 queries with a min_recall reach it; below: q1 0.50 < 1" in out


def test_configuration_errors_name_the_key_and_file(bundled_report: Report, tmp_path: Path) -> None:
    report = _write(tmp_path / "report.json", bundled_report)
    bad = _config(tmp_path, '[gates.measures."mrr@10"]\nminimum = 0.6\nmin = "high"\n')
    code, out = _gate(str(report), "--config", str(bad))
    assert code == 2
    assert str(bad) in out
    assert 'gates.measures["mrr@10"].minimum: unknown field' in out
    assert 'gates.measures["mrr@10"].min: must be a number' in out
    unknown = _config(tmp_path, '[gates.measures."ndcg@1O"]\nmin = 0.6\n')
    code, out = _gate(str(report), "--config", str(unknown))
    assert code == 2 and "ndcg@1O" in out
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.recallbench.gates]\nmax_error_rate = 2\n")
    code, out = _gate(str(report), "--config", str(pyproject))
    assert code == 2 and "tool.recallbench.gates.max_error_rate" in out
    broken = _config(tmp_path, "[gates\n")
    code, out = _gate(str(report), "--config", str(broken))
    assert code == 2 and "invalid TOML" in out and "Traceback" not in out


def test_pyproject_configuration_is_found(
    bundled_report: Report, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = _write(tmp_path / "report.json", bundled_report)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[tool.recallbench.gates.measures."mrr@10"]\nmin = 0.99\n'
    )
    monkeypatch.chdir(tmp_path)
    code, out = _gate(str(report), "--baseline", "none")
    assert code == 1, out
    assert "mrr@10 >= 0.99" in out


def test_outputs_junit_markdown_and_job_summary(bundled_report: Report, tmp_path: Path) -> None:
    report = _write(tmp_path / "report.json", bundled_report)
    config = _config(
        tmp_path,
        '[gates.measures."mrr@10"]\nmin = 0.99\n[gates.measures."ndcg@10"]\nmin = 0.1\n'
        "target = 0.99\n",
    )
    junit, markdown, summary = tmp_path / "g.xml", tmp_path / "g.md", tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    code, out = _gate(
        str(report),
        "--config",
        str(config),
        "--baseline",
        "none",
        "--junit",
        str(junit),
        "--summary-md",
        str(markdown),
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert code == 1, out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert suite.get("tests") == str(len(cases)) == "3"
    assert suite.get("failures") == "1"
    assert [c.find("failure") is not None for c in cases] == [True, False, False]
    assert "warning:" in (cases[2].findtext("system-out") or "")
    text = markdown.read_text()
    assert text.startswith("## ❌ recallbench gate: fail")
    assert "| ❌ | mrr@10 >= 0.99 |" in text
    assert summary.read_text() == "earlier step\n" + text + "\n"


def _store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'history.db'}"


def test_rolling_baseline_and_significance_guard(bundled_report: Report, tmp_path: Path) -> None:
    url = _store_url(tmp_path)
    with open_store(url) as store:
        # old accepted runs far better than the last two: outside a window of 2
        for minutes in (-50, -40):
            store.accept(store.record(_scaled(bundled_report, "mrr@10", 1.4, minutes)).id)
        for minutes in (-20, -10):
            store.accept(store.record(_scaled(bundled_report, "mrr@10", 1.0, minutes)).id)
    config = _config(tmp_path, "[gates.regression]\nwindow = 2\n")
    same = _write(tmp_path / "same" / "report.json", bundled_report)
    code, out = _gate(str(same), "--config", str(config), "--store", url)
    assert code == 0, out
    assert "rolling mean of the last 2 accepted runs" in out
    assert "mrr@10 0." in out and "change +0.0%" in out

    worse = _write(tmp_path / "worse" / "report.json", _scaled(bundled_report, "mrr@10", 0.5, 5))
    code, out = _gate(str(worse), "--config", str(config), "--store", url)
    assert code == 1, out
    assert "drop +50.0% (allowed 15%, graded); significant" in out

    loose = _config(tmp_path, "[gates.regression]\nwindow = 2\ndrop = 0.6\n")
    code, out = _gate(str(worse), "--config", str(loose), "--store", url)
    assert code == 0, out


def test_a_drop_on_too_few_differing_queries_cannot_be_judged(tmp_path: Path) -> None:
    """Six queries, two of them moving from rank 1 to rank 2: MRR drops 16.7% (> 15%) on
    two differing queries, where the one-sided test can never reach alpha (smallest p 1/4):
    the gate says it cannot judge, a warning that --strict turns into a failure."""
    documents = tuple(Document(id=f"d{i}", text=f"t{i}") for i in range(8))
    queries = tuple(Query(id=f"q{i}", text=f"t{i}") for i in range(6))
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(6)}
    dataset = Dataset(name="six", documents=documents, queries=queries, qrels=qrels)
    from recallbench.core import Hit, QueryResult, Run, RunSpec

    def report(second: set[int], minutes: int) -> Report:
        results = tuple(
            QueryResult(
                query_id=f"q{i}",
                hits=(Hit(doc_id="d7"), Hit(doc_id=f"d{i}"))
                if i in second
                else (Hit(doc_id=f"d{i}"),),
            )
            for i in range(6)
        )
        built = build_report(
            dataset,
            Run(spec=RunSpec(system="s", dataset=dataset.ref), results=results),
            parse_measures(["mrr@10"]),
        )
        return built.model_copy(
            update={"created_at": built.created_at + timedelta(minutes=minutes)}
        )

    url = _store_url(tmp_path)
    with open_store(url) as store:
        store.accept(store.record(report(set(), -10)).id)
    path = _write(tmp_path / "r" / "report.json", report({0, 1}, 0))
    code, out = _gate(str(path), "--store", url)
    assert code == 0, out
    assert "drop +16.7%" in out
    assert "cannot judge a drop of 16.7% on 2 differing queries" in out
    assert "the test can never reach alpha=0.05 (smallest one-sided p = 1/2^2 = 0.25" in out
    code, out = _gate(str(path), "--store", url, "--strict")
    assert code == 1
    no_guard = _config(tmp_path, "[gates.regression]\nsignificance = false\n")
    code, out = _gate(str(path), "--store", url, "--config", str(no_guard))
    assert code == 1


def test_strict_fails_without_a_baseline(bundled_report: Report, tmp_path: Path) -> None:
    report = _write(tmp_path / "report.json", bundled_report)
    url = _store_url(tmp_path)
    config = _config(tmp_path, '[gates.measures."mrr@10"]\nmin = 0.1\n')
    code, out = _gate(str(report), "--config", str(config), "--store", url)
    assert code == 0, out
    assert "no accepted run of builtin-lexical" in out
    code, out = _gate(str(report), "--config", str(config), "--store", url, "--strict")
    assert code == 1 and "failed by --strict" in out
    # a baseline file the config names that does not exist yet: a warning (failed by --strict)
    named = _config(
        tmp_path, '[gates]\nbaseline = "nope.json"\n[gates.measures."mrr@10"]\nmin = 0.1\n'
    )
    code, out = _gate(str(report), "--config", str(named), "--strict")
    assert code == 1 and "does not exist" in out


def test_a_missing_baseline_file_on_the_command_line_is_bad_input(
    bundled_report: Report, tmp_path: Path
) -> None:
    """Issue 28 item 9: it only warned and exited 0, even on a 54.5% drop."""
    worse = _write(tmp_path / "report.json", _scaled(bundled_report, "ndcg@10", 0.455))
    missing = tmp_path / "nope.json"
    code, out = _gate(str(worse), "--baseline", str(missing), "--store", _store_url(tmp_path))
    assert code == 2, out
    assert f"--baseline {missing}: no such file" in out


def test_accept_then_the_next_gate_uses_it(bundled_report: Report, tmp_path: Path) -> None:
    url = _store_url(tmp_path)
    first = _write(tmp_path / "a" / "report.json", bundled_report)
    code, out = _gate(str(first), "--store", url, "--accept")
    assert code == 0, out
    assert "accepted run #1" in out
    assert "later runs of builtin-lexical on agent-memory-sample are gated against it" in out
    # issue 28 item 10: gating the accepted report again said "no accepted run ... accept one"
    code, out = _gate(str(first), "--store", url)
    assert code == 0, out
    assert "no accepted run" not in out and "accept one" not in out
    assert "is this report itself (run #1)" in out
    worse = _write(tmp_path / "b" / "report.json", _scaled(bundled_report, "ndcg@10", 0.7, 3))
    code, out = _gate(str(worse), "--store", url)
    assert code == 1, out
    assert "ndcg@10" in out and "drop +30.0%" in out and "worse than run #1" in out


def test_committed_baseline_file(bundled_report: Report, tmp_path: Path) -> None:
    url = _store_url(tmp_path)
    accepted = _write(tmp_path / "a" / "report.json", bundled_report)
    baseline = tmp_path / "ci" / "baseline.json"
    result = CliRunner().invoke(
        main, ["baseline", "accept", str(accepted), "--out", str(baseline), "--store", url]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(baseline.read_text())
    assert data["format"] == "recallbench.baseline/v1"
    assert data["means"] == bundled_report.means
    with open_store(url) as store:
        assert [run.accepted for run in store.runs()] == [True]
    config = _config(tmp_path, 'measures = ["mrr@10"]\n[gates]\nbaseline = "ci/baseline.json"\n')
    worse = _write(tmp_path / "b" / "report.json", _scaled(bundled_report, "mrr@10", 0.6, 2))
    code, out = _gate(str(worse), "--config", str(config))
    assert code == 1, out
    assert f"baseline file {baseline}" in out
    result = CliRunner().invoke(
        main,
        ["baseline", "accept", "1", "--out", str(tmp_path / "from-store.json"), "--store", url],
    )
    assert result.exit_code == 0, result.output
    from_store = json.loads((tmp_path / "from-store.json").read_text())
    assert from_store["means"] == pytest.approx(bundled_report.means)
    result = CliRunner().invoke(main, ["baseline", "accept", "#99", "--store", url])
    assert result.exit_code == 2


EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "ci"


def test_pre_push_recipe_passes_and_fails(tmp_path: Path) -> None:
    """The documented hook, run as git would run it, in a project with a recallbench.toml."""
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "RECALLBENCH_STORE": _store_url(tmp_path),
    }
    (tmp_path / "recallbench.toml").write_text(
        'systems = ["builtin-lexical"]\nmeasures = ["mrr@10"]\n'
        '[gates.measures."mrr@10"]\nmin = 0.3\n'
    )
    hook = subprocess.run(
        ["sh", str(EXAMPLES / "pre-push")], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert hook.returncode == 0, hook.stdout + hook.stderr
    assert "gate warn" in hook.stdout  # passes; warns that no run was accepted yet
    (tmp_path / "recallbench.toml").write_text(
        'systems = ["builtin-lexical"]\nmeasures = ["mrr@10"]\n'
        '[gates.measures."mrr@10"]\nmin = 0.99\n'
    )
    hook = subprocess.run(
        ["sh", str(EXAMPLES / "pre-push")], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert hook.returncode == 1
    assert "recallbench gate failed: see .recallbench/pre-push/gate.md" in hook.stderr
    assert "mrr@10 >= 0.99" in (tmp_path / ".recallbench" / "pre-push" / "gate.md").read_text()


def test_github_workflow_example_uses_real_commands() -> None:
    """Every recallbench command line of the example workflow parses with today's CLI."""
    import shlex

    text = (EXAMPLES / "recallbench.yml").read_text()
    lines = [
        line.split("run:", 1)[-1].strip().strip(">").strip()
        for line in text.splitlines()
        if "recallbench " in line and not line.lstrip().startswith("#")
    ]
    commands = [line for line in lines if line.startswith("recallbench ")]
    assert {shlex.split(c)[1] for c in commands} >= {"run", "gate"}
    for command in commands:
        words = [w for w in shlex.split(command)[1:] if "${{" not in w]
        result = CliRunner().invoke(main, [*words[:1], "--help"])
        assert result.exit_code == 0, command
        for word in words[1:]:
            if word.startswith("--"):
                assert word in result.output, f"{word} of {command!r} is not an option"


def test_readme_configuration_example_is_valid(tmp_path: Path) -> None:
    """The configuration shown in docs/gates.md loads, every key of it known."""
    import re

    from recallbench.gates import load_config

    readme = (Path(__file__).resolve().parents[1] / "docs" / "gates.md").read_text()
    section = readme.split("# Quality gates, history and CI", 1)[1]
    block = re.search(r"```toml\n(.*?)```", section, re.S)
    assert block is not None
    path = tmp_path / "recallbench.toml"
    path.write_text(block.group(1))
    config = load_config(path).config
    assert config.gates.measures["mrr@10"].min == 0.6
    assert config.gates.measures["ndcg@10"].blocking is False
    assert config.gates.regression.window == 5 and config.gates.latency.p95 == 200


def test_an_unwritable_job_summary_does_not_change_the_verdict(
    bundled_report: Report, tmp_path: Path
) -> None:
    report = _write(tmp_path / "report.json", bundled_report)
    config = _config(tmp_path, '[gates.measures."mrr@10"]\nmin = 0.1\n')
    summary = str(tmp_path / "no-such-folder" / "summary.md")
    code, out = _gate(
        str(report), "--config", str(config), "--baseline", "none",
        env={"GITHUB_STEP_SUMMARY": summary},
    )  # fmt: skip
    assert code == 0, out
    assert "cannot append to $GITHUB_STEP_SUMMARY" in out and "Traceback" not in out


def test_the_gate_comment_escapes_names_from_datasets_and_systems(
    bundled_report: Report, tmp_path: Path
) -> None:
    """A system named like markup renders as its characters in the PR comment."""
    from markdown_it import MarkdownIt

    hostile = "<img src=x onerror=alert(1)> *x* | y"
    report = bundled_report.model_copy(
        update={"system": bundled_report.system.model_copy(update={"system": hostile})}
    )
    path = _write(tmp_path / "report.json", report)
    summary = tmp_path / "gate.md"
    code, out = _gate(str(path), "--baseline", "none", "--summary-md", str(summary))
    assert code == 0, out
    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(summary.read_text())
    assert "<img" not in rendered and "<em>" not in rendered  # no tag, no emphasis
    assert hostile in markdown_shown(summary)
