"""Every dataset in ../shared/data converts to recallbench's JSON and validates."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import shared_data
from recallbench.cli import main
from recallbench.datasets import load_dataset

SOURCES = [
    ("beir", "beir_scifact"),
    ("smart", "cranfield"),
    ("smart", "cisi"),
    ("trec", "vaswani"),
    ("locomo", "locomo/locomo10.json"),
    ("locomo-sessions", "locomo/locomo10.json"),
    ("longmemeval", "longmemeval/longmemeval_oracle.json"),
    ("longmemeval-turns", "longmemeval/longmemeval_s_sample28.json"),
    ("longmemeval-turns", "longmemeval/longmemeval_oracle.json"),
    ("locomo", "locomo"),
    ("madial", "madial_bench"),
    ("madial-zh", "madial_bench"),
]


@pytest.mark.parametrize(("kind", "source"), SOURCES, ids=[f"{k}:{s}" for k, s in SOURCES])
def test_converts_and_validates(kind: str, source: str, tmp_path: Path) -> None:
    path = shared_data(*source.split("/"))
    destination = tmp_path / "dataset.json"
    runner = CliRunner()
    converted = runner.invoke(
        main, ["datasets", "convert", "--from", kind, str(path), str(destination)]
    )
    assert converted.exit_code == 0, converted.output
    # the written file passes the same validation its loader's output did: 0 problems
    validated = runner.invoke(main, ["datasets", "validate", str(destination)])
    assert validated.exit_code == 0 and validated.output.startswith("ok: "), validated.output
    assert load_dataset(str(destination)).sha256 == load_dataset(f"{kind}:{path}").sha256
