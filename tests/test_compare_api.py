"""`recallbench.compare(a, b, measures=...)` (issue 32, item 6.6): the one-call comparison
equals `recallbench compare --format json` on the same inputs, from paths or objects."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import recallbench
from recallbench.cli import main
from recallbench.core import Run
from recallbench.report import read_report

MEASURES = ["ndcg@10", "mrr@10", "recall@10"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    systems = ["--system", "builtin-lexical", "--system", "builtin-hybrid"]
    measures = [arg for m in MEASURES for arg in ("-m", m)]
    result = CliRunner().invoke(main, ["run", *systems, *measures, "--out", str(out), "--no-store"])
    assert result.exit_code == 0, result.output
    return out


def _cli_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["compare", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)  # standard output is the JSON alone
    return data


def _same(a: dict[str, Any], b: dict[str, Any], *ignored: str) -> None:
    for key in ("created_at", *ignored):
        a.pop(key), b.pop(key)
    assert a == b


def test_the_api_equals_the_cli_json_on_the_same_files(runs: Path) -> None:
    a, b = runs / "builtin-lexical", runs / "builtin-hybrid"
    options = ["--resamples", "2000", "--seed", "3", "--correction", "bh"]
    cli = _cli_json(str(a), str(b), "-m", "ndcg@10", "-m", "mrr@10", *options)
    api = recallbench.compare(
        a, b, measures=["ndcg@10", "mrr@10"], resamples=2000, seed=3, correction="bh"
    )
    assert [row.measure for row in api.comparisons] == ["ndcg@10", "mrr@10"]
    _same(json.loads(api.model_dump_json()), cli)


def test_runs_and_reports_as_objects_give_the_same_numbers(runs: Path) -> None:
    paths = [runs / name / "run.json" for name in ("builtin-lexical", "builtin-hybrid")]
    cli = _cli_json(*map(str, paths), "-m", "recall@10", "--resamples", "1000")
    objects = [Run.model_validate_json(path.read_text()) for path in paths]
    api = recallbench.compare(*objects, measures="recall@10", resamples=1000)
    _same(json.loads(api.model_dump_json()), cli, "systems")
    reports = [read_report(runs / name) for name in ("builtin-lexical", "builtin-hybrid")]
    from_reports = recallbench.compare(*reports, measures=["recall@10"], resamples=1000)
    assert [r.model_dump() for r in from_reports.comparisons] == [
        r.model_dump() for r in api.comparisons
    ]
    assert [s.source for s in from_reports.systems] == ["<Report 1>", "<Report 2>"]


def test_bad_input_is_a_located_error(runs: Path) -> None:
    from recallbench.core import RecallbenchError

    with pytest.raises(RecallbenchError, match=r"unknown measure 'nope'"):
        recallbench.compare(runs / "builtin-lexical", runs / "builtin-hybrid", measures=["nope"])


def test_compare_is_exported_documented_and_callable_in_any_import_order() -> None:
    assert "compare" in dir(recallbench) and "compare" in recallbench.__all__
    doc = recallbench.compare.__call__.__doc__ or ""
    assert "Example::" in doc and "recallbench.compare(" in doc
    code = (
        "import recallbench.compare.%s, recallbench\n"
        "print(callable(recallbench.compare), recallbench.compare.build_comparison.__name__)\n"
    )
    for first in ("_build", "_api"):
        out = subprocess.run(
            [sys.executable, "-c", code % first], capture_output=True, text=True, check=True
        ).stdout
        assert out.split() == ["True", "build_comparison"]
