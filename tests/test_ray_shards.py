"""The Ray recipe of docs/scale.md: four shards of a run as Ray tasks on a local cluster,
merged, give the unsharded run's files and history entry byte for byte (the clock held
still in every worker, as in test_merge)."""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from recallbench.cli import main
from test_merge import MEASURES, files_of, history, hold_clock, invoke, locomo_file

try:
    import ray
except ImportError:  # pragma: no cover - the dev extra installs it
    if os.environ.get("RECALLBENCH_REQUIRE_DATA") == "1":
        raise
    pytest.skip("needs ray (pip install -e '.[dev]')", allow_module_level=True)

TESTS = Path(__file__).resolve().parent


def _setattr(target: str, value: Any) -> None:
    module, name = target.rsplit(".", 1)
    setattr(importlib.import_module(module), name, value)


def run_shard(arguments: list[str]) -> str:
    """One shard, in a Ray worker, through recallbench's command line in that process."""
    hold_clock(_setattr)  # the worker's clock, as the test holds its own
    result = CliRunner().invoke(main, arguments)
    if result.exit_code != 0:
        raise RuntimeError(f"recallbench {' '.join(arguments)}\n{result.output}")
    return result.output


def test_four_ray_tasks_merge_into_the_unsharded_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hold_clock(monkeypatch.setattr)
    data = f"locomo:{locomo_file(tmp_path, conversations=6, seed=5)}"
    common = ["run", "--dataset", data, "--system", "builtin-lexical", *MEASURES]
    out = tmp_path / "out"
    invoke([*common, "--out", str(out), "--store", f"sqlite:///{tmp_path / 'whole.db'}"])
    whole = files_of(out)
    shutil.move(out, tmp_path / "whole")

    shards = [tmp_path / f"shard-{i}" for i in range(1, 5)]
    # workers import this module (and test_merge) by name: the tests folder on their path
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(TESTS)}},
    )
    try:
        task = ray.remote(run_shard)
        refs = [
            task.remote([*common, "--shard", f"{i}/4", "--out", str(shard)])
            for i, shard in enumerate(shards, 1)
        ]
        outputs = ray.get(refs, timeout=300)
    finally:
        ray.shutdown()
    assert all("shard" in output for output in outputs)

    invoke(["merge", str(out), *map(str, shards), "--store", f"sqlite:///{tmp_path / 'm.db'}"])
    merged = files_of(out)
    assert sorted(merged) == sorted(whole)
    for name, content in whole.items():
        assert merged[name] == content, name
    entries = history(f"sqlite:///{tmp_path / 'whole.db'}")
    assert len(entries) == 1
    assert history(f"sqlite:///{tmp_path / 'm.db'}") == entries
