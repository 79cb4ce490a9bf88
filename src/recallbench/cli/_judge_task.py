"""`recallbench judge task`: any judge task over a JSON Lines file of inputs (faithfulness of
answers to memories, merge decisions, answers against gold ones, relevance pairs)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import click
from pydantic import TypeAdapter, ValidationError
from rich.table import Table

from recallbench.cli._console import make_console
from recallbench.cli._errors import reports_errors
from recallbench.cli._judge import UNRELIABLE_RULE, cost_line, exit_unreliable, progress_bar
from recallbench.cli._options import (
    config_option,
    quiet_option,
    store_option,
    with_judge_cache_options,
)
from recallbench.core import DatasetError, Problem
from recallbench.core._files import atomic_write_texts
from recallbench.gates import load_config
from recallbench.judges._cache import canonical
from recallbench.judges._setup import JudgeSetup, judge_all, open_cache, require_judge
from recallbench.judges._summary import describe, summarize
from recallbench.judges._task_kinds import TASKS
from recallbench.judges._tasks import JudgeTask

_FIELDS = {
    "relevance": '{"query": "...", "memory": "..."}',
    "faithfulness": '{"question": "...", "answer": "...", "memories": ["...", "..."]}',
    "merge": '{"original": "...", "incoming": "...", "merged": "...", "decision": "UPDATE"}',
    "answer": '{"question": "...", "gold": "...", "answer": "..."}',
    "answer_lenient": '{"question": "...", "gold": "...", "answer": "..."}',
    "abstention": '{"question": "...", "answer": "..."}',
    "read": '{"question": "...", "memories": ["...", "..."]}   (answers, not a judgment)',
}


@click.command(
    "task",
    epilog="""\b
Examples:
  recallbench judge task faithfulness answers.jsonl --out faithfulness.jsonl
  recallbench judge task merge merges.jsonl --judge-cache merges-cache.jsonl
  recallbench judge task answer qa.jsonl --judge-cache qa-cache.jsonl --strict

\b
One input per line:
"""
    + "\n".join(f"  {name:<13}{fields}" for name, fields in _FIELDS.items())
    + """

\b
Each output line holds the input's line number, the judge's value (null when it failed),
its 0-1 score (0.5 for a failed judgment), the failure and whether it was replayed.
Exit codes: 0 judged; 2 bad input, or --strict and a judgment not in the cache;
"""
    + UNRELIABLE_RULE
    + "\n",
)
@click.argument("task_name", metavar="TASK", type=click.Choice(sorted(TASKS)))
@click.argument("inputs_path", metavar="FILE", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The judgments as JSON Lines. Default: FILE with .judged.jsonl.",
)
@with_judge_cache_options
@config_option
@store_option
@quiet_option
@reports_errors
def task(
    task_name: str,
    inputs_path: Path,
    out_path: Path | None,
    cache_spec: str | None,
    strict: bool,
    config_path: Path | None,
    store_url: str | None,
    quiet: bool,
) -> None:
    """Judge every input of FILE with TASK and write one judgment per line."""
    loaded = load_config(config_path)
    config = require_judge(loaded.config.judge, loaded.path)
    judge_task = TASKS[task_name]
    numbers, inputs = read_inputs(inputs_path, judge_task)
    out_path = out_path or inputs_path.with_suffix(".judged.jsonl")
    console = make_console(quiet)
    with open_cache(cache_spec, store_url) as cache:
        setup = JudgeSetup(config, cache)
        with progress_bar(console, f"{task_name} with {config.model}") as progress:
            judged = asyncio.run(
                judge_all(judge_task, inputs, setup, strict=strict, progress=progress)
            )
    lines = [
        canonical(
            {
                "line": number,
                "value": None if j.value is None else judge_task.value_json(j.value),
                "score": j.score,
                "failure": j.failure,
                "detail": j.detail,
                "cached": j.cached,
                "tokens_in": j.tokens_in,
                "tokens_out": j.tokens_out,
            }
        )
        + "\n"
        for number, j in zip(numbers, judged.judgments, strict=True)
    ]
    atomic_write_texts({out_path: "".join(lines)})
    summary = summarize(
        judged.judgments,
        judged.stats,
        model=config.model,
        provider=config.provider,
        prompt=f"{judge_task.name} v{judge_task.version}",
        params=setup.params,
        cost=sum(config.cost(j.tokens_in, j.tokens_out) for j in judged.judgments),
    )
    scores = judged.scores
    table = Table(title=f"{task_name}: {len(scores)} judgments")
    for column in ("mean score", "failed (scored 0.5)", "replayed", "asked"):
        table.add_column(column, justify="right")
    table.add_row(
        f"{sum(scores) / len(scores):.4f}",
        str(judged.stats.failures),
        str(judged.stats.cached),
        str(judged.stats.called),
    )
    console.print(describe(summary), highlight=False)
    console.print(table)
    stats = judged.stats
    console.print(
        cost_line(stats.cost, stats.called, stats.cached, summary.cost_usd), highlight=False
    )
    console.print(f"wrote {out_path}", highlight=False)
    if summary.unreliable:
        exit_unreliable(
            "judgments",
            summary.failure_rate,
            summary.max_failure_rate,
            f"the mean is mostly neutral filler; see {out_path} for each failure",
        )


def read_inputs(path: Path, judge_task: JudgeTask[Any, Any]) -> tuple[list[int], list[Any]]:
    """(line numbers, inputs) of a JSON Lines file, each line validated as the task's
    input; every bad line is reported with its file:line and field, nothing is asked."""
    from recallbench.datasets._provenance import read_jsonl

    adapter: TypeAdapter[Any] = TypeAdapter(judge_task.input_type)
    problems: list[Problem] = []
    numbers, inputs = [], []
    expected = set(judge_task.input_type.__dataclass_fields__)
    for number, record in read_jsonl(path, problems):
        extra = sorted(set(record) - expected)
        if extra:
            problems.append(Problem(f"{path}:{number}", f"unknown field(s) {extra}"))
            continue
        try:
            inputs.append(adapter.validate_python(record))
        except ValidationError as error:
            for item in error.errors(include_url=False):
                where = ".".join(str(part) for part in item["loc"]) or "line"
                problems.append(Problem(f"{path}:{number}", f"{where}: {item['msg']}"))
            continue
        numbers.append(number)
    if not problems and not inputs:
        problems.append(Problem(str(path), "no inputs: one JSON object per line"))
    if problems:
        raise DatasetError(str(path), problems)
    return numbers, inputs
