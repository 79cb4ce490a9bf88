"""`recallbench qa`: answer a dataset's questions from each system's memories and score the
answers (J strict and lenient, F1, BLEU-1, evidence recall), reproducibly from a cache."""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console

from recallbench._version import __version__
from recallbench.cli._console import make_console
from recallbench.cli._errors import reports_errors
from recallbench.cli._judge import (
    UNRELIABLE_RULE,
    cost_line,
    exit_unreliable,
    progress_bars,
    read_runs,
)
from recallbench.cli._options import (
    config_option,
    out_option,
    quiet_option,
    store_option,
    systems_option,
    with_judge_cache_options,
)
from recallbench.cli._run import _one_dataset, _record, _systems
from recallbench.cli._run_io import writable_folder, written
from recallbench.core import ConfigError, Dataset, Run
from recallbench.core._files import atomic_write_texts
from recallbench.datasets import DEFAULT_DATASET, load_dataset
from recallbench.gates import load_config

if TYPE_CHECKING:
    from recallbench.judges._setup import JudgeSetup
    from recallbench.qa._pipeline import Answered, Batches, Question
    from recallbench.qa._report import QAReport

DEFAULT_K = 10
DEFAULT_OUT = Path("out/qa")


@click.command(
    epilog="""\b
Examples:
  recallbench qa --system builtin-hybrid --dataset locomo:locomo10.json --unit conv-30
  recallbench qa --system builtin-hybrid --full-context --k 20 --dataset locomo:locomo10.json
  recallbench qa out/builtin-hybrid --dataset longmemeval:longmemeval_oracle.json
  recallbench qa --system builtin-hybrid --judge-cache qa-cache.jsonl --strict   # CI replay
  recallbench qa --system builtin-hybrid --previous out/qa/qa.json   # agreement with a rerun

\b
The answer model is [reader] in recallbench.toml (default: the [judge] model); the
verdicts come from [judge]. Writes DIR/qa.json (every answer, verdict and reasoning) and
DIR/qa.md.

\b
Exit codes: 0 scored; 2 bad input, or --strict and an answer or judgment not in the
  cache;
"""
    + UNRELIABLE_RULE
    + """
  Each task (read, strict, lenient, abstention, trap) is held to the rule on its own.
""",
)
@click.argument("run_paths", nargs=-1, type=click.Path(path_type=Path), metavar="[RUN]...")
@click.option(
    "--dataset",
    "dataset_spec",
    help=f"Dataset with gold answers (metadata.answer). Default: the configuration's, else "
    f"{DEFAULT_DATASET}.",
)
@systems_option("System whose memories answer (repeatable). Default: the configuration's.")
@click.option(
    "--full-context",
    is_flag=True,
    help="Add the reference row: every memory of the question's conversation, no retrieval.",
)
@click.option(
    "--k",
    type=click.IntRange(min=1),
    default=DEFAULT_K,
    show_default=True,
    help="Memories given to the answer model (and the k of evidence recall).",
)
@click.option("--category", "categories", multiple=True, help="Only these categories.")
@click.option(
    "--unit", "units", multiple=True, help="Only these conversations or haystacks (conv-30)."
)
@click.option(
    "--previous",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A previous qa.json: report the share of the same strict verdicts.",
)
@out_option("Folder for qa.json and qa.md.", DEFAULT_OUT)
@with_judge_cache_options
@config_option
@store_option
@quiet_option
@reports_errors
def qa(
    run_paths: tuple[Path, ...],
    dataset_spec: str | None,
    system_names: tuple[str, ...],
    full_context: bool,
    k: int,
    categories: tuple[str, ...],
    units: tuple[str, ...],
    cache_spec: str | None,
    strict: bool,
    previous: Path | None,
    out_dir: Path,
    config_path: Path | None,
    store_url: str | None,
    quiet: bool,
) -> None:
    """Answer each question from each system's top-k memories and score the answers."""
    from recallbench.judges._setup import JudgeSetup, open_cache, require_judge
    from recallbench.qa._pipeline import (
        FULL_CONTEXT,
        answer_and_judge,
        evidence_recall,
        qa_questions,
        retrieved_context,
    )
    from recallbench.qa._pipeline import (
        full_context as whole_context,
    )

    loaded = load_config(config_path)
    judge_config = require_judge(loaded.config.judge, loaded.path)
    reader_config = loaded.config.reader or judge_config
    dataset = load_dataset(dataset_spec or _one_dataset(loaded.config.datasets))
    _known(units, dataset.units, "--unit", dataset.name, "units")
    _known(
        categories,
        {q.category for q in dataset.queries if q.category},
        "--category",
        dataset.name,
        "categories",
    )
    questions = qa_questions(dataset, categories, units)
    if not questions:
        raise ConfigError(
            f"{dataset.name}: no question with a gold answer (metadata.answer)"
            + (" in the chosen categories or units" if categories or units else "")
        )
    earlier = _read_previous(previous) if previous is not None else None
    writable_folder(out_dir, "--out")
    console = make_console(quiet)
    names = system_names or (() if run_paths else tuple(loaded.config.systems))
    runs = _runs(run_paths, names, dataset, questions, k, console)
    if not runs and not full_context:
        raise ConfigError("nothing answers: give RUN files, --system NAME or --full-context")
    contexts = {name: retrieved_context(dataset, run, k) for name, run in runs}
    recalls = {name: evidence_recall(dataset, run, k, questions) for name, run in runs}
    if full_context:
        contexts[FULL_CONTEXT] = whole_context(dataset, questions)
    with open_cache(cache_spec, store_url) as cache:
        reader = JudgeSetup(reader_config, cache)
        judge = JudgeSetup(judge_config, cache)
        with progress_bars(console) as bars:
            answered, batches = asyncio.run(
                answer_and_judge(
                    questions, contexts, recalls, reader, judge, strict=strict, progress=bars
                )
            )
    report = _report(dataset, answered, batches, reader, judge, k, earlier, previous)
    _write(report, out_dir, console)
    console.print(_cost(batches, report), highlight=False)
    unreliable = [c for c in report.calls if c.unreliable]
    if unreliable:
        worst = max(unreliable, key=lambda c: c.failure_rate)
        exit_unreliable(
            f"{worst.task} calls",
            worst.failure_rate,
            (reader_config if worst.task == "read" else judge_config).max_failure_rate,
            f"unreliable tasks: {', '.join(c.task for c in unreliable)}; the affected scores "
            f"are mostly neutral filler (see {out_dir / 'qa.json'})",
        )


