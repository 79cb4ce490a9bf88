"""`recallbench measures`: every registered measure, with what its class carries."""

from __future__ import annotations

import json

from click.testing import CliRunner

from recallbench.cli import main
from recallbench.measures import measure_families


def _listed(*args: str) -> list[dict[str, str]]:
    result = CliRunner().invoke(main, ["measures", "--format", "json", *args])
    assert result.exit_code == 0, result.output
    listed: list[dict[str, str]] = json.loads(result.output)
    return listed


def test_every_registered_measure_is_listed_with_its_definition() -> None:
    listed = {entry["name"]: entry for entry in _listed()}
    families = measure_families()
    assert set(listed) == {cls.name for cls in families}
    for cls in families:
        entry = listed[cls.name]
        assert entry["definition"].startswith(cls.summary)
        assert entry["direction"] == ("higher" if cls.higher_is_better else "lower")
        assert entry["population"] == cls.population
        assert entry["kind"] == cls.kind
        assert (entry["trec_eval"] is None) == (not cls.trec_names)


def test_kind_filters_by_group_or_scoring() -> None:
    memory = _listed("--kind", "agent-memory")
    assert memory and all(e["group"] == "agent-memory" for e in memory)
    assert all(e["needs"].startswith("memory metadata") for e in memory)
    assert {"must_surface", "chain_completeness", "cold_start_ratio"} <= {e["name"] for e in memory}
    exact = _listed("--kind", "exact")
    assert exact and all(e["kind"] == "exact" for e in exact)
    both = _listed("--kind", "exact", "--kind", "set")
    assert {e["name"] for e in both} == {e["name"] for e in exact} | {
        e["name"] for e in _listed("--kind", "set")
    }
    assert {e["name"] for e in _listed()} == {
        e["name"]
        for group in ("ranking", "set", "count", "text", "agent-memory")
        for e in _listed("--kind", group)
    }


def test_table_and_markdown_name_every_measure() -> None:
    runner = CliRunner()
    markdown = runner.invoke(main, ["measures", "--format", "markdown"])
    assert markdown.exit_code == 0, markdown.output
    rows = [line for line in markdown.output.splitlines() if line.startswith("| `")]
    assert len(rows) == len(measure_families())
    table = runner.invoke(main, ["measures", "--kind", "agent-memory"])
    assert table.exit_code == 0, table.output
    assert (
        "must_surface@k" in table.output
        and f"{len(_listed('--kind', 'agent-memory'))} measures" in table.output
    )


def test_help_lists_examples_and_the_command_is_registered() -> None:
    runner = CliRunner()
    assert "measures" in runner.invoke(main, ["--help"]).output
    shown = runner.invoke(main, ["measures", "--help"])
    assert shown.exit_code == 0
    assert "recallbench measures --kind agent-memory" in shown.output
    refused = runner.invoke(main, ["measures", "--kind", "nonsense"])
    assert refused.exit_code == 2
