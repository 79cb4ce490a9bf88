"""`recallbench measures`: every registered measure with what it means and what it needs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import click
from rich import box
from rich.table import Table

from recallbench.cli._console import make_console
from recallbench.cli._errors import reports_errors
from recallbench.measures import Measure, measure_families
from recallbench.measures.set_based import _SetMeasure

GROUPS = ("ranking", "set", "count", "text", "agent-memory")
"""What a measure looks at; ``--kind`` takes these or a scoring kind (graded, exact, judge)."""
SCORING = ("graded", "exact", "judge")


@dataclass(frozen=True)
class Entry:
    """One measure family, described by what its class carries."""

    name: str
    syntax: str
    example: str
    group: str
    kind: str
    definition: str
    population: str
    direction: str
    trec_eval: str | None
    needs: str


def _example(cls: type[Measure]) -> Measure:
    """The family with a cutoff of 10 where it needs one (its default otherwise)."""
    return cls.from_argument("10") if cls.cutoff_required else cls()


def _group(cls: type[Measure]) -> str:
    if getattr(cls, "needs_context", False):
        return "agent-memory"
    if issubclass(cls, _SetMeasure):
        return "set"
    if cls.textual:
        return "text"
    return "count" if cls.integer else "ranking"


def _needs(cls: type[Measure]) -> str:
    """What the dataset must hold for the measure to say anything."""
    context = getattr(cls, "needs_context", False)
    needs = "memory metadata" if context else "judgments"
    if cls.population == "unanswerable":
        needs += ", unanswerable questions"
    return needs


def _syntax(cls: type[Measure]) -> str:
    if cls.cutoff_required:
        return f"{cls.name}@k"
    return f"{cls.name}[@k]" if cls.cutoff_allowed else cls.name


def catalogue() -> list[Entry]:
    """Every registered measure family, by name."""
    entries = []
    for cls in measure_families():
        example = _example(cls)
        entries.append(
            Entry(
                name=cls.name,
                syntax=_syntax(cls),
                example=str(example),
                group=_group(cls),
                kind=cls.kind,
                definition=example.definition(),
                population=cls.population,
                direction="higher" if cls.higher_is_better else "lower",
                trec_eval=example.trec_label() if cls.trec_names else None,
                needs=_needs(cls),
            )
        )
    return entries


def _markdown(entries: Sequence[Entry]) -> str:
    header = ["measure", "kind", "definition", "population", "better", "trec_eval", "needs"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for e in entries:
        cells = [
            f"`{e.syntax}`",
            f"{e.group}, {e.kind}",
            e.definition,
            e.population,
            e.direction,
            f"`{e.trec_eval}`" if e.trec_eval else "–",
            e.needs,
        ]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


@click.command(
    epilog="""\b
Examples:
  recallbench measures
  recallbench measures --kind agent-memory
  recallbench measures --kind exact --kind set
  recallbench measures --format json > measures.json
  recallbench measures --format markdown > MEASURES.md
\b
Kinds: ranking, set, count, text and agent-memory say what a measure looks at (agent-memory
measures read the dataset's memories: tiers, folders, sessions, chains); graded, exact and
judge say how a query is scored (exact: yes or no per query). Measures that need memory
metadata are computed by `recallbench run`, not by `evaluate` (files in). A definition is
that of the measure with a cutoff of 10 where it needs one (`example` in the JSON).
"""
)
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=click.Choice([*GROUPS, *SCORING]),
    help="Only measures of this kind (repeatable: any of them).",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json", "markdown"]),
    default="table",
    show_default=True,
    help="A table for the terminal, JSON or Markdown.",
)
@reports_errors
def measures(kinds: tuple[str, ...], output_format: str) -> None:
    """List every measure: definition, population, direction, trec_eval name, needs."""
    entries = [e for e in catalogue() if not kinds or e.group in kinds or e.kind in kinds]
    if output_format == "json":
        click.echo(json.dumps([asdict(e) for e in entries], indent=2, ensure_ascii=False))
        return
    if output_format == "markdown":
        click.echo(_markdown(entries))
        return
    table = Table(title=f"{len(entries)} measures", box=box.SIMPLE_HEAD, show_lines=True)
    table.add_column("measure · kind", no_wrap=True)
    table.add_column("definition", ratio=1, min_width=20)
    table.add_column("population better")
    table.add_column("trec_eval")
    table.add_column("needs", max_width=12)
    for e in entries:
        table.add_row(
            f"{e.syntax}\n[dim]{e.group}, {e.kind}[/dim]",
            e.definition,
            f"{e.population}\n{e.direction}",
            e.trec_eval or "–",
            e.needs,
        )
    console = make_console()
    console.print(table)
    console.print(
        "population: the questions the mean takes (answerable: with a relevant memory); "
        "better: the direction; needs: what the dataset must hold. "
        "--format json|markdown for every field.",
        highlight=False,
    )
