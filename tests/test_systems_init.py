"""`recallbench systems init` against real MCP servers over stdio: the shipped
server-memory (npm), and a scripted server of our own whose answers hide the hits in
JSON inside a text block with ids under another key; a server whose tools cannot be
mapped, bad input and a server that does not start give their documented exits."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.core import Document
from recallbench.systems._profile import load_profile
from recallbench.systems._profile_guess import guess_tools
from recallbench.systems._profile_init import name_from_command
from recallbench.systems._profile_locate import locate
from recallbench.systems._tool_listing import ListedTool

SCRIPTED = Path(__file__).with_name("init_mcp_server.py")


def _init(*arguments: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["systems", "init", *arguments])
    assert "Traceback" not in result.output + result.stderr, result.output + result.stderr
    return result.exit_code, result.stdout, result.stderr


def test_server_memory_gets_a_working_profile(installed_servers: Path, tmp_path: Path) -> None:
    script = (
        (installed_servers / "servers" / "server-memory" / "node_modules" / "@modelcontextprotocol")
        / "server-memory"
        / "dist"
        / "index.js"
    )
    out = tmp_path / "sm.toml"
    code, stdout, stderr = _init(
        "--out", str(out), "--env", "MEMORY_FILE_PATH={workdir}/memory.jsonl",
        "--", "node", str(script),
    )  # fmt: skip
    assert code == 0, stdout + stderr
    profile = load_profile(out)
    assert profile.name == "server-memory"
    assert (profile.ingest.tool, profile.ingest.batch_field) == ("create_entities", "entities")
    assert profile.ingest.item["name"] == "{id}"
    assert profile.ingest.item["observations"] == ["{text}"]
    assert (profile.search.tool, profile.search.arguments) == ("search_nodes", {"query": "{query}"})
    results = profile.results
    assert (results.hits, results.id, results.match, results.ranked) == (
        "entities",
        "name",
        "id",
        False,
    )
    assert profile.reset is not None and profile.reset.tool == "delete_entities"
    text = out.read_text()
    assert "search tool: search_nodes (only tool taking a query string" in text
    assert "; sure)" in text and "passed" in text
    assert f"next: recallbench run --system {out}" in stdout
    check = CliRunner().invoke(main, ["systems", "check", str(out)])
    assert check.exit_code == 0 and "FAIL" not in check.output, check.output


def test_hits_nested_in_a_text_block_with_ids_under_another_key(tmp_path: Path) -> None:
    out = tmp_path / "nested.toml"
    code, stdout, stderr = _init("--out", str(out), "--", sys.executable, str(SCRIPTED), "nested")
    assert code == 0, stdout + stderr
    profile = load_profile(out)
    assert profile.name == "init_mcp_server"
    assert (profile.ingest.tool, profile.ingest.item) == (
        "memorize",
        {"body": "{text}", "key": "{id}"},
    )
    assert profile.search.tool == "lookup"
    assert profile.search.arguments == {"question": "{query}", "max_hits": "{k}"}
    results = profile.results
    assert (results.source, results.hits) == ("json_text", "data.matches")
    assert (results.id, results.text, results.score) == ("ref.key", "body", "score")
    assert results.match == "id" and results.ranked
    assert profile.reset is not None and profile.reset.arguments == {"keys": "{ids}"}


def test_a_server_whose_tools_cannot_be_mapped_exits_1(tmp_path: Path) -> None:
    out = tmp_path / "none.toml"
    code, _, stderr = _init("--out", str(out), "--", sys.executable, str(SCRIPTED), "unmappable")
    assert code == 1
    assert "no tool takes a text to store" in stderr and "no tool takes a query string" in stderr
    assert "nothing written" in stderr
    assert not out.exists()


def test_bad_input_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "there.toml"
    out.write_text("kept\n")
    code, _, stderr = _init("--out", str(out), "--", sys.executable, str(SCRIPTED))
    assert code == 2 and str(out) in stderr and "--force" in stderr
    assert out.read_text() == "kept\n"
    code, _, stderr = _init("--env", "NOEQUALS", "--out", str(tmp_path / "x.toml"), "--", "x")
    assert code == 2 and "--env 'NOEQUALS'" in stderr
    code, _, _ = _init("--out", str(tmp_path / "y.toml"))
    assert code == 2


def test_a_server_that_does_not_start_exits_3(tmp_path: Path) -> None:
    out = tmp_path / "gone.toml"
    code, _, stderr = _init("--out", str(out), "--", sys.executable, str(tmp_path / "missing.py"))
    assert code == 3 and "the server failed to start" in stderr and "missing.py" in stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("command", "name"),
    [
        (
            ["node", "/x/node_modules/@modelcontextprotocol/server-memory/dist/index.js"],
            "server-memory",
        ),
        (["npx", "-y", "@itseasy21/mcp-knowledge-graph"], "mcp-knowledge-graph"),
        (["/venv/bin/agent-logbook", "--db", "{workdir}/x.db"], "agent-logbook"),
        (["python", "tests/init_mcp_server.py", "nested"], "init_mcp_server"),
        (["uvx", "basic-memory@0.24.1", "mcp"], "basic-memory"),
    ],
)
def test_names_come_from_the_command(command: list[str], name: str) -> None:
    assert name_from_command(command) == name


def test_tools_are_ranked_by_name_and_schema() -> None:
    text = {"type": "string"}
    tools = [
        ListedTool("delete_all", "Delete everything.", {"properties": {}}),
        ListedTool(
            "add_note",
            "Store a note.",
            {"properties": {"content": text, "tags": {"type": "array"}}, "required": ["content"]},
        ),
        ListedTool(
            "find_notes",
            "Search notes.",
            {
                "properties": {"q": text, "top_k": {"type": "integer", "maximum": 20}},
                "required": ["q"],
            },
        ),
    ]
    guesses = guess_tools(tools)
    ingest, search = guesses.ingest[0], guesses.search[0]
    assert ingest.tool.name == "add_note" and ingest.item == {"content": "{text}"}
    assert "no field holds the id" in " ".join(ingest.notes)
    assert search.template.arguments == {"q": "{query}", "top_k": "{k}"} and search.max_k == 20
    assert search.guess.sure == "sure"
    assert [reset.tool.name for reset in guesses.reset] == ["delete_all"]


class _Answer:
    def __init__(self, text: str, structured: object = None) -> None:
        self.content = [type("Block", (), {"type": "text", "text": text})()]
        self.structured_content = structured


def test_locating_hits_prefers_an_id_field_and_falls_back_to_text() -> None:
    document = Document(id="probe-0-1", text="The quokka ledger moved.")
    answer = _Answer(json.dumps({"result": {"items": [{"id": 7, "meta": {"doc": "probe-0-1"}}]}}))
    found = locate(answer, document)
    assert found is not None
    assert (found.source, found.hits, found.id, found.match) == (
        "json_text",
        "result.items",
        "meta.doc",
        "id",
    )
    blocks = locate(_Answer("THE QUOKKA LEDGER MOVED."), document)
    assert blocks is not None and (blocks.source, blocks.match) == ("text_blocks", "content")
    assert locate(_Answer("nothing here"), document) is None
