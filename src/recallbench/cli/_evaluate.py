"""`recallbench evaluate`: qrels and run files in, trec_eval's layout out."""

from __future__ import annotations

import csv
import io
import json
import math
import os
from pathlib import Path

import click

from recallbench.cli._errors import reports_errors, warn


@click.command(
    epilog="""\b
Measures take trec_eval's names (P.5,10  ndcg_cut.10  recip_rank  map_cut.100  official
all_trec) or recallbench's (P@5  ndcg@10  mrr@10  map@100). Default: official.
\b
Output is trec_eval 10.0's, byte for byte; files are read as it reads them, whatever their
size. Refused with file:line (exit 2) rather than read differently: a score or grade that
C's atof/atol would read only in part (1_000, fullwidth digits, 0x1p3, nan, inf, a grade
1.5), a document judged twice or returned twice for a query, bytes that are not UTF-8, and
a run sharing no query with the qrels. A judged query missing from the run is ignored
unless -c (trec_eval 9's behaviour; trec_eval 10.0 stops with exit 4); with -c it scores
0. In --format json, trec_eval's -nan is null.
\b
A run grouped by query (each query's lines together, in any order, as TREC runs are
written) is streamed: memory is bounded by its largest query, not its size. A run over
256 MiB that is not grouped is refused (exit 2) with the command that groups it:
LC_ALL=C sort -s -k1,1b RUN > RUN.grouped
\b
Examples:
  recallbench evaluate qrels.txt run.txt
  recallbench evaluate -q -m ndcg_cut.10 -m P.5 qrels.txt run.txt
  recallbench evaluate -c -M 100 -l 2 -m all_trec qrels.txt run.txt
  recallbench evaluate --format json -m ndcg@10 qrels.txt run.txt > scores.json
"""
)
@click.argument("qrels", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("run", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-m",
    "--measure",
    "specs",
    multiple=True,
    metavar="MEASURE",
    help="Measure or trec_eval measure set (repeatable).",
)
@click.option("-q", "per_query", is_flag=True, help="Also print every query's values.")
@click.option(
    "-n", "no_summary", is_flag=True, help="No summary over all queries (with -q: per query only)."
)
@click.option(
    "-c",
    "complete",
    is_flag=True,
    help="Average over all judged queries; those missing from the run score 0.",
)
@click.option(
    "-l",
    "level",
    # trec_eval takes a negative level too, and then counts documents absent from the qrels
    # as relevant; refused rather than reproduced.
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Relevance level: grade >= LEVEL is relevant (0 or more).",
)
@click.option(
    "-M",
    "max_docs",
    type=click.IntRange(min=1),
    default=None,
    help="Use only the first N documents of each ranking.",
)
@click.option(
    "-J",
    "--judged-only",
    is_flag=True,
    help="Keep only judged documents (grade 0 or more), after -M.",
)
@click.option(
    "--format",
    "output",
    type=click.Choice(["trec", "json", "csv"]),
    default="trec",
    show_default=True,
    help="Output layout.",
)
@reports_errors
def evaluate(
    qrels: Path,
    run: Path,
    specs: tuple[str, ...],
    per_query: bool,
    no_summary: bool,
    complete: bool,
    level: int,
    max_docs: int | None,
    judged_only: bool,
    output: str,
) -> None:
    """Evaluate a TREC run file against a qrels file, exactly as trec_eval does."""
    # Read when numpy is first imported, which is below. numpy asks the kernel for huge
    # pages on large arrays; where the kernel compacts memory to grant them (THP
    # "madvise"), the page faults measured 0.5-1 s of a 2.5 s evaluation here.
    os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
    # No measure multiplies matrices; OpenBLAS would start a thread per core while numpy
    # is imported (30-40 ms of a 0.15 s evaluation of a small file)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from recallbench.measures._files import trec_eval_files
    from recallbench.measures._trec_options import MAX_DOCS, TrecOptions

    if max_docs is not None:
        max_docs = min(max_docs, MAX_DOCS)  # as trec_eval's atol saturates
    options = TrecOptions(
        relevance_level=level, complete=complete, max_docs=max_docs, judged_only=judged_only
    )
    printed = trec_eval_files(
        qrels, run, specs, options, per_query=per_query, summary=not no_summary
    )
    if printed.left_out:
        warn(f"note: not implemented, left out: {', '.join(printed.left_out)}")
    if output == "trec":
        click.echo(printed.text, nl=False)
        return
    lines, tag = printed.lines(), printed.tag
    if output == "csv":  # RFC 4180: quoted where needed, quotes doubled, CRLF lines
        table = io.StringIO(newline="")
        writer = csv.writer(table)
        writer.writerow(("measure", "query", "value"))
        writer.writerows(lines)
        click.echo(table.getvalue(), nl=False)
    else:
        document: dict[str, dict[str, str | float | None]] = {}
        for label, qid, value in lines:
            document.setdefault(qid, {})[label] = _number(value)
        click.echo(
            json.dumps(
                {
                    "run": tag,
                    "options": {
                        "relevance_level": level,
                        "complete": complete,
                        "max_docs": max_docs,
                        "judged_only": judged_only,
                    },
                    "values": document,
                },
                indent=2,
            )
        )


def _number(text: str) -> str | float | None:
    """A printed value as JSON: a number, null for trec_eval's ``-nan`` (JSON has no NaN),
    or the text of a textual measure (relstring)."""
    try:
        value = float(text)
    except ValueError:
        return text
    return None if math.isnan(value) else value
