"""`recallbench history` and the dashboard's history read fast, and say exactly what they
said before: outputs on a generated history (ties, missing values and rows, odd ids, runs
whose queries differ) against their fingerprints, whether the statistics are computed or
read from the store (``eval_run_statistics``), on either engine.

The fingerprints were taken from the code before the speed-up, then once more when each
run's interval came to be resampled alone (m015 keeps it per run): before, all intervals
of a series with the same number of queries were resampled stacked in one matrix product,
whose last bits depend on how many rows it has, so a run's interval moved with the runs
shown beside it (``--limit``) and, where a resampled mean ties with the observed one, by
up to a few 1e-4. Only the intervals changed then: means, changes, p-values, significance,
runs and their order stayed the same."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from click.testing import CliRunner
from sqlalchemy import func, select

from recallbench.cli import main
from recallbench.serve import _views
from recallbench.store import open_store
from recallbench.store._engine import transaction
from recallbench.store._tables import (
    eval_measures,
    eval_queries,
    eval_query_values,
    eval_run_statistics,
    eval_runs,
)

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
MEASURES = ("ndcg@10", "gm_map", "recall@10", "num_ret", "p@5", "mrr", "plugin@5")
"""Means (nDCG@10 and recall@10 with ties), a geometric mean, a total (no interval), a
measure whose values never vary, one in half the runs scored by a single query (no
spread), and one of a plugin no longer installed (no interval)."""

# sha256 of each output as the code printed it (see the module's docstring and `generate`)
EXPECTED = {
    "history": "a56f0d47fe07d1b384ca0be6666bcb84b2531315b1bd757e74e06c02c7dd3237",
    "history --runs --limit 7": "2b8ea45846f06463dbdbd07eb3a4c8f301a250945b67ebb89413522d150eacec",
    "history --system sys-b -m recall@10 -m nDCG@10": (
        "f0685c5930ee2391fad9ee01c60cf3fae080f3f9be92525ba39edc1b6019d2fb"
    ),
    "view": "ebdaafa0e1dfacd5146956c2eb3082ae0b1b7e01e136aaeb5547bad53906f257",
    "detail": "15542eeaddffa4cbd3a32212f9c80a99b22a696130226b0c25af0f23492a5523",
}


def generate(url: str) -> None:
    """Three systems on two datasets: 23, 9, 4, 1 and 2 runs; ids with gaps and out of
    time order, two runs at the same time, values rounded to two decimals (ties) or kept
    whole, NULL values, missing value rows, queries dropped and reordered between runs."""
    rng = np.random.default_rng(5)
    with open_store(url) as store, transaction(store._engine, write=True) as connection:
        series = [("sys-a", 0, 23), ("sys-b", 0, 9), ("sys-a", 1, 4), ("sys-c", 1, 1)]
        series.append(("sys-b", 1, 2))
        run_id, hour = 3, 0
        for system, dataset, count in series:
            for n in range(count):
                run_id += int(rng.integers(1, 40))
                hour += 1 if n % 5 else 0  # every fifth run shares its predecessor's time
                _run(connection, rng, run_id, system, dataset, T0 + timedelta(hours=hour))
            hour -= 30  # the next series interleaves in time


def _run(
    connection: Any,
    rng: np.random.Generator,
    run_id: int,
    system: str,
    dataset: int,
    at: datetime,
) -> None:
    queries = [f"q{i:03d}" for i in range(60)]
    if rng.random() < 0.4:  # a run that skipped some queries, in its own order
        keep = rng.permutation(60)[: int(rng.integers(40, 60))]
        queries = [queries[i] for i in keep]
    names = [m for m in MEASURES if m != "mrr" or rng.random() < 0.5]
    connection.execute(
        eval_runs.insert(),
        {
            "id": run_id,
            "workspace_id": "default",
            "system": system,
            "system_settings": "{}",
            "dataset_name": f"data-{dataset}",
            "dataset_version": "1",
            "dataset_sha256": f"{dataset + 10:064x}",
            "relevance_threshold": 1,
            "k": 10,
            "recallbench_version": "0.1",
            "created_at": at,
            "recorded_at": at,
            "accepted": run_id % 3 == 0,
            "queries": len(queries),
            "evaluated": len(queries),
            "failed": 0,
            "missing": 0,
            "no_relevant": 0,
            "rules": "{}",
        },
    )
    values: dict[str, list[float | None]] = {}
    for name in names:
        raw = rng.beta(2, 3, len(queries))
        column: list[float | None] = [
            float(round(v, 2)) if name in ("ndcg@10", "recall@10") else float(v) for v in raw
        ]
        if name == "p@5":
            column = [0.25] * len(queries)
        if name == "mrr":
            column = [None] * len(queries)
            column[0] = 0.5
        for i in np.flatnonzero(rng.random(len(queries)) < 0.1):
            column[i] = None
        values[name] = column
    connection.execute(
        eval_measures.insert(),
        [
            {
                "run_id": run_id,
                "workspace_id": "default",
                "measure": name,
                "mean": None if name == "p@5" and run_id % 4 == 0 else float(rng.random()),
                "higher_is_better": name != "num_ret",
                "position": position,
            }
            for position, name in enumerate(names)
        ],
    )
    connection.execute(
        eval_queries.insert(),
        [
            {
                "run_id": run_id,
                "workspace_id": "default",
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
            "workspace_id": "default",
            "query_id": query,
            "measure": name,
            "value": values[name][position],
        }
        for position, query in enumerate(queries)
        for name in names
        if rng.random() > 0.03  # a value row left out altogether
    ]
    connection.execute(eval_query_values.insert(), rows)


def fingerprints(url: str) -> dict[str, str]:
    out = {}
    for command in [key for key in EXPECTED if key.startswith("history")]:
        args = [*command.split()[1:], "--store", url]
        result = CliRunner().invoke(main, ["history", *args], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        out[command] = _sha(result.output)
    with open_store(url) as store:
        out["view"] = _sha(json.dumps(_views.history(store), default=str))
        runs = store.runs()
        details = [_views.run_detail(store, run.id, None) for run in runs[::5]]
        out["detail"] = _sha(json.dumps(details, default=str))
    return out


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_history_outputs_are_unchanged(db_url: str) -> None:
    """The first reading computes the statistics and keeps them; the second reads them."""
    generate(db_url)
    with open_store(db_url) as store, transaction(store._engine) as connection:
        assert (
            connection.execute(select(func.count()).select_from(eval_run_statistics)).scalar() == 0
        )
    assert fingerprints(db_url) == EXPECTED
    with open_store(db_url) as store, transaction(store._engine) as connection:
        kept = connection.execute(select(func.count()).select_from(eval_run_statistics)).scalar()
    assert kept
    assert fingerprints(db_url) == EXPECTED
    with open_store(db_url) as store, transaction(store._engine) as connection:
        again = connection.execute(select(func.count()).select_from(eval_run_statistics)).scalar()
    assert again == kept  # nothing more to compute


def test_history_loads_neither_scipy_stats_nor_the_run_command(tmp_path: Path) -> None:
    """Imports were most of the command's second: `run`'s (gates, report builder) and
    scipy.stats, which nothing of `history` uses."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    generate(url)
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from recallbench.cli import main\n"
        f"result = CliRunner().invoke(main, ['history', '--store', {url!r}])\n"
        "assert result.exit_code == 0, result.output\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert "recallbench.report._changes" in loaded
    assert not loaded & {"scipy.stats", "recallbench.cli._run", "recallbench.gates"}


def test_the_rows_percentiles_are_numpys_to_the_bit() -> None:
    """BCa's quantiles of all rows at once equal np.percentile's, row by row, with ties
    (values of one decimal), extreme levels (0 and 100) and a row holding NaN."""
    from recallbench.stats._resampling import _row_percentiles

    rng = np.random.default_rng(3)
    for trial in range(60):
        rows, n = int(rng.integers(1, 12)), int(rng.integers(1000, 2500))
        estimates = np.round(rng.random((rows, n)), 1) if trial % 2 else rng.normal(size=(rows, n))
        percents = rng.random(rows) * 100
        percents[0] = (0.0, 100.0, 2.5)[trial % 3]
        if trial % 5 == 0:
            estimates[-1, 7] = np.nan
        expected = [np.percentile(row, p) for row, p in zip(estimates, percents, strict=True)]
        found = _row_percentiles(estimates, percents)
        assert np.array_equal(found, np.array(expected), equal_nan=True)
