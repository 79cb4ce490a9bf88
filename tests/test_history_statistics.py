"""Each run's statistics kept in the store (m015 ``eval_run_statistics``): read back, they
equal what a trend computes from scratch, to the bit; a recorded run keeps its own; a store
without them (or one that cannot be written) shows the same trend."""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, func, select
from sqlalchemy.exc import OperationalError

from recallbench.cli import main
from recallbench.report import Report
from recallbench.report._changes import (
    SeriesStatistics,
    change_test,
    run_interval,
    series_statistics,
)
from recallbench.report._intervals import SMALL_N, IntervalSettings
from recallbench.report._run_statistics import (
    history_scales,
    record_run,
    stored_series_statistics,
)
from recallbench.store import Store, open_store
from recallbench.store._engine import transaction
from recallbench.store._tables import (
    eval_measures,
    eval_queries,
    eval_query_values,
    eval_run_statistics,
    eval_runs,
)

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
MEASURES = ("ndcg@10", "gm_map", "num_ret", "plugin@5")
"""A mean, a geometric mean, a total (no interval) and a measure of no installed plugin."""
SCALES = {"ndcg@10": "mean", "gm_map": "geometric", "num_ret": "a total: no interval"}


def insert_run(
    store: Store,
    run_id: int,
    at: datetime,
    values: dict[str, list[float | None]],
    queries: Sequence[str],
    system: str = "sys",
) -> None:
    """A run of ``queries`` (in this order) with these values per measure; a value of
    ``math.inf`` leaves the query's row of that measure out altogether."""
    with transaction(store._engine, write=True) as connection:
        connection.execute(
            eval_runs.insert(),
            {
                "id": run_id,
                "workspace_id": store.workspace,
                "system": system,
                "system_settings": "{}",
                "dataset_name": "data",
                "dataset_version": "1",
                "dataset_sha256": "ab" * 32,
                "relevance_threshold": 1,
                "k": 10,
                "recallbench_version": "0.1",
                "created_at": at,
                "recorded_at": at,
                "accepted": False,
                "queries": len(queries),
                "evaluated": len(queries),
                "failed": 0,
                "missing": 0,
                "no_relevant": 0,
                "rules": "{}",
            },
        )
        connection.execute(
            eval_measures.insert(),
            [
                {
                    "run_id": run_id,
                    "workspace_id": store.workspace,
                    "measure": name,
                    "mean": 0.5,
                    "higher_is_better": True,
                    "position": position,
                }
                for position, name in enumerate(values)
            ],
        )
        connection.execute(
            eval_queries.insert(),
            [
                {
                    "run_id": run_id,
                    "workspace_id": store.workspace,
                    "query_id": query,
                    "position": position,
                    "status": "ok",
                }
                for position, query in enumerate(queries)
            ],
        )
        rows = [
            {
                "run_id": run_id,
                "workspace_id": store.workspace,
                "query_id": query,
                "measure": name,
                "value": column[position],
            }
            for name, column in values.items()
            for position, query in enumerate(queries)
            if column[position] != math.inf
        ]
        if rows:
            connection.execute(eval_query_values.insert(), rows)


def kept(store: Store) -> int:
    with transaction(store._engine) as connection:
        count = connection.execute(
            select(func.count()).where(eval_run_statistics.c.workspace_id == store.workspace)
        )
        return int(count.scalar_one())


def same(a: SeriesStatistics, b: SeriesStatistics) -> bool:
    """Equal to the bit (a NaN equals a NaN)."""
    return repr(a) == repr(b)


# a value: one of few (ties, and means that tie with resampled ones), NULL, or no row
VALUE = st.one_of(
    st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, 0.33]),
    st.floats(0, 1, allow_nan=False).map(lambda v: round(v, 2)),
    st.just(None),
    st.just(math.inf),
)


