"""The MCP adapter's reading of answers, against a small real MCP server of our own
(tests/example_mcp_server.py, official SDK, stdio): one text block per hit, hits mapped to
documents by their content, errors reported as text, results that match nothing."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from recallbench.core import Dataset, Document, Query
from recallbench.measures import parse_measures
from recallbench.render import render_markdown
from recallbench.report import build_report
from recallbench.runner import run_dataset
from recallbench.systems import create_system

HERE = Path(__file__).parent


def notes_profile(tmp_path: Path, server: str, results: str, *arguments: str) -> Path:
    """A profile for tests/example_mcp_server.py, started with ``arguments``."""
    command = json.dumps([sys.executable, str(HERE / "example_mcp_server.py"), *arguments])
    path = tmp_path / "notes.toml"
    path.write_text(
        f'name = "notes"\n[server]\ncommand = {command}\n{server}\n'
        '[ingest]\ntool = "write_note"\nitem = { content = "{text}" }\n'
        '[search]\ntool = "search_notes"\narguments = { query = "{query}", limit = "{k}" }\n'
        f'[results]\nsource = "text_blocks"\nmatch = "content"\nranked = false\n{results}\n'
    )
    return path


def test_text_blocks_content_matching_and_text_errors(tmp_path: Path) -> None:
    profile = notes_profile(tmp_path, "", 'error_patterns = ["^# Search Failed"]')
    dataset = Dataset(
        name="notes",
        documents=(
            Document(id="pg", text="The ledger runs on PostgreSQL."),
            Document(id="fri", text="Deploys are frozen on Fridays."),
        ),
        queries=(
            Query(id="q1", text="postgresql ledger"),
            Query(id="q2", text="fail"),
            Query(id="q3", text="fridays extra"),
        ),
        qrels={"q1": {"pg": 1}, "q2": {"fri": 1}, "q3": {"fri": 2}},
    )
    run = asyncio.run(run_dataset(dataset, create_system(str(profile)), k=5))
    q1, q2, q3 = run.results
    assert [h.doc_id for h in q1.hits] == ["pg"]  # "THE LEDGER RUNS ON POSTGRESQL." -> pg
    assert q2.error is not None and "Search Failed" in q2.error
    assert [h.doc_id for h in q3.hits] == ["fri"]
    assert run.spec.settings["unmatched_results"] == 1
    report = build_report(dataset, run, parse_measures(["mrr@5"]))
    assert report.counts.failed == 1
    assert "matched no dataset document: 1" in render_markdown(report)


def test_streamable_http_transport(tmp_path: Path) -> None:
    """The same server over Streamable HTTP: recallbench starts it on a free port, waits
    until it listens, then speaks MCP over HTTP."""
    server = 'transport = "streamable-http"\nurl = "http://127.0.0.1:{port}/mcp"'
    profile = notes_profile(tmp_path, server, "", "http", "{port}")
    dataset = Dataset(
        name="notes",
        documents=(
            Document(id="pg", text="The ledger runs on PostgreSQL."),
            Document(id="fri", text="Deploys are frozen on Fridays."),
        ),
        queries=(Query(id="q1", text="postgresql ledger"), Query(id="q2", text="fridays")),
        qrels={"q1": {"pg": 1}, "q2": {"fri": 2}},
    )
    run = asyncio.run(run_dataset(dataset, create_system(str(profile)), k=5))
    assert [[h.doc_id for h in r.hits] for r in run.results] == [["pg"], ["fri"]]
    assert run.spec.settings["transport"] == "streamable-http"


def test_fuzzy_content_matching_maps_near_copies_only() -> None:
    """A unit test of the mapping rule (no server needed): servers that trim or reformat a
    memory's text still map to it; unrelated text does not."""
    from recallbench.systems._mcp import MCPSystem
    from recallbench.systems._profile import Profile

    def profile(match: str) -> Profile:
        return Profile.model_validate(
            {
                "name": "p",
                "server": {"command": ["x"]},
                "ingest": {"tool": "a", "item": {}},
                "search": {"tool": "b", "arguments": {}},
                "results": {"match": match, "text": "body"},
            }
        )

    documents = (
        Document(id="pg", text="The ledger runs on PostgreSQL since March 2026."),
        Document(id="fri", text="Deploys are frozen on Fridays."),
    )
    fuzzy, exact = MCPSystem(profile("fuzzy")), MCPSystem(profile("content"))
    for system in (fuzzy, exact):
        system._ids = {d.id for d in documents}
        system._by_content = {
            " ".join(d.text.lower().replace(".", "").split()): d.id for d in documents
        }
        system._contents = list(system._by_content)
    trimmed = {"body": "the ledger runs on PostgreSQL since Mar..."}
    assert fuzzy._map(trimmed) == "pg" and exact._map(trimmed) is None
    assert fuzzy._map({"body": "DEPLOYS ARE FROZEN ON FRIDAYS"}) == "fri"
    assert fuzzy._map({"body": "the office cat is called Pixel"}) is None
