"""`systems check` and `systems init` against a scripted server that validates what it
stores as @ai-devkit/memory does (a title required, content of 50 characters or more,
refusals as multi-line JSON errors): the check's documents are accepted, the proposed
profile is written and reads back even when the check fails with such an error, and a
document without a title is stored under its id (``{title}`` falls back to it)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from click.testing import CliRunner

from recallbench.cli import main
from recallbench.core import Document, Query
from recallbench.systems._answers import fill
from recallbench.systems._check import CHECK_DOCUMENTS, CHECK_SEARCHES, NO_MATCH
from recallbench.systems._mcp import MCPSystem
from recallbench.systems._profile import load_profile

VALIDATING = Path(__file__).with_name("validating_mcp_server.py")


def _cli(*arguments: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(arguments))
    assert "Traceback" not in result.output + result.stderr, result.output + result.stderr
    return result.exit_code, result.stdout, result.stderr


def test_check_documents_pass_servers_that_validate_what_they_store() -> None:
    for document in CHECK_DOCUMENTS:
        assert document.title is not None and len(document.title) >= 10
        assert len(document.text) >= 80 and not document.text.lower().startswith("todo ")
    for query, expected in CHECK_SEARCHES:
        holding = [d.id for d in CHECK_DOCUMENTS if query.lower() in d.text.lower()]
        assert holding == [expected]
    assert not any(NO_MATCH in (d.title or "") + d.text for d in CHECK_DOCUMENTS)


def test_init_proposes_a_profile_that_passes_the_check(tmp_path: Path) -> None:
    out = tmp_path / "validating.toml"
    code, stdout, stderr = _cli(
        "systems", "init", "--out", str(out), "--", sys.executable, str(VALIDATING)
    )
    assert code == 0, stdout + stderr
    profile = load_profile(out)
    assert profile.ingest.tool == "memory_storeKnowledge"
    assert profile.ingest.item == {"content": "{text}", "title": "{id}"}
    results = profile.results
    assert (results.source, results.hits, results.id, results.score) == (
        "json_text",
        "results",
        "title",
        "score",
    )
    assert "ok    started and ingested 3 documents" in stdout
    code, stdout, _ = _cli("systems", "check", str(out))
    assert code == 0 and "FAIL" not in stdout, stdout


def test_a_multi_line_refusal_is_written_as_comments_and_the_profile_reads_back(
    tmp_path: Path,
) -> None:
    out = tmp_path / "strict.toml"
    code, stdout, stderr = _cli(
        "systems", "init", "--out", str(out), "--", sys.executable, str(VALIDATING), "strict"
    )
    assert code == 1, stdout + stderr
    assert "internal error" not in stderr
    assert "Title must be at least 10 characters" in stdout
    text = out.read_text()
    head = text[: text.index("name = ")]
    assert all(line.startswith("#") for line in head.splitlines())
    assert '#       "message": "Title must be at least 10 characters",' in head.splitlines()
    profile = load_profile(out)  # the probe found the results: only the item needs an edit
    assert (profile.results.hits, profile.results.id) == ("results", "title")
    edited = text.replace('title = "{id}"', 'title = "{title}"')
    edited = edited.replace('match = "id"', 'match = "content"')
    out.write_text(edited)
    code, stdout, _ = _cli("systems", "check", str(out))
    assert code == 0 and "FAIL" not in stdout, stdout


def test_title_falls_back_to_the_id_in_item_templates(tmp_path: Path) -> None:
    item = {"content": "{text}", "title": "{title}", "label": "{id}: {title}"}
    untitled = {"id": "mem-1", "text": "t", "title": None}
    assert fill(item, untitled) == {"content": "t", "title": "mem-1", "label": "mem-1: mem-1"}
    assert fill(item, {"id": "mem-1", "text": "t", "title": ""})["title"] == "mem-1"
    assert fill(item, {"id": "mem-1", "text": "t", "title": "Ledger"})["title"] == "Ledger"
    assert fill({"q": "{title}"}, {"query": "x"}) == {"q": "{title}"}  # no document: kept
    out = tmp_path / "titled.toml"
    code, stdout, stderr = _cli(
        "systems", "init", "--out", str(out), "--", sys.executable, str(VALIDATING)
    )
    assert code == 0, stdout + stderr
    text = out.read_text().replace('title = "{id}"', 'title = "{title}"')
    out.write_text(text.replace('match = "id"', 'match = "content"'))
    text_of_memory = "Invoices are rounded half-even to the cent before tax is added to them."
    memory = Document(id="mem-001", text=text_of_memory)  # no title: stored under its id

    async def stored_and_found() -> list[str]:
        system = MCPSystem(load_profile(out))
        try:
            await system.setup([memory])
            return [hit.doc_id for hit in await system.search(Query(id="q", text="rounded"), 5)]
        finally:
            await system.close()

    assert asyncio.run(stored_and_found()) == ["mem-001"]