@st.composite
def series_of_runs(draw: st.DrawFn) -> list[tuple[list[str], dict[str, list[float | None]]]]:
    """2-6 runs over subsets of 40 queries in their own orders, each with some measures."""
    runs = []
    for _ in range(draw(st.integers(2, 6))):
        pool = [f"q{i:02d}" for i in range(40)]
        queries = draw(st.permutations(pool))[: draw(st.integers(1, 40))]
        names = draw(st.lists(st.sampled_from(MEASURES), min_size=1, max_size=4, unique=True))
        values = {name: [draw(VALUE) for _ in queries] for name in names}
        runs.append((list(queries), values))
    return runs


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(drawn=series_of_runs(), shown=st.integers(1, 6), seed=st.integers(0, 3))
def test_kept_statistics_equal_computed_ones_to_the_bit(
    db_url: str, drawn: list[Any], shown: int, seed: int
) -> None:
    """Computed and kept on the first reading, read back on the second: both equal the
    trend computed from scratch, and so does the trend of fewer runs (a run's statistics do
    not depend on the runs shown beside it) and every run's own interval and change."""
    with open_store(db_url, workspace=uuid.uuid4().hex) as store:
        base = _next_id(store)
        for offset, (queries, values) in enumerate(drawn):
            insert_run(store, base + offset, T0 + timedelta(hours=offset), values, queries)
        runs = store.runs()[::-1]  # oldest first
        scales: dict[str, Any] = {**SCALES, **history_scales(["plugin@5"])}
        options = IntervalSettings(resamples=1000, seed=seed)
        arrays = store.query_value_arrays(runs)
        expected = series_statistics(arrays, scales, options)
        (first,) = stored_series_statistics(store, [runs], [scales], options)
        written = kept(store)
        assert written == len(runs) * len(scales)
        (second,) = stored_series_statistics(store, [runs], [scales], options)
        assert kept(store) == written
        assert same(first, expected) and same(second, expected)
        tail = runs[-shown:]
        (fewer,) = stored_series_statistics(store, [tail], [scales], options)
        assert same(fewer, series_statistics(arrays[-shown:], scales, options))
        for measure, scale in scales.items():
            assert fewer.intervals[measure] == expected.intervals[measure][-len(tail) :]
            for index, array in enumerate(arrays):
                alone = run_interval(array, measure, scale, options)
                assert repr(alone) == repr(expected.intervals[measure][index])
                if index:
                    change = expected.changes[measure][index - 1]
                    raw = change_test(arrays[index - 1], array, measure, scale, seed)
                    assert repr((raw.n, raw.delta, raw.p)) == repr(
                        (change.n, change.delta, change.p)
                    )


def _next_id(store: Store) -> int:
    with transaction(store._engine) as connection:
        return (
            int(connection.execute(select(func.coalesce(func.max(eval_runs.c.id), 0))).scalar_one())
            + 1
        )