def _cost(batches: Batches, report: QAReport) -> str:
    """Spent now against recorded, over every task (the table's cost is recorded)."""
    stats = [run.stats for run in batches.runs.values()]
    costs = [s.cost for s in stats]
    spent = None if any(cost is None for cost in costs) else sum(c or 0.0 for c in costs)
    return cost_line(
        spent,
        sum(s.called for s in stats),
        sum(s.cached for s in stats),
        sum(c.cost_usd for c in report.calls),
    )


def _runs(
    paths: tuple[Path, ...],
    names: Sequence[str],
    dataset: Dataset,
    questions: Sequence[Question],
    k: int,
    console: Console,
) -> list[tuple[str, Run]]:
    """(name, run) of runs read from RUN files, else made now on the chosen questions only.
    Two RUN files of one system keep both, named with their paths (``read_runs``)."""
    if paths:
        if names:
            raise ConfigError("give RUN files or --system, not both")
        return read_runs(paths, dataset)
    if not names:
        return []
    wanted = {question.query.id for question in questions}
    subset = _only(dataset, wanted)
    systems = _systems(list(dict.fromkeys(names)), subset, None, None, False)
    runs = [_record(subset, system, k, console) for system in systems]
    return [(run.spec.system, run) for run in runs]


def _only(dataset: Dataset, query_ids: set[str]) -> Dataset:
    """``dataset`` with only the given queries (a run on one conversation of LoCoMo asks
    that conversation's questions, in its own store, and nothing else)."""
    if len(query_ids) == len(dataset.queries):
        return dataset
    queries = tuple(q for q in dataset.queries if q.id in query_ids)
    used_units = {q.unit for q in queries}
    return dataset.replaced(
        queries=queries,
        qrels={q: j for q, j in dataset.qrels.items() if q in query_ids},
        label_sources={q: s for q, s in dataset.label_sources.items() if q in query_ids},
        units={u: d for u, d in dataset.units.items() if u in used_units},
    )


