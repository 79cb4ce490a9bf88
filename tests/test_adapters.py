"""The Python and command adapters, with real retrievers (a module, a child process)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from recallbench.core import Dataset, Document, Query
from recallbench.measures import parse_measures
from recallbench.report import build_report
from recallbench.runner import run_dataset
from recallbench.systems import create_system
from recallbench.systems._hits import to_hits

HERE = Path(__file__).parent
DATA = Dataset(
    name="tiny",
    documents=(
        Document(id="pg", text="The ledger runs on PostgreSQL."),
        Document(id="fri", text="Deploys are frozen on Fridays."),
    ),
    queries=(
        Query(id="q1", text="ledger postgresql"),
        Query(id="q2", text="friday deploys"),
        Query(id="q3", text="frozen deploys"),
    ),
    qrels={"q1": {"pg": 2}, "q2": {"fri": 1}, "q3": {"fri": 3}},
)


def scores(system_name: str) -> tuple[dict[str, float | None], int]:
    run = asyncio.run(run_dataset(DATA, create_system(system_name), k=5))
    report = build_report(DATA, run, parse_measures(["mrr@5"]))
    return {q.id: q.values["mrr@5"] for q in report.queries}, report.counts.failed


def test_to_hits_accepts_the_usual_shapes() -> None:
    hits = to_hits(["a", ("b", 2), {"doc_id": "c", "score": 1, "channels": ["x"]}], "py")
    assert [(h.doc_id, h.score, h.channels) for h in hits] == [
        ("a", None, ("py",)),
        ("b", 2.0, ("py",)),
        ("c", 1.0, ("x",)),
    ]


def test_python_object_and_function() -> None:
    values, failed = scores("python:example_retrievers:Overlap")
    assert values == {"q1": 1.0, "q2": 1.0, "q3": 1.0} and failed == 0
    values, _ = scores("python:example_retrievers:fixed")
    assert values == {"q1": 0.5, "q2": 1.0, "q3": 1.0}


def test_command_process_over_json_lines() -> None:
    values, failed = scores(f"command:{sys.executable} {HERE / 'example_retrievers.py'}")
    assert values == {"q1": 1.0, "q2": 1.0, "q3": 1.0} and failed == 0


def test_a_command_that_dies_fails_its_query_and_is_restarted() -> None:
    system = create_system(f"command:{sys.executable} {HERE / 'example_retrievers.py'} 1")
    run = asyncio.run(run_dataset(DATA, system, k=5))
    errors = [r.error for r in run.results]
    assert errors[0] is None and errors[2] is None  # q3 is answered by the new process
    assert errors[1] is not None and "the process ended (exit 3)" in errors[1]
    assert run.spec.restarts == 1


def test_a_hanging_or_garbled_command_fails_those_queries_clearly() -> None:
    from recallbench.systems._command import CommandSystem

    dataset = Dataset(
        name="faults",
        documents=DATA.documents,
        queries=(
            Query(id="a", text="garbage"),
            Query(id="b", text="ledger"),
            Query(id="c", text="hang"),
            Query(id="d", text="ledger"),
        ),
        qrels={"a": {"pg": 1}, "b": {"pg": 1}, "c": {"pg": 1}, "d": {"pg": 1}},
    )
    system = CommandSystem(f"{sys.executable} {HERE / 'example_retrievers.py'}", timeout=1.0)
    run = asyncio.run(run_dataset(dataset, system, k=5))
    errors = {r.query_id: r.error for r in run.results}
    assert errors["a"] is not None and "not JSON" in errors["a"]
    assert errors["b"] is None  # the process is still in step after a garbled line
    assert errors["c"] is not None and "no answer within 1.0 s" in errors["c"]
    assert errors["d"] is None  # the stopped process was started again
    assert run.spec.restarts == 1