def history(url: str, *args: str) -> str:
    result = CliRunner().invoke(
        main, ["history", "--store", url, "--runs", *args], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def report() -> Report:
    from recallbench.datasets import load_dataset
    from recallbench.measures import parse_measures
    from recallbench.report import build_report
    from recallbench.runner import run_dataset
    from recallbench.systems import create_system

    dataset = load_dataset("agent-memory-sample")
    run = asyncio.run(run_dataset(dataset, create_system("builtin-lexical"), k=20))
    return build_report(dataset, run, parse_measures(["ndcg@10", "mrr@10", "gm_map"]))


def made_at(report: Report, hours: int, shift: float = 0.0) -> Report:
    """The report made ``hours`` after T0, every scored nDCG@10 moved by ``shift``."""
    queries = [
        q.model_copy(
            update={"values": {**q.values, "ndcg@10": min(1.0, q.values["ndcg@10"] + shift)}}
        )
        if q.values["ndcg@10"] is not None
        else q
        for q in report.queries
    ]
    return report.model_copy(update={"queries": queries, "created_at": T0 + timedelta(hours=hours)})


def rows(store: Store) -> list[tuple[Any, ...]]:
    s = eval_run_statistics.c
    with transaction(store._engine) as connection:
        return [
            tuple(row)
            for row in connection.execute(
                select(s.run_id, s.measure, s.previous_run_id, s.change_n).order_by(
                    s.run_id, s.measure
                )
            )
        ]


def forget(store: Store) -> None:
    with transaction(store._engine, write=True) as connection:
        connection.execute(delete(eval_run_statistics))


def test_a_recorded_run_keeps_its_statistics(db_url: str, report: Report) -> None:
    """Recording a run keeps its interval of each measure and the test of its change from
    the run before it; `history` then reads them all, and says what it says from a store
    without them (which it fills)."""
    with open_store(db_url) as store:
        first = record_run(store, made_at(report, 0))
        second = record_run(store, made_at(report, 1, 0.1))
        measures = sorted(first.means)
        assert rows(store) == [
            *[(first.id, m, None, None) for m in measures],
            *[(second.id, m, first.id, report.intervals[m].n) for m in measures],
        ]
    shown = history(db_url)
    with open_store(db_url) as store:
        assert len(rows(store)) == 2 * len(measures)  # read, nothing computed
        forget(store)
    assert history(db_url) == shown  # computed from the values
    with open_store(db_url) as store:
        assert len(rows(store)) == 2 * len(measures)  # and kept
        runs = store.runs()[::-1]
        expected = series_statistics(store.query_value_arrays(runs), history_scales(measures))
        assert same(
            stored_series_statistics(store, [runs], [history_scales(measures)])[0], expected
        )


def test_the_run_command_keeps_its_runs_statistics(tmp_path: Path) -> None:
    """`recallbench run` records through :func:`record_run` (as do bench, merge and the
    baseline's accept): `history` finds every statistic it shows kept."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    for name in ("one", "two"):
        args = ["run", "--system", "builtin-lexical", "-m", "ndcg@10", "-m", "mrr@10"]
        result = CliRunner().invoke(main, [*args, "--out", str(tmp_path / name), "--store", url])
        assert result.exit_code == 0, result.output
    with open_store(url) as store:
        first, second = store.runs()[::-1]
        kept_rows = rows(store)
        assert kept_rows == [
            (first.id, "mrr@10", None, None),
            (first.id, "ndcg@10", None, None),
            (second.id, "mrr@10", first.id, kept_rows[2][3]),
            (second.id, "ndcg@10", first.id, kept_rows[3][3]),
        ]
        assert kept_rows[3][3] > 0  # the queries both runs scored
    shown = history(url)
    with open_store(url) as store:
        assert rows(store) == kept_rows  # nothing computed
        forget(store)
    assert history(url) == shown


def test_a_run_recorded_between_two_is_the_later_ones_predecessor(
    db_url: str, report: Report
) -> None:
    """A change kept from another predecessor (a run recorded later but made earlier came
    between them) is tested again from the run now before it."""
    with open_store(db_url) as store:
        older = record_run(store, made_at(report, 0))
        newer = record_run(store, made_at(report, 4, 0.1))
        between = record_run(store, made_at(report, 2, 0.3))
        assert {r[2] for r in rows(store) if r[0] == newer.id} == {older.id}  # stale now
        scales = history_scales(list(older.means))
        runs = store.runs()[::-1]
        assert [run.id for run in runs] == [older.id, between.id, newer.id]
        (found,) = stored_series_statistics(store, [runs], [scales])
        assert same(found, series_statistics(store.query_value_arrays(runs), scales))
        assert {r[2] for r in rows(store) if r[0] == newer.id} == {between.id}
        up, down = found.changes["ndcg@10"]  # +0.3 then back to +0.1 (capped at 1)
        assert up.delta is not None and down.delta is not None and up.delta > 0 > down.delta


def test_a_store_that_cannot_keep_them_still_shows_the_trend(
    db_url: str, report: Report, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_store(db_url) as store:
        store.record(made_at(report, 0))  # recorded without statistics
        store.record(made_at(report, 1, 0.1))
    expected = history(db_url)
    with open_store(db_url) as store:
        forget(store)

    def refuse(*args: object) -> None:
        raise OperationalError("INSERT", {}, Exception("attempt to write a readonly database"))

    monkeypatch.setattr(Store, "save_run_statistics", refuse)
    assert history(db_url) == expected
    with open_store(db_url) as store:
        assert rows(store) == []


def test_a_read_only_sqlite_store_still_shows_the_trend(tmp_path: Path, report: Report) -> None:
    path = tmp_path / "store.db"
    with open_store(f"sqlite:///{path}") as store:
        store.record(made_at(report, 0))
        store.record(made_at(report, 1, 0.1))
    expected = history(f"sqlite:///{path}")
    with open_store(f"sqlite:///{path}") as store:
        forget(store)
    read_only = f"sqlite:///file:{path}?mode=ro&uri=true"
    assert history(read_only) == expected
    with open_store(f"sqlite:///{path}") as store:
        assert rows(store) == []


def test_the_dashboard_pages_all_runs(db_url: str) -> None:
    """The home page lists a page of runs (newest first), its trends all series."""
    from recallbench.serve import _views

    with open_store(db_url) as store:
        for index in range(_views.RUNS_PAGE + 3):
            values = {"ndcg@10": [0.1 * (index % 7), 0.5, 0.25]}
            insert_run(
                store,
                index + 1,
                T0 + timedelta(hours=index),
                values,
                ["a", "b", "c"],
                system=f"s{index % 2}",
            )
        first = _views.history(store)
        second = _views.history(store, 1)
        beyond = _views.history(store, 2)
    newest = list(range(_views.RUNS_PAGE + 3, 0, -1))
    assert [r["id"] for r in first["runs"]] == newest[: _views.RUNS_PAGE]
    assert [r["id"] for r in second["runs"]] == newest[_views.RUNS_PAGE :]
    assert beyond["runs"] == [] and first["pages"] == second["pages"] == 2
    assert first["series"] == second["series"]
    assert [s["total"] for s in first["series"]] == [27, 26]
    assert [len(s["runs"]) for s in first["series"]] == [_views.SERIES_RUNS] * 2


def test_small_n_is_the_reports() -> None:
    from recallbench.report._model import SMALL_N as REPORT_SMALL_N

    assert SMALL_N == REPORT_SMALL_N


def test_history_from_kept_statistics_loads_neither_scipy_nor_the_report_models(
    tmp_path: Path, report: Report
) -> None:
    """With every statistic kept, `history` only reads: no scipy (the bootstrap's), no
    pydantic models of the report (its imports were a fifth of the command's time)."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        record_run(store, made_at(report, 0))
        record_run(store, made_at(report, 1, 0.1))
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from recallbench.cli import main\n"
        f"result = CliRunner().invoke(main, ['history', '--runs', '--store', {url!r}])\n"
        "assert result.exit_code == 0, result.output\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert "recallbench.report._run_statistics" in loaded
    assert not {name for name in loaded if name.split(".")[0] in ("scipy", "pydantic")}
    assert "recallbench.report._model" not in loaded
