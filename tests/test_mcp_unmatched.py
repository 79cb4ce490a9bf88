"""What a run says about the answers beyond the measures, against a real MCP server of our
own (tests/tagged_mcp_server.py, stdio): ids inside a list (``tags[0]``), results that
match no document (counted, warned about, exit 3 when all do), memories the server refuses
(named; skipped with ``on_error = "skip"``) and a ``max_k`` below k."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from pathlib import Path

import pytest
from rich.console import Console

from recallbench.core import Dataset, Document, Query, Run, SystemUnderTestError
from recallbench.measures import parse_measures
from recallbench.render import render_markdown, render_terminal
from recallbench.report import Report, build_report
from recallbench.runner import SystemFailedError, failure_of, raise_for_failures, run_dataset
from recallbench.systems import create_system
from recallbench.systems._answers import select

SERVER = Path(__file__).parent / "tagged_mcp_server.py"
DATASET = Dataset(
    name="tagged",
    documents=(
        Document(id="pg", text="The ledger runs on PostgreSQL."),
        Document(id="fri", text="Deploys are frozen on Fridays."),
        Document(id="vague", text="Some generic note about things."),
    ),
    queries=(Query(id="q1", text="ledger postgresql"), Query(id="q2", text="deploys fridays")),
    qrels={"q1": {"pg": 1}, "q2": {"fri": 1}},
)


def profile(tmp_path: Path, id_path: str, ingest: str = "", search: str = "") -> Path:
    command = json.dumps([sys.executable, str(SERVER)])
    path = tmp_path / "tagged.toml"
    path.write_text(
        f'name = "tagged"\n[server]\ncommand = {command}\n'
        f'[ingest]\ntool = "store"\nitem = {{ content = "{{text}}", tag = "{{id}}" }}\n{ingest}\n'
        f'[search]\ntool = "search"\narguments = {{ query = "{{query}}", limit = "{{k}}" }}\n'
        f"{search}\n"
        f'[results]\nsource = "json_text"\nhits = "results"\nid = "{id_path}"\n'
        'score = "score"\n'
    )
    return path


def measured(path: Path, dataset: Dataset = DATASET, k: int = 5) -> tuple[Run, Report]:
    run = asyncio.run(run_dataset(dataset, create_system(str(path)), k=k))
    return run, build_report(dataset, run, parse_measures(["mrr@5"]))


def terminal(report: Report) -> str:
    buffer = io.StringIO()
    render_terminal(report, Console(file=buffer, width=200, color_system=None))
    return buffer.getvalue()


def test_paths_index_into_lists() -> None:
    hit = {"tags": ["d1", "x"], "meta": {"refs": [{"id": "d2"}]}}
    assert select(hit, "tags.0") == select(hit, "tags[0]") == "d1"
    assert select(hit, "tags[-1]") == "x"
    assert select(hit, "tags[]") == ["d1", "x"]
    assert select(hit, "meta.refs[0].id") == select(hit, "meta.refs.0.id") == "d2"
    assert select(hit, "tags[2]") is None
    assert select(hit, "tags.id") is None
    assert select(hit, "meta[0]") is None
    assert select(hit, "") is hit


@pytest.mark.parametrize("id_path", ["tags.0", "tags[0]", "tags[]", "tags"])
def test_an_id_inside_a_list_maps_the_hit(tmp_path: Path, id_path: str) -> None:
    ingest = 'on_error = "skip"'  # the generic memory is refused
    run, report = measured(profile(tmp_path, id_path, ingest))
    assert [[h.doc_id for h in r.hits] for r in run.results] == [["pg"], ["fri"]]
    assert run.spec.settings["unmatched_results"] == 0
    assert "returned_results" not in run.spec.settings
    assert report.counts.unmatched == 0 and report.means["mrr@5"] == 1.0
    assert failure_of(run) is None


def test_results_that_match_nothing_are_counted_warned_and_fail_the_run(
    tmp_path: Path,
) -> None:
    path = profile(tmp_path, "tags[-1]", 'on_error = "skip"')  # "memory": no document's id
    run, report = measured(path)
    assert all(not r.hits and r.error is None for r in run.results)
    assert run.spec.settings["unmatched_results"] == run.spec.settings["returned_results"] == 2
    assert report.counts.unmatched == report.counts.returned == 2
    assert report.system_scores  # the hits had scores: they matched nothing
    (warning,) = [w for w in report.warnings if "matched no document" in w]
    assert warning.startswith("all 2 results the system returned")
    assert "[results] id" in warning and "id = 'tags[-1]'" in warning and str(path) in warning
    markdown = render_markdown(report)
    assert "matched no dataset document: 2 of 2 returned (not scored)" in markdown
    assert "no scores" not in markdown
    printed = " ".join(terminal(report).split())
    assert "matched no dataset document: 2 of 2 returned" in printed
    assert "check [results] id" in printed
    assert "returned no scores" not in printed
    reason = failure_of(run)
    assert reason is not None and "matched no document" in reason and str(path) in reason
    with pytest.raises(SystemFailedError) as failed:
        raise_for_failures([run])
    assert failed.value.exit_code == 3


@pytest.mark.parametrize(("tags", "warned"), [(("pg", "x"), False), (("x", "fri"), True)])
def test_some_unmatched_results_are_counted_and_most_warned_about(
    tmp_path: Path, tags: tuple[str, str], warned: bool
) -> None:
    """The server stores each memory under the document's ``tag``: a tag that is no
    document's id makes its hits unmatched (here 1 of 3, then 2 of 3)."""
    documents = tuple(
        doc.model_copy(update={"metadata": {"tag": tag}})
        for doc, tag in zip(DATASET.documents[:2], tags, strict=True)
    )
    queries = (*DATASET.queries, Query(id="q3", text="ledger"))
    dataset = DATASET.model_copy(update={"documents": documents, "queries": queries})
    path = profile(tmp_path, "tags[0]")
    path.write_text(path.read_text().replace('tag = "{id}"', 'tag = "{metadata.tag}"'))
    run, report = measured(path, dataset)
    unmatched = 2 if warned else 1
    assert (report.counts.unmatched, report.counts.returned) == (unmatched, 3)
    assert f"document: {unmatched} of 3 returned" in render_markdown(report)
    warnings = [w for w in report.warnings if "matched no document" in w]
    assert [w.split(" results")[0] for w in warnings] == (["67% of the 3"] if warned else [])
    assert failure_of(run) is None  # some results matched: the run measured something


