"""`recallbench datasets`: list, validate and show datasets."""

from __future__ import annotations

from collections import Counter

import click
from rich.console import Console
from rich.table import Table

from recallbench.cli._errors import reports_errors
from recallbench.core import Dataset
from recallbench.datasets import bundled_datasets, load_dataset

SPEC_HELP = "PATH is a bundled dataset name, a dataset JSON file, or FORMAT:PATH (json, beir)."


@click.group(
    epilog="""\b
Examples:
  recallbench datasets list
  recallbench datasets validate my-golden.json
  recallbench datasets show agent-memory-sample
"""
)
def datasets() -> None:
    """List, validate and describe datasets."""


@datasets.command("list")
def list_() -> None:
    """List the bundled datasets."""
    for name in bundled_datasets():
        click.echo(name)


@datasets.command(epilog=SPEC_HELP)
@click.argument("path")
@reports_errors
def validate(path: str) -> None:
    """Check a dataset; list every problem with its location (exit 2 if any)."""
    dataset = load_dataset(path)
    judged = sum(len(judged) for judged in dataset.qrels.values())
    click.echo(
        f"ok: {dataset.name} {dataset.version}: {len(dataset.documents)} documents, "
        f"{len(dataset.queries)} queries, {judged} judgments, sha256 {dataset.sha256}"
    )


def _counter_table(title: str, counter: Counter[str], total: int) -> Table:
    table = Table(title=title)
    table.add_column(title)
    table.add_column("n", justify="right")
    table.add_column("share", justify="right")
    for name, count in sorted(counter.items()):
        table.add_row(name, str(count), f"{count / total:.0%}" if total else "–")
    return table


def describe(dataset: Dataset, console: Console) -> None:
    """Counts, grade histogram, categories, intents and tiers."""
    judged = [grade for judged in dataset.qrels.values() for grade in judged.values()]
    without = sum(1 for query in dataset.queries if not dataset.relevant(query.id))
    console.print(f"[bold]{dataset.name}[/bold] {dataset.version}  sha256 {dataset.sha256}")
    if dataset.description:
        console.print(dataset.description)
    console.print(
        f"documents {len(dataset.documents)} · queries {len(dataset.queries)} · "
        f"judgments {len(judged)} · relevance threshold {dataset.relevance_threshold} · "
        f"queries without a relevant document {without}"
    )
    console.print(_counter_table("grade", Counter(str(g) for g in judged), len(judged)))
    for title, values in (
        ("category", [q.category for q in dataset.queries]),
        ("intent", [q.intent for q in dataset.queries]),
        ("tier", [str(d.metadata.get("tier")) for d in dataset.documents if "tier" in d.metadata]),
    ):
        present = [value for value in values if value is not None]
        if present:
            console.print(_counter_table(title, Counter(present), len(present)))


@datasets.command(epilog=SPEC_HELP)
@click.argument("path")
@reports_errors
def show(path: str) -> None:
    """Describe a dataset: counts, grade histogram, categories, intents, tiers."""
    describe(load_dataset(path), Console())
