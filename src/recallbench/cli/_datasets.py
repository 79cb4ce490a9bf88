"""`recallbench datasets`: list, validate and show datasets."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from recallbench.cli._errors import reports_errors
from recallbench.core import ConfigError, Dataset
from recallbench.core._files import atomic_write_text
from recallbench.datasets import bundled_datasets, dump_json_dataset, load_dataset
from recallbench.datasets._provenance import loader_changes
from recallbench.datasets._registry import LOADERS

SPEC_HELP = (
    "PATH is a bundled dataset name, a dataset JSON file, or FORMAT:PATH "
    "(see `recallbench datasets formats`)."
)


@click.group(
    epilog="""\b
Examples:
  recallbench datasets list
  recallbench datasets formats
  recallbench datasets validate my-golden.json
  recallbench datasets show locomo:data/locomo10.json
  recallbench datasets convert --from longmemeval data/longmemeval_oracle.json lme.json
"""
)
def datasets() -> None:
    """List, validate and describe datasets."""


@datasets.command("list")
def list_() -> None:
    """List the bundled datasets."""
    for name in bundled_datasets():
        click.echo(name)


@datasets.command()
def formats() -> None:
    """List the formats FORMAT:PATH accepts."""
    for name in LOADERS:
        click.echo(name)


@datasets.command(
    epilog="""\b
Examples:
  recallbench datasets convert --from locomo locomo10.json locomo-turns.json
  recallbench datasets convert --from longmemeval-turns longmemeval_oracle.json lme.json
  recallbench datasets convert --from beir scifact/ scifact.json
"""
)
@click.option(
    "--from",
    "source_format",
    required=True,
    type=click.Choice(sorted(LOADERS)),
    help="Format of SOURCE.",
)
@click.argument("source", type=click.Path(path_type=Path))
@click.argument("destination", type=click.Path(dir_okay=False, path_type=Path))
@reports_errors
def convert(source_format: str, source: Path, destination: Path) -> None:
    """Convert SOURCE into recallbench's dataset JSON at DESTINATION, listing what the
    loader dropped, altered or flagged."""
    dataset = LOADERS[source_format](source)
    _write(destination, dump_json_dataset(dataset))
    click.echo(
        f"wrote {destination}: {len(dataset.documents)} documents, {len(dataset.queries)} "
        f"queries, {sum(len(j) for j in dataset.qrels.values())} judgments"
        + (f", {len(dataset.units)} units" if dataset.units else "")
    )
    _print_changes(dataset, Console())


def _write(destination: Path, text: str) -> None:
    """Write the whole file or nothing (an existing one is kept); ConfigError naming
    ``destination`` and the reason when it cannot be written."""
    try:
        atomic_write_text(destination, text)
    except OSError as error:
        reason = error.strerror or str(error)
        failed = Path(os.fsdecode(error.filename)) if error.filename else None
        if failed is not None and failed in destination.parents:  # a folder on the way
            reason = f"{failed} is not a folder" if failed.is_file() else f"{failed}: {reason}"
        raise ConfigError(f"cannot write {destination}: {reason}") from None


def _print_changes(dataset: Dataset, console: Console, limit: int = 20) -> None:
    """The loader's rules and the changes it made to the source, grouped by reason."""
    loader = dataset.metadata.get("loader")
    if not isinstance(loader, dict):
        return
    rules = loader.get("rules")
    if isinstance(rules, dict):
        for name, rule in rules.items():
            console.print(f"  {name}: {rule}", highlight=False)
    changes = loader_changes(dataset.metadata)
    if not changes:
        console.print("loader changes: none")
        return
    reasons = Counter((change.action, _reason_kind(change.reason)) for change in changes)
    table = Table(title=f"loader changes ({len(changes)})")
    for column in ("action", "reason", "n"):
        table.add_column(column, justify="right" if column == "n" else "left")
    for (action, reason), count in reasons.most_common():
        table.add_row(action, reason, str(count))
    console.print(table)
    for change in [c for c in changes if c.action != "flagged"][:limit]:
        console.print(f"  {change.action} {change.subject}: {change.reason}", highlight=False)


def _reason_kind(reason: str) -> str:
    """A reason without its particulars (loaders write ``kind: particulars``)."""
    return reason.split(":")[0]


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
    dataset = load_dataset(path)
    console = Console()
    describe(dataset, console)
    _print_changes(dataset, console)