def test_a_refused_memory_is_named(tmp_path: Path) -> None:
    with pytest.raises(SystemUnderTestError, match=r"document 'vague' not stored: .*too generic"):
        measured(profile(tmp_path, "tags[0]"))


def test_a_refused_batch_is_named(tmp_path: Path) -> None:
    path = profile(tmp_path, "tags[0]")
    text = path.read_text().replace('tool = "store"', 'tool = "store_many"\nbatch_field = "items"')
    path.write_text(text.replace("batch_field", "batch_size = 2\nbatch_field"))
    with pytest.raises(SystemUnderTestError, match=r"batch 2 of 2 \(document 'vague'\)"):
        measured(path)


def test_refused_memories_can_be_skipped_and_are_reported(tmp_path: Path) -> None:
    run, report = measured(profile(tmp_path, "tags[0]", 'on_error = "skip"'))
    (refused,) = run.spec.settings["not_ingested"]
    assert refused["ids"] == ["vague"] and "too generic" in refused["error"]
    assert run.spec.settings["profile"]["ingest"]["on_error"] == "skip"
    assert report.counts.not_ingested == 1
    (warning,) = [w for w in report.warnings if "not ingested" in w]
    assert "1 document was not ingested" in warning and ": vague;" in warning
    assert "[ingest] on_error = 'skip'" in terminal(report)
    assert "documents not ingested (refused by the system): 1" in render_markdown(report)
    assert failure_of(run) is None


def test_the_report_states_the_depth_a_capped_search_asked(tmp_path: Path) -> None:
    path = profile(tmp_path, "tags[0]", 'on_error = "skip"', "max_k = 1")
    _, report = measured(path, k=5)
    assert report.k_searched == 1
    assert json.loads(report.model_dump_json())["k_searched"] == 1
    note = "k = 5 (the profile caps searches at 1: measures at cutoffs above 1 see at most 1"
    assert note in render_markdown(report)
    assert note in terminal(report)


def test_an_uncapped_search_says_k_alone(tmp_path: Path) -> None:
    _, report = measured(profile(tmp_path, "tags[0]", 'on_error = "skip"', "max_k = 10"))
    assert report.k_searched is None
    assert "k_searched" not in json.loads(report.model_dump_json())
    assert "- system: `tagged`, k = 5\n" in render_markdown(report)
