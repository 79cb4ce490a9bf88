"""How a server says it found nothing, and answers that name hits only in prose: the
``[results] empty`` patterns, the error that asks for one, and `systems init` against a
scripted server that answers as mcp-memory-keeper does (prose unless ``includeMetadata``,
``No results found for: "..."`` when nothing matches)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.core import Dataset, DatasetError, Document, Query, SystemUnderTestError
from recallbench.runner import run_dataset
from recallbench.systems._answers import raw_hits
from recallbench.systems._mcp import MCPSystem
from recallbench.systems._profile import Results, load_profile
from recallbench.systems._profile_guess import guess_tools
from recallbench.systems._profile_locate import empty_pattern
from recallbench.systems._tool_listing import ListedTool

KEEPER = Path(__file__).with_name("keeper_mcp_server.py")

SMALL = Dataset(
    name="small",
    documents=(
        Document(id="pg", text="The ledger runs on PostgreSQL since March."),
        Document(id="fri", text="Deploys are frozen on Fridays."),
        Document(id="pr", text="Priya wants PR descriptions with a test plan."),
    ),
    queries=(
        Query(id="q1", text="postgresql"),
        Query(id="q2", text="frozen on fridays"),
        Query(id="q3", text="the office cat"),
        Query(id="q4", text="remove the ledger_pg_dualwrite flag"),
    ),
    qrels={"q1": {"pg": 3}, "q2": {"fri": 2}, "q3": {"pr": 1}, "q4": {"pg": 1}},
)
"""Two queries the server finds, two it answers with "No results found"."""


def _init(*arguments: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["systems", "init", *arguments])
    assert "Traceback" not in result.output + result.stderr, result.output + result.stderr
    return result.exit_code, result.stdout, result.stderr


class _Answer:
    def __init__(self, *texts: str) -> None:
        self.content = [type("Block", (), {"type": "text", "text": text})() for text in texts]
        self.structured_content = None


def test_init_asks_for_json_and_learns_how_the_server_says_nothing(tmp_path: Path) -> None:
    out = tmp_path / "keeper.toml"
    code, stdout, stderr = _init("--out", str(out), "--", sys.executable, str(KEEPER))
    assert code == 0, stdout + stderr
    profile = load_profile(out)
    assert profile.search.arguments == {
        "query": "{query}",
        "limit": "{k}",
        "includeMetadata": True,
    }
    results = profile.results
    assert (results.source, results.hits, results.id, results.text) == (
        "json_text",
        "items",
        "key",
        "value",
    )
    assert results.empty == ["^No results found for:"]
    assert "includeMetadata = true (the answer without it was unreadable)" in stdout
    assert "empty: answers matching '^No results found for:' are no hits" in out.read_text()
    check = CliRunner().invoke(main, ["systems", "check", str(out)])
    assert check.exit_code == 0 and "FAIL" not in check.output, check.output

    run = asyncio.run(run_dataset(SMALL, MCPSystem(profile), k=10))
    by_id = {result.query_id: result for result in run.results}
    assert [result.error for result in run.results] == [None] * 4
    assert [hit.doc_id for hit in by_id["q1"].hits] == ["pg"]
    assert not by_id["q3"].hits and not by_id["q4"].hits  # "No results found": no hits


def test_without_empty_a_nothing_found_answer_fails_with_what_to_do(tmp_path: Path) -> None:
    out = tmp_path / "keeper.toml"
    code, _, _ = _init("--out", str(out), "--", sys.executable, str(KEEPER))
    assert code == 0
    path = tmp_path / "no-empty.toml"
    path.write_text("".join(line for line in out.open() if not line.startswith("empty =")))
    run = asyncio.run(run_dataset(SMALL, MCPSystem(load_profile(path)), k=10))
    errors = {result.query_id: result.error for result in run.results}
    assert errors["q1"] is None and errors["q2"] is None
    check = CliRunner().invoke(main, ["systems", "check", str(path)])
    assert check.exit_code == 1, check.output  # the check finds it, before any run
    assert "FAIL  search 'zqxjvorbnik' (matches nothing): " in check.output
    assert "[results] empty" in check.output
    assert errors["q4"] == (
        "SystemUnderTestError: keeper_mcp_server: expected JSON in the answer, got 'No results "
        'found for: "remove the ledger_pg_dualwrite flag"\'; if this is how the server says '
        f"it found nothing, add a pattern for it to [results] empty in {path.resolve()}"
    )


def test_an_answer_in_prose_only_gives_a_reason_that_says_so(tmp_path: Path) -> None:
    out = tmp_path / "prose.toml"
    code, _, stderr = _init("--out", str(out), "--", sys.executable, str(KEEPER), "prose")
    assert code == 1
    assert "probe-doc-0-1 appears only in prose: no JSON or per-hit structure to read ids" in stderr
    assert "if the server has an option for structured output, set it in [search]" in stderr
    assert "not in the answer" not in stderr


def test_the_error_names_the_profile_and_empty_patterns_mean_no_hits() -> None:
    answer = _Answer('No results found for: "x"')
    spec = Results(source="json_text", hits="items")
    with pytest.raises(SystemUnderTestError) as raised:
        raw_hits(answer, spec, "keeper", "/p/keeper.toml")
    assert str(raised.value) == (
        "keeper: expected JSON in the answer, got 'No results found for: \"x\"'; if this is how "
        "the server says it found nothing, add a pattern for it to [results] empty in "
        "/p/keeper.toml"
    )
    with pytest.raises(SystemUnderTestError, match=r"\[results\] empty in its profile$"):
        raw_hits(answer, spec, "keeper")
    assert raw_hits(answer, spec.model_copy(update={"empty": ["^No results"]}), "keeper") == []
    blocks = Results(source="text_blocks", empty=["^Nothing matched"])
    assert raw_hits(_Answer("Nothing matched."), blocks, "b") == []
    assert raw_hits(_Answer("a hit", "another"), blocks, "b") == [
        {"text": "a hit"},
        {"text": "another"},
    ]


def test_a_pattern_that_is_not_a_regular_expression_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(
        'name = "bad"\n[server]\ncommand = ["x"]\n[ingest]\ntool = "save"\n'
        '[search]\ntool = "find"\narguments = { q = "{query}" }\n'
        '[results]\nempty = ["^No (results"]\n'
    )
    with pytest.raises(DatasetError) as raised:
        load_profile(path)
    assert "results.empty" in str(raised.value) and "not a regular expression" in str(raised.value)
    result = CliRunner().invoke(main, ["systems", "check", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "results.empty" in result.output + result.stderr


@pytest.mark.parametrize(
    ("answers", "pattern"),
    [
        ([("zqa", 'No results found for: "zqa"'), ("zqb", 'No results found for: "zqb"')],
         "^No results found for:"),
        ([("zqa", "Nothing matched zqa (3 ms)"), ("zqb", "Nothing matched zqb (4 ms)")],
         "^Nothing matched"),
        ([("zqa", "0 memories. Try again"), ("zqb", "0 memories. Try again")],
         r"^0 memories\. Try again"),
        ([("zqa", "zqa?"), ("zqb", "zqb?")], None),
        ([("zqa", "None"), ("zqb", "Nope")], None),
    ],
)  # fmt: skip
def test_an_empty_pattern_is_the_stable_start_without_the_query(
    answers: list[tuple[str, str]], pattern: str | None
) -> None:
    assert empty_pattern(answers) == pattern


def test_boolean_options_for_structured_output_are_tried_one_at_a_time() -> None:
    flag: dict[str, Any] = {"type": "boolean"}
    tool = ListedTool(
        "context_search",
        "Search context items.",
        {
            "properties": {
                "query": {"type": "string"},
                "includeMetadata": {**flag, "description": "Include timestamps and size info"},
                "exact": {**flag, "description": "Match the whole phrase"},
                "mode": {**flag, "description": "Return detailed results"},
                "compact": {**flag, "description": "Raw output", "default": True},
            },
            "required": ["query"],
        },
    )
    template = guess_tools([tool]).search[0].template
    assert template.arguments == {"query": "{query}"}
    assert template.switches == (
        {"query": "{query}", "includeMetadata": True},
        {"query": "{query}", "mode": True},
    )
