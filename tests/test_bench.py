"""`recallbench bench`: systems x datasets, one leaderboard with categories, flagged
questions, saturation and haystack warnings."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from recallbench.cli import main


def _dataset(tmp_path: Path) -> Path:
    data = {
        "format": "recallbench.dataset/v1",
        "name": "tiny",
        "documents": [
            {"id": f"d{n}", "text": text}
            for n, text in enumerate(
                ["apple pie", "banana bread", "cherry tart", "plum jam", "fig roll", "kiwi"]
            )
        ],
        "queries": [
            {"id": "q1", "text": "apple", "category": "fruit"},
            {"id": "q2", "text": "cherry", "category": "fruit", "tags": ["adversarial"]},
            {"id": "q3", "text": "bread", "category": "bake"},
            {"id": "q4", "text": "durian", "answerable": False},  # abstention
        ],
        "qrels": {"q1": {"d0": 1}, "q2": {"d2": 1}, "q3": {"d1": 1}, "q4": {"d3": 0}},
    }
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(data))
    return path


def test_bench_writes_one_leaderboard(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "--dataset",
            str(_dataset(tmp_path)),
            "--system",
            "builtin-lexical",
            "--system",
            "python:example_retrievers:Overlap",
            "-m",
            "hit@1",
            "-m",
            "recall@10",
            "-m",
            "false_surface",
            "--k",
            "10",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert (out / "tiny" / "builtin-lexical" / "report.json").is_file()
    board = json.loads((out / "leaderboard.json").read_text())
    [tiny] = board["datasets"]
    assert [s["system"] for s in tiny["systems"]] == [
        "builtin-lexical",
        "python:example_retrievers:Overlap",
    ]
    lexical = tiny["systems"][0]
    assert lexical["means"]["hit@1"] == 1.0
    assert lexical["without"] == {"adversarial": 1.0}
    assert lexical["by_category"]["bake"]["n"] == 1
    # both systems find every answer: hit@1 no longer separates them, and they share a rank
    assert tiny["saturated"] == ["hit@1", "recall@10"]
    assert tiny["ranking"]["measure"] == "hit@1"
    assert [s["rank"]["label"] for s in tiny["systems"]] == ["1–2", "1–2"]
    assert all(p["better"] is None for p in tiny["ranking"]["pairs"])
    # lexical search returns nothing for "durian"; word overlap neither
    assert lexical["means"]["false_surface"] == 0.0
    assert any("cutoff 10 reaches every document" in w for w in tiny["warnings"])
    markdown = (out / "leaderboard.md").read_text()
    assert "hit@1 with and without the 1 adversarial questions" in markdown
    assert "every system scores >= 0.95 on hit@1" in markdown
    assert "| rank | system | hit@1 | 95% CI |" in markdown
    assert "| system | bake (n=1) | fruit (n=2) |" in markdown
    assert board["context"]["command"].startswith("recallbench bench --dataset=")


def test_bench_refuses_a_bad_dataset_before_running_anything(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "--dataset",
            str(_dataset(tmp_path)),
            "--dataset",
            "locomo:/nonexistent",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 2
    assert "/nonexistent" in result.output
    assert not out.exists()


def test_bench_refuses_two_datasets_that_would_share_a_folder(tmp_path: Path) -> None:
    """Issue 28 item 2: two datasets of one name overwrote each other's reports."""
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    specs = [str(_dataset(first)), str(_dataset(second))]  # both named "tiny"
    out = tmp_path / "bench"
    arguments = ["bench", "--system", "builtin-lexical", "--out", str(out), "--no-store"]
    result = CliRunner().invoke(main, [*arguments, "--dataset", specs[0], "--dataset", specs[1]])
    assert result.exit_code == 2, result.output
    assert f"datasets {specs[0]!r} and {specs[1]!r} would both write to {out / 'tiny'}" in (
        " ".join(result.output.split())
    )
    assert not out.exists()
