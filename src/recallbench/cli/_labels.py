"""`recallbench labels export`: people's labels from the store into a dataset, with their
provenance (the rules are :mod:`recallbench.judges._manual_labels`'s)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from recallbench.cli._errors import reports_errors
from recallbench.cli._options import store_option, workspace_option


@click.group()
def labels() -> None:
    """People's labels (the dashboard's annotation queue) in the history store."""


@labels.command(
    epilog="""\b
Examples:
  recallbench labels export --dataset agent-memory-sample --out labelled.json
  recallbench labels export --dataset golden.json --store sqlite:///ci/history.db \\
      --annotator alice --annotator bob --out golden-labelled.json
  recallbench judge calibrate --dataset labelled.json     # the judge against people
By default each pair's resolved label enters qrels: the grade its annotators agreed on
(by: alice+bob) or the adjudicated one (by: carol (adjudicated)); pairs in conflict are
left out and counted. With --annotator, those annotators' own labels (several of one
pair give the lower median of their grades). Each label enters qrels with label_sources
{source: manual, by: ...}. The dataset authors' own grades are kept; a person's label
replaces a judge's (llm) or a harvest's. The file is written whole or not at all, after
the dataset it holds is validated.
""",
)
@click.option(
    "--dataset",
    "dataset_spec",
    required=True,
    metavar="NAME|PATH",
    help="The dataset the labels were made on (bundled name, JSON file or FORMAT:PATH).",
)
@store_option
@workspace_option
@click.option(
    "--annotator",
    "annotators",
    multiple=True,
    metavar="NAME",
    help="This annotator's own labels (repeatable). Default: each pair's resolved label.",
)
@click.option(
    "--out",
    "out_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The dataset file to write (recallbench.dataset/v1).",
)
@reports_errors
def export(
    dataset_spec: str,
    store_url: str | None,
    workspace: str,
    annotators: tuple[str, ...],
    out_path: Path,
) -> None:
    """Write the dataset with the store's manual labels added as judgments."""
    from recallbench.core import ConfigError
    from recallbench.core._files import atomic_write_text
    from recallbench.datasets import load_dataset
    from recallbench.datasets._json_v1 import dump_json_dataset, validated_dataset
    from recallbench.judges._manual_labels import with_manual_labels
    from recallbench.store import Judgment, open_store
    from recallbench.store._telemetry import JudgmentSource

    MANUAL: JudgmentSource = "manual"

    dataset = load_dataset(dataset_spec)
    with open_store(store_url, workspace) as store:
        resolved = store.judgments(source=MANUAL)
        given = [label for label in store.labels() if label.grade is not None]
        where = f"{store.url} (workspace {workspace!r})"
    if annotators:
        # their own labels; a manual judgment a script wrote (no label kept for its
        # pair) counts as its annotator's
        labelled = {label.key for label in given}
        found = [
            Judgment(*label.key, label.grade, MANUAL, label.updated_at, annotator=label.annotator)
            for label in given
            if label.annotator in annotators and label.grade is not None
        ] + [
            judgment
            for judgment in resolved
            if judgment.annotator in annotators
            and (judgment.query_id, judgment.doc_id) not in labelled
        ]
        conflicts = 0
    else:
        found = resolved
        settled = {(label.query_id, label.doc_id) for label in resolved}
        conflicts = len({label.key for label in given} - settled)
    if not found:
        who = f" by {', '.join(annotators)}" if annotators else ""
        raise ConfigError(
            f"no manual labels{who} in {where}: nothing written to {out_path} "
            "(label pairs with `recallbench serve --dataset ...`)"
        )
    result = with_manual_labels(dataset, found)
    text = dump_json_dataset(result.dataset)
    validated_dataset(json.loads(text), str(out_path))  # what is written loads back
    atomic_write_text(out_path, text)
    click.echo(
        f"wrote {out_path}: {result.written} manual labels "
        f"({result.added} new, {result.replaced} replacing a judge's or a harvest's, "
        f"{result.updated} updated) by {', '.join(result.annotators) or 'no one'}; "
        f"{result.kept_authors} pairs kept the dataset authors' grade "
        f"({result.differing_authors} graded differently by people); "
        f"{result.unknown} labels of queries or memories {dataset.name} does not hold left out"
        + (
            f"; {conflicts} pairs whose annotators disagree left out (resolve them at "
            "/adjudicate in `recallbench serve`)"
            if conflicts
            else ""
        )
    )
