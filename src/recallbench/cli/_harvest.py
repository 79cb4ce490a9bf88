"""`recallbench harvest`: a golden dataset from what agents really asked."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

from recallbench.cli._console import make_console
from recallbench.cli._errors import reports_errors
from recallbench.cli._options import store_option, trace_options, workspace_option
from recallbench.core import ConfigError
from recallbench.core._files import atomic_write_text

if TYPE_CHECKING:
    from recallbench.core import Dataset
    from recallbench.online._harvest import HarvestStats
    from recallbench.online._traces import TraceFormat


@click.command(
    epilog="""\b
Examples:
  recallbench harvest --out golden.json
  recallbench harvest --since 2026-11-01 --sample-per-intent 50 --out golden.json
  recallbench harvest --store postgresql://rb@db/recallbench --workspace team-a --out g.json
  recallbench harvest --traces otel.jsonl --out golden.json        # OTLP JSON / Phoenix
  recallbench harvest --traces a.jsonl --traces b.jsonl --format phoenix --out g.json
  recallbench run --dataset golden.json --system my-server
Traces: OpenInference RETRIEVER spans and GenAI retrieval / search_memory spans are the
searches, tool spans naming a returned id the reads (docs/traces.md).
Grades: validated useful 3, read after search 2, shown but not read 1 (a pooled unknown),
validated not useful 0; a manual judgment in the store wins. Relevance threshold 2.
"""
)
@click.option(
    "--out",
    "out_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The dataset file to write (recallbench.dataset/v1).",
)
@store_option
@workspace_option
@click.option("--since", metavar="DATE", help="Only queries logged at or after this ISO date.")
@click.option("--until", metavar="DATE", help="Only queries logged before this ISO date.")
@click.option(
    "--sample-per-intent",
    type=click.IntRange(min=1),
    metavar="N",
    help="At most N queries per intent (seeded sample). Default: all.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the sample.")
@click.option("--name", default="harvested", show_default=True, help="The dataset's name.")
@click.option(
    "--mark-golden", is_flag=True, help="Mark the harvested queries as golden in the store."
)
@click.option(
    "--traces",
    "trace_files",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Harvest from trace files instead of the store (repeatable).",
)
@trace_options("The trace files' format.")
@reports_errors
def harvest(
    out_path: Path,
    store_url: str | None,
    workspace: str,
    since: str | None,
    until: str | None,
    sample_per_intent: int | None,
    seed: int,
    name: str,
    mark_golden: bool,
    trace_files: tuple[Path, ...],
    trace_format: str | None,
    read_tools: tuple[str, ...],
) -> None:
    """Turn logged queries and their implicit feedback into a golden dataset.

    Queries are de-duplicated, sampled by intent, and graded from what the agent did with
    each result; every judgment keeps its provenance. The dataset runs through
    `recallbench run --dataset FILE`. With --traces, the log is read from trace files
    (OTLP JSON, Phoenix span export) instead of the store.
    """
    from recallbench.datasets._json_v1 import dump_json_dataset
    from recallbench.online._harvest import NothingHarvestedError, nothing_harvested, since_date
    from recallbench.online._harvest import harvest_scan as make_dataset
    from recallbench.store import open_store

    start, end = since_date(since), since_date(until)
    if trace_files:
        _harvest_traces(
            trace_files,
            trace_format,
            read_tools,
            out_path,
            store_url,
            mark_golden,
            start=start,
            end=end,
            name=name,
            sample_per_intent=sample_per_intent,
            seed=seed,
        )
        return
    if trace_format or read_tools:
        raise ConfigError("--format and --read-tool apply to --traces FILE only")
    with _without_cycle_collection():  # the summary too: its hash walks every logged id
        with open_store(store_url, workspace) as store:
            # streamed: a log of millions of searches is never held as entries;
            manual = sorted(
                store.judgments(source="manual"), key=lambda j: (j.query_id, j.doc_id, j.source)
            )
            # in two passes: the log without its texts, then the texts of the sampled queries
            dataset, stats = make_dataset(
                store.query_log_scan(since=start, until=end),
                store.query_log_details,
                store.feedback_stream(since=start, until=end),
                manual,
                name=name,
                sample_per_intent=sample_per_intent,
                seed=seed,
                metadata={
                    "store": store.url,
                    "workspace": workspace,
                    "since": since,
                    "until": until,
                },
            )
            if not dataset.queries:
                dates = "".join(
                    f", {flag} {value}"
                    for flag, value in (("since", since), ("until", until))
                    if value
                )
                where = f"{store.url} (workspace {workspace!r}{dates})"
                raise NothingHarvestedError(
                    f"{nothing_harvested(stats, where)}. Nothing written to {out_path}"
                )
            atomic_write_text(out_path, dump_json_dataset(dataset))
            if mark_golden:
                store.set_golden(stats.logged_ids)
        _summary(stats, dataset, out_path)


@contextmanager
def _without_cycle_collection() -> Iterator[None]:
    """Python's cycle collection paused: a harvest of millions of logged searches builds
    millions of objects that form no cycle (rows, lists of query ids, maps), which each
    collection would walk again (a third of the harvest's time) to free nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _harvest_traces(
    files: tuple[Path, ...],
    trace_format: str | None,
    read_tools: tuple[str, ...],
    out_path: Path,
    store_url: str | None,
    mark_golden: bool,
    **options: Any,
) -> None:
    from recallbench.datasets._json_v1 import dump_json_dataset
    from recallbench.online._traces_harvest import harvest_traces

    if store_url or mark_golden:
        raise ConfigError(
            "--traces reads the files, not the store: leave out --store and --mark-golden "
            "(`recallbench traces import FILE` logs the traces in the store)"
        )
    dataset, stats, log = harvest_traces(
        files,
        trace_format=cast("TraceFormat | None", trace_format),
        read_tools=frozenset(read_tools) or None,
        since=options["start"],
        until=options["end"],
        name=options["name"],
        sample_per_intent=options["sample_per_intent"],
        seed=options["seed"],
    )
    atomic_write_text(out_path, dump_json_dataset(dataset))
    spans = sum(file.spans for file in log.files)
    make_console().print(
        f"{len(log.files)} trace files, {spans} spans: {len(log.entries)} searches, "
        f"{sum(file.reads for file in log.files)} tool spans naming ids",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    _summary(stats, dataset, out_path)


def _summary(stats: HarvestStats, dataset: Dataset, out_path: Path) -> None:
    console = make_console()
    console.print(
        f"{stats.logged} logged queries, {stats.unique} unique, {stats.sampled} sampled; "
        f"{len(dataset.queries)} with evidence of a useful memory "
        f"({stats.without_evidence} without, left out)"
        + (f"; {stats.withheld} with their texts withheld, left out" if stats.withheld else "")
        + f"; {len(dataset.documents)} memories, "
        f"{sum(len(j) for j in dataset.qrels.values())} judgments",
        highlight=False,
    )
    console.print(f"wrote {out_path} (sha256 {dataset.sha256[:12]})", highlight=False)
