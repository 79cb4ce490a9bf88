"""Messages that say what happened (issue 28, item 31): a start-up failure of the system
under test is exit 3 as the exit-code table says, a FORMAT: without a path names the spec,
an output that cannot be written is named by its own path, not a temporary file's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.core._files import atomic_write_text

HERE = Path(__file__).parent


def _profile(tmp_path: Path, command: list[str]) -> Path:
    path = tmp_path / "broken.toml"
    path.write_text(
        f'name = "broken"\n[server]\ncommand = {json.dumps(command)}\nstartup_timeout = 5\n'
        '[ingest]\ntool = "write_note"\nitem = { content = "{text}" }\n'
        '[search]\ntool = "search_notes"\narguments = { query = "{query}" }\n'
        '[results]\nsource = "text_blocks"\nmatch = "content"\n'
    )
    return path


@pytest.mark.parametrize(
    "system",
    [
        "command:/nonexistent/memory-server",  # a command that does not start
        "mcp-exits",  # an MCP server that exits at once
        "mcp-missing",  # an MCP server command that does not exist
    ],
)
def test_a_system_that_fails_to_start_exits_3(tmp_path: Path, system: str) -> None:
    if system == "mcp-exits":
        system = str(_profile(tmp_path, [sys.executable, "-c", "raise SystemExit(4)"]))
    elif system == "mcp-missing":
        system = str(_profile(tmp_path, ["/nonexistent/mcp-server"]))
    result = CliRunner().invoke(
        main, ["run", "--system", system, "--no-store", "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 3, result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("spec", ["json:", "locomo:", "beir: "])
def test_a_format_without_a_path_names_the_spec(tmp_path: Path, spec: str) -> None:
    """`--dataset json:` reported `.: Is a directory`."""
    result = CliRunner().invoke(
        main, ["run", "--dataset", spec, "--no-store", "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 2, result.output
    assert f"dataset {spec!r}: no path after" in result.output


def test_an_output_that_cannot_be_written_is_named_by_its_own_path(tmp_path: Path) -> None:
    """An unwritable output was reported by its temporary file's name."""
    target = tmp_path / "report.json"
    target.mkdir()  # a folder where the file goes: rename fails
    with pytest.raises(IsADirectoryError) as caught:
        atomic_write_text(target, "{}")
    assert caught.value.filename == str(target)
    assert list(tmp_path.iterdir()) == [target]  # no temporary file left
    out = tmp_path / "out"
    (out / "report.json").mkdir(parents=True)
    result = CliRunner().invoke(main, ["run", "--no-store", "--out", str(out), "-q"])
    assert result.exit_code == 2, result.output
    assert str(out / "report.json") in result.output and ".tmp" not in result.output


@pytest.mark.parametrize(
    ("cache", "message"),
    [
        ("foo.json", "--judge-cache 'foo.json': a judge cache is a .jsonl file, a store URL"),
        ("sqlite:///{tmp}/a-file/judge.db", "--judge-cache: history store"),
    ],
)
def test_a_bad_judge_cache_is_named_by_its_option(tmp_path: Path, cache: str, message: str) -> None:
    """A bad --judge-cache was reported as a "history store" with no word of the option."""
    (tmp_path / "a-file").write_text("not a folder")
    cache = cache.format(tmp=tmp_path)
    config = tmp_path / "recallbench.toml"
    config.write_text('[judge]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n')
    result = CliRunner().invoke(
        main,
        ["qa", "--config", str(config), "--system", "builtin-lexical", "--judge-cache", cache,
         "--out", str(tmp_path / "out")],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert not (tmp_path / "out").exists()
