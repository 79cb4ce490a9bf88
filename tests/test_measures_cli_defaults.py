"""Which measures `recallbench run` reports: -m, then recallbench.toml, then the dataset's
own default measures, then recallbench's; the report names the source."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from conftest import shared_data
from recallbench.cli import main
from recallbench.datasets import load_dataset
from recallbench.datasets._default_measures import DEFAULT_MEASURES_KEY
from recallbench.datasets._locomo import load_locomo
from recallbench.datasets._longmemeval import load_longmemeval
from recallbench.measures import DEFAULT_MEASURES, parse_measures


def _dataset(tmp_path: Path, metadata: dict[str, object]) -> Path:
    data = {
        "format": "recallbench.dataset/v1",
        "name": "tiny",
        "metadata": metadata,
        "documents": [{"id": "d0", "text": "apple pie"}, {"id": "d1", "text": "plum jam"}],
        "queries": [{"id": "q1", "text": "apple"}, {"id": "q2", "text": "jam"}],
        "qrels": {"q1": {"d0": 1}, "q2": {"d1": 1}},
    }
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(data))
    return path


def _run(tmp_path: Path, *args: str) -> tuple[list[str], str]:
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["run", "--no-store", "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    return [m["name"] for m in report["measures"]], report["rules"]["measures"]


def test_the_dataset_names_its_measures(tmp_path: Path) -> None:
    path = _dataset(tmp_path, {DEFAULT_MEASURES_KEY: ["hit@1", "mrr@10"]})
    assert _run(tmp_path, "--dataset", str(path)) == (
        ["hit@1", "mrr@10"],
        f"the dataset's defaults (metadata.{DEFAULT_MEASURES_KEY})",
    )


def test_flags_win_over_the_configuration_which_wins_over_the_dataset(tmp_path: Path) -> None:
    path = _dataset(tmp_path, {DEFAULT_MEASURES_KEY: ["hit@1"]})
    config = tmp_path / "recallbench.toml"
    config.write_text('measures = ["recall@5"]\n')
    configured = _run(tmp_path, "--dataset", str(path), "--config", str(config))
    assert configured == (["recall@5"], "the configuration's measures")
    flagged = _run(tmp_path, "--dataset", str(path), "--config", str(config), "-m", "P@1")
    assert flagged == (["P@1"], "named with -m")


def test_without_any_the_builtin_default_applies(tmp_path: Path) -> None:
    names, source = _run(tmp_path, "--dataset", str(_dataset(tmp_path, {})))
    assert names == [str(m) for m in parse_measures(DEFAULT_MEASURES)]
    assert source.startswith("recallbench's defaults")


def test_a_malformed_list_is_refused_before_the_run(tmp_path: Path) -> None:
    path = _dataset(tmp_path, {DEFAULT_MEASURES_KEY: "ndcg@10"})
    result = CliRunner().invoke(
        main, ["run", "--no-store", "--dataset", str(path), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    assert f"metadata.{DEFAULT_MEASURES_KEY}" in result.output
    assert not (tmp_path / "o" / "report.json").exists()


def test_the_bundled_sample_and_the_loaders_name_measures_that_parse() -> None:
    bundled = load_dataset("agent-memory-sample").metadata[DEFAULT_MEASURES_KEY]
    locomo = load_locomo(shared_data("locomo", "locomo10.json")).metadata[DEFAULT_MEASURES_KEY]
    longmemeval = load_longmemeval(
        shared_data("longmemeval", "longmemeval_s_sample28.json")
    ).metadata[DEFAULT_MEASURES_KEY]
    for named in (bundled, locomo, longmemeval):
        assert isinstance(named, list)
        assert [str(m) for m in parse_measures([str(n) for n in named])] == named
    assert isinstance(locomo, list) and {"recall_any@5", "recall_all@5"} <= set(locomo)
    assert locomo == longmemeval
