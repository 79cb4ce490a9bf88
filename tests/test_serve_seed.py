"""The store the dashboard's tests use (tests/test_serve*.py): runs of two builtin
systems on the bundled dataset (one with four runs), a query log over the dataset's
queries and memories (two of its searches repeated with another mode, for pairwise
items), feedback, and the judge's labels of some logged pairs."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path

from recallbench.report import Report
from recallbench.store import FeedbackEvent, Judgment, QueryLogEntry, open_store

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
LOGGED = 8
"""Logged searches (5 results each); then two more repeating the first two's texts."""
PER_QUERY = 5
SYSTEMS = ("builtin-lexical", "builtin-hybrid")


@cache
def reports() -> dict[str, Report]:
    from recallbench.datasets import load_dataset
    from recallbench.measures import parse_measures
    from recallbench.report import build_report
    from recallbench.runner import run_dataset
    from recallbench.systems import create_system

    dataset = load_dataset("agent-memory-sample")
    measures = parse_measures(["ndcg@10", "recall@10", "mrr@10"])

    def scored(name: str) -> Report:
        run = asyncio.run(run_dataset(dataset, create_system(name), k=10))
        return build_report(dataset, run, measures)

    # in a thread of its own: Playwright's sync API already runs an event loop in this one
    with ThreadPoolExecutor(1) as pool:
        return {name: pool.submit(scored, name).result() for name in SYSTEMS}


def log_entries() -> list[QueryLogEntry]:
    from recallbench.datasets import load_dataset

    dataset = load_dataset("agent-memory-sample")
    ids = [d.id for d in dataset.documents]
    texts = {d.id: d.text for d in dataset.documents}
    entries = []
    for index, query in enumerate(dataset.queries[:LOGGED]):
        judged = list(dataset.qrels.get(query.id, {}))
        results = tuple(dict.fromkeys([*judged, *ids[index * 3 :]]))[:PER_QUERY]
        entries.append(
            QueryLogEntry(
                query_id=f"log-{index:02d}",
                text=query.text,
                created_at=T0 + timedelta(minutes=index),
                results=results,
                mode="hybrid",
                texts={doc: texts[doc] for doc in results},
                latency_ms=12.5 + index,
            )
        )
    for index, first in enumerate(entries[:2]):
        results = tuple(reversed(first.results))
        entries.append(
            QueryLogEntry(
                query_id=f"log-again-{index}",
                text=first.text.upper(),
                created_at=T0 + timedelta(hours=1, minutes=index),
                results=results,
                mode="lexical",
                texts={doc: first.texts[doc] for doc in results},
            )
        )
    return entries


def seed(url: str, with_runs: bool = True) -> list[QueryLogEntry]:
    """Fill the store at ``url``; the logged entries."""
    entries = log_entries()
    feedback = [
        FeedbackEvent("log-00", "read_after_search", T0, doc_id=entries[0].results[0], rank=1),
        FeedbackEvent("log-00", "re_search", T0 + timedelta(seconds=30)),
        FeedbackEvent("log-01", "scroll_past", T0, doc_id=entries[1].results[2], rank=3),
    ]
    judge = [
        Judgment(e.query_id, doc, grade=(rank * 7) % 4, source="llm", created_at=T0)
        for e in entries[:4]
        for rank, doc in enumerate(e.results)
    ]
    with open_store(url) as store:
        if with_runs:
            lexical, hybrid = reports()["builtin-lexical"], reports()["builtin-hybrid"]
            for hours, value in enumerate((0.50, 0.60, 0.55, 0.70)):
                means = {**lexical.means, "ndcg@10": value}
                shifted = lexical.model_copy(
                    update={"created_at": T0 + timedelta(hours=hours), "means": means}
                )
                run = store.record(shifted)
                if hours == 1:
                    store.accept(run.id)
            store.record(hybrid.model_copy(update={"created_at": T0 + timedelta(hours=5)}))
        store.log(queries=entries, feedback=feedback, judgments=judge)
    return entries


FOLDER_SYSTEMS = ("builtin-lexical", "builtin-dense")
"""The systems of :func:`seed_folders`' runs, oldest first."""


def seed_folders(url: str, folder: Path) -> list[int]:
    """Two more runs, recorded as `recallbench run --out DIR --store URL` records them (each
    with its output folder as source, so the dashboard reaches every query's ranking):
    builtin-lexical into ``folder/first``, then builtin-dense into ``folder/second``. Their
    run ids, oldest first."""
    for name, system in zip(("first", "second"), FOLDER_SYSTEMS, strict=True):
        command = [sys.executable, "-m", "recallbench", "run", "--system", system]
        command += ["--out", str(folder / name), "--store", url]
        command += ["-m", "ndcg@10", "-m", "recall@10", "-m", "mrr@10"]
        folder.mkdir(parents=True, exist_ok=True)  # run there: no configuration file applies
        subprocess.run(command, check=True, capture_output=True, timeout=120, cwd=folder)
    with open_store(url) as store:
        return sorted(run.id for run in store.runs())[-2:]


def test_the_seed_logs_what_the_tests_count() -> None:
    entries = log_entries()
    assert len(entries) == LOGGED + 2
    assert all(len(e.results) == PER_QUERY for e in entries)
    assert entries[-1].text == entries[1].text.upper()