def _read_previous(path: Path) -> QAReport:
    from recallbench.core._validation import read_json, validate
    from recallbench.qa._report import QAReport

    data = read_json(path)
    kind = data.get("format") if isinstance(data, dict) else None
    if kind != "recallbench.qa/v1":
        raise ConfigError(f"--previous {path}: not a recallbench QA report (format {kind!r})")
    return validate(QAReport, data, str(path))


def _report(
    dataset: Dataset,
    answered: dict[str, list[Answered]],
    batches: Batches,
    reader: JudgeSetup,
    judge: JudgeSetup,
    k: int,
    earlier: QAReport | None,
    previous: Path | None,
) -> QAReport:
    from recallbench.qa._lexical import lexical_rules
    from recallbench.qa._pipeline import FULL_CONTEXT
    from recallbench.qa._report import (
        LEVEL,
        RESAMPLES,
        SEED,
        QAReport,
        agreement_with,
        call_counts,
        question_rows,
        system_summary,
    )

    tasks = {
        "read": ("read v1", reader),
        "strict": ("answer v1", judge),
        "lenient": ("answer_lenient v1", judge),
        "abstention": ("abstention v1", judge),
        "trap": ("answer v1 (against the trap answer)", judge),
    }
    rows = [row for items in answered.values() for row in question_rows(items)]
    category_map = {
        str(q.metadata["category_id"]): q.category or ""
        for q in dataset.queries
        if isinstance(q.metadata.get("category_id"), int)
    }
    report = QAReport(
        created_at=datetime.now(UTC),
        recallbench_version=__version__,
        dataset=dataset.ref,
        rules={
            "answer": f"read v1: the top {k} memories of each system (dated when the dataset "
            "dates them), or every memory of the conversation for the full-context row; "
            "a failed answer scores 0.5 in J and is counted",
            "J strict": "answer v1: the same fact, entity, number or date as the gold answer; "
            "a partial list, a hedge or 'I don't know' is wrong",
            "J lenient": "answer_lenient v1: one item of a listed gold answer, a date within "
            "two weeks, the same topic in other words: correct",
            "unanswerable": "correct in both J when the answer declines (abstention v1); "
            "the trap answer (LoCoMo's adversarial_answer) checked with answer v1",
            **lexical_rules(),
            "evidence recall": f"recall@{k} of the question's relevant memories in the same "
            "run (answerable questions)",
        },
        category_map=dict(sorted(category_map.items())),
        reader=f"{reader.config.model} ({reader.config.provider})",
        judge=f"{judge.config.model} ({judge.config.provider})",
        intervals=f"bootstrap BCa, {RESAMPLES:,} resamples, seed {SEED}, {LEVEL:.0%}",
        calls=call_counts(
            batches,
            {name: prompt for name, (prompt, _) in tasks.items()},
            {name: setup.config for name, (_, setup) in tasks.items()},
        ),
        systems=[
            system_summary(name, None if name == FULL_CONTEXT else k, items)
            for name, items in answered.items()
        ],
        questions=rows,
    )
    if earlier is not None and previous is not None:
        agreement = agreement_with(earlier, str(previous), rows)
        report = report.model_copy(update={"agreement": agreement})
    return report


def _write(report: QAReport, out_dir: Path, console: Console) -> None:
    from recallbench.qa._render import render_markdown, render_terminal

    files = {
        out_dir / "qa.json": report.model_dump_json(indent=2) + "\n",
        out_dir / "qa.md": render_markdown(report),
    }
    try:
        atomic_write_texts(files)
    except OSError as error:
        raise written("--out", out_dir, error) from None
    render_terminal(report, console)
    console.print("wrote " + ", ".join(str(path) for path in files), highlight=False)


def _known(
    asked: Sequence[str], known: Collection[str], flag: str, dataset: str, what: str
) -> None:
    """ConfigError naming every value of ``flag`` the dataset does not have."""
    unknown = [value for value in asked if value not in known]
    if unknown:
        shown = ", ".join(sorted(known)[:8]) + (", ..." if len(known) > 8 else "")
        raise ConfigError(
            f"{flag} {', '.join(map(repr, unknown))}: not in {dataset} "
            f"({len(known)} {what}: {shown or 'none'})"
        )
