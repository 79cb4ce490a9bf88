"""A failed gate writes its regression note into a real memory server (npm server-memory)
through the profile's ingest path, into a store folder that outlives the server."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from recallbench.cli import main


def _failing_report(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main, ["run", "--system", "builtin-lexical", "-m", "mrr@10", "--out", str(out), "-q"]
    )
    assert result.exit_code == 0, result.output
    return out


def _entities(store: Path) -> list[dict[str, object]]:
    lines = (store / "memory.jsonl").read_text().splitlines()
    return [entry for line in lines if (entry := json.loads(line)).get("type") == "entity"]


def test_write_back_stores_the_note_in_server_memory(
    installed_servers: Path, tmp_path: Path
) -> None:
    report = _failing_report(tmp_path)
    (tmp_path / "recallbench.toml").write_text('[gates.measures."mrr@10"]\nmin = 0.99\n')
    store = tmp_path / "agent-memory"
    args = [
        "gate",
        str(report),
        "--config",
        str(tmp_path / "recallbench.toml"),
        "--baseline",
        "none",
        "--write-back",
        "server-memory",
        "--write-back-dir",
        str(store),
    ]
    result = CliRunner(env={"COLUMNS": "300"}).invoke(main, args)
    assert result.exit_code == 1, result.output
    assert f"written to server-memory (store {store})" in result.output
    (note,) = _entities(store)
    assert str(note["name"]).startswith("recallbench-regression-builtin-lexical-")
    observation = " ".join(map(str, note["observations"]))  # type: ignore[call-overload]
    assert "recallbench gate failed for builtin-lexical" in observation
    assert "< minimum 0.99" in observation and "Worst queries:" in observation
    # another failure adds to the same store and the first note is still there, even for a
    # report made in the same second (here: the same report against another threshold)
    (tmp_path / "recallbench.toml").write_text('[gates.measures."mrr@10"]\nmin = 0.98\n')
    result = CliRunner(env={"COLUMNS": "300"}).invoke(main, args)
    assert result.exit_code == 1, result.output
    assert len(_entities(store)) == 2


def test_write_back_needs_the_agents_store_folder(installed_servers: Path, tmp_path: Path) -> None:
    report = _failing_report(tmp_path)
    (tmp_path / "recallbench.toml").write_text('[gates.measures."mrr@10"]\nmin = 0.99\n')
    result = CliRunner().invoke(
        main,
        [
            "gate",
            str(report),
            "--config",
            str(tmp_path / "recallbench.toml"),
            "--baseline",
            "none",
            "--write-back",
            "server-memory",
        ],
    )
    assert result.exit_code == 2
    assert "give --write-back-dir" in result.output
