"""The judge of a run measured with an LLM judge's labels, in the history store (on SQLite
and PostgreSQL) and in `recallbench history`; a store made before the store kept the judge
migrates in place and reads it as None."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import MetaData, Table

from recallbench.cli import main
from recallbench.datasets import load_dataset
from recallbench.judges._fill import unjudged_pool, with_labels
from recallbench.judges._judgment import JudgeStats, Judgment
from recallbench.judges._summary import METADATA_KEY, summarize
from recallbench.judges._task_kinds import Relevance
from recallbench.measures import parse_measures
from recallbench.report import Report, build_report
from recallbench.runner import run_dataset
from recallbench.store import StoredRun, _migrations, open_store
from recallbench.store._engine import create_store_engine, transaction
from recallbench.store._rows import measure_rows, query_rows, run_row, value_rows
from recallbench.store._tables import eval_measures, eval_queries, eval_query_values
from recallbench.systems import create_system

JUDGE_FIELDS = (
    "judge_model",
    "judge_prompt",
    "llm_labels",
    "judge_failure_rate",
    "judge_unreliable",
    "judge_tokens",
    "judge_cost",
)


def _judged(failed_every: int, model: str = "m") -> Report:
    """builtin-lexical's report on the bundled dataset with the run's unjudged top 2
    labelled by a judge, every ``failed_every``-th judgment failed (as tests/test_gate_judge.py
    builds it)."""
    dataset = load_dataset("agent-memory-sample")
    run = asyncio.run(run_dataset(dataset, create_system("builtin-lexical"), 10))
    items = unjudged_pool(dataset, [run], depth=2).items
    judgments: list[Judgment[Relevance]] = [
        Judgment(None, 0.5, "timeout", "slow")
        if index % failed_every == 0
        else Judgment(Relevance(index % 4, 0.9, "r"), (index % 4) / 3, model=model, tokens_in=900)
        for index in range(len(items))
    ]
    stats = JudgeStats(asked=len(items), max_failure_rate=0.1)
    stats.failed["timeout"] = sum(1 for j in judgments if j.failed)
    summary = summarize(
        judgments, stats, model=model, provider="openai", prompt="relevance v1", params={},
        cost=0.002 * sum(1 for j in judgments if not j.failed),
    )  # fmt: skip
    judged = with_labels(dataset, items, judgments, "relevance v1")
    judged = judged.replaced(
        metadata={**judged.metadata, METADATA_KEY: summary.model_dump(mode="json")}
    )
    return build_report(judged, run, parse_measures(("ndcg@10", "recall@10")))


@pytest.fixture(scope="module")
def judged() -> Report:
    report = _judged(failed_every=1_000, model="gpt-4o-mini")
    assert report.judge is not None and not report.judge.unreliable
    return report


@pytest.fixture(scope="module")
def unreliable() -> Report:
    report = _judged(failed_every=3)
    assert report.judge is not None and report.judge.unreliable
    return report


@pytest.fixture(scope="module")
def plain() -> Report:
    dataset = load_dataset("agent-memory-sample")
    run = asyncio.run(run_dataset(dataset, create_system("builtin-lexical"), 10))
    return build_report(dataset, run, parse_measures(("ndcg@10", "recall@10")))


def _judge_of(run: StoredRun) -> dict[str, object]:
    return {name: getattr(run, name) for name in JUDGE_FIELDS}


def _history(url: str, *args: str, columns: int = 160) -> str:
    result = CliRunner().invoke(
        main, ["history", "--store", url, *args], env={"COLUMNS": str(columns)}
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_a_judged_run_round_trips_with_its_judge(
    db_url: str, judged: Report, plain: Report
) -> None:
    judge = judged.judge
    assert judge is not None
    with open_store(db_url) as store:
        stored = store.record(judged)
        without = store.record(plain)
        assert _judge_of(stored) == {
            "judge_model": "gpt-4o-mini",
            "judge_prompt": "relevance v1",
            "llm_labels": judged.labels["llm"],
            "judge_failure_rate": judge.failure_rate,
            "judge_unreliable": False,
            "judge_tokens": judge.tokens_in + judge.tokens_out,
            "judge_cost": pytest.approx(judge.cost_usd),
        }
        assert judged.labels["llm"] > 0 and judge.cost_usd > 0
        assert isinstance(stored.judge_unreliable, bool)
        assert store.get(stored.id) == stored
        assert _judge_of(without) == dict.fromkeys(JUDGE_FIELDS)
        assert {run.id: run for run in store.runs()} == {stored.id: stored, without.id: without}


def test_history_shows_the_judge_its_labels_failures_and_cost(
    db_url: str, judged: Report, unreliable: Report, plain: Report
) -> None:
    with open_store(db_url) as store:
        store.record(plain)
        first = store.record(judged)
        second = store.record(unreliable)
    # different labels, different datasets: three series, two of them judged
    assert len({first.dataset_sha256, second.dataset_sha256, plain.dataset.sha256}) == 3
    output = _history(db_url)
    assert output.count("judged runs") == 2
    lines = output.splitlines()
    good = next(line for line in lines if f"#{first.id} " in line and "gpt-4o-mini" in line)
    cells = [cell.strip() for cell in good.strip("│").split("│")]
    assert cells[1:] == [
        "gpt-4o-mini",
        "relevance v1",
        f"{first.llm_labels:,}",
        f"{first.judge_failure_rate:.1%}",
        f"{first.judge_tokens:,}",
        f"${first.judge_cost:.4f}",
    ]
    bad = next(line for line in lines if f"#{second.id} " in line and "│ m " in line)
    assert f"{second.judge_failure_rate:.1%} !" in bad  # marked unreliable
    assert "! unreliable" in output
    for run in (first, second):
        assert f"judge cost ${run.judge_cost:.4f} over 1 of 1 runs" in output
    plain_series = output[output.index(f"({plain.dataset.sha256[:8]})") :]
    assert "judge" not in plain_series.split("builtin-lexical on")[0]


def test_the_judge_table_fits_100_columns(tmp_path: Path, unreliable: Report) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        run = store.record(unreliable.model_copy(update={"judge": None}))
        long = unreliable.judge
        assert long is not None
        long = long.model_copy(update={"model": "a-very-long-model-name/" * 3 + "v1"})
        store.record(unreliable.model_copy(update={"judge": long}))
    output = _history(url, columns=100)
    assert max(len(line) for line in output.splitlines()) <= 100
    assert "a-very-long" in output and "v1" in output
    # a run with the judge's labels but no summary of the judge still counts them
    assert any(f"#{run.id} " in line and "unknown" in line for line in output.splitlines())


def test_history_without_judged_runs_says_nothing_of_a_judge(tmp_path: Path, plain: Report) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        store.record(plain)
    assert "judge" not in _history(url)


def test_a_store_from_before_the_judge_columns_migrates_in_place(
    db_url: str, judged: Report, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store made by the migrations up to m004 and a run written as that schema allowed;
    opened now, it gains the columns, keeps the run (its judge None) and records judges."""
    before = [m for m in _migrations.MIGRATIONS if m.__name__ < "m005"]
    assert [m.__name__ for m in before][-1] == "m004_llm_judgments"
    with monkeypatch.context() as patch:
        patch.setattr(_migrations, "MIGRATIONS", before)
        open_store(db_url).close()
    engine = create_store_engine(db_url)
    try:
        old = Table("eval_runs", MetaData(), autoload_with=engine)  # as m004 left it
        assert not {"judge_model", "judge_cost"} & set(old.columns.keys())
        with transaction(engine, write=True) as connection:
            row = run_row(judged, "default", "old", False, judged.created_at)
            kept = {name: value for name, value in row.items() if name in old.columns}
            key = connection.execute(old.insert(), kept).inserted_primary_key
            assert key is not None
            run_id = int(key[0])
            for table, make in (
                (eval_measures, measure_rows),
                (eval_queries, query_rows),
                (eval_query_values, value_rows),
            ):
                connection.execute(table.insert(), make(judged, run_id, "default"))
    finally:
        engine.dispose()

    with open_store(db_url) as store:
        migrated = store.get(run_id)
        assert _judge_of(migrated) == dict.fromkeys(JUDGE_FIELDS)
        assert migrated.source == "old" and migrated.means == judged.means
        assert store.query_values(run_id) == {q.id: q.values for q in judged.queries}
        new = store.record(judged)
        assert new.judge_model == "gpt-4o-mini" and new.llm_labels == judged.labels["llm"]
    with open_store(db_url) as store:
        assert store.get(new.id) == new
    engine = create_store_engine(db_url)
    try:
        with engine.connect() as connection:
            names = connection.exec_driver_sql("SELECT name FROM schema_migrations ORDER BY id")
            assert "m005_run_judge" in [name for (name,) in names]
    finally:
        engine.dispose()
    # the old run shows no judge in history; the new one does
    output = _history(db_url)
    assert f"#{new.id} " in output and not any(
        f"#{run_id} " in line for line in output.split("judged runs")[1].splitlines()
    )
