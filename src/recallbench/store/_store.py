"""The history store: every evaluation run's summary and per-query values, by workspace.

The quality gate reads it for rolling baselines and paired tests against earlier runs;
``recallbench history`` reads it for trends. One class over SQLAlchemy Core serves SQLite
and PostgreSQL; the online telemetry (query log, feedback, judgments) comes from the
``TelemetryStore`` mixin, a team's labels and their history from ``AnnotationStore``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    RowMapping,
    false,
    func,
    or_,
    select,
    true,
)
from sqlalchemy.exc import SQLAlchemyError

from recallbench.core._errors import ConfigError
from recallbench.store._annotations_store import AnnotationStore
from recallbench.store._engine import (
    create_store_engine,
    default_store_url,
    display_url,
    transaction,
)
from recallbench.store._identity import Found, identify, refuse_foreign
from recallbench.store._migrate import migrate
from recallbench.store._model import StoredRun
from recallbench.store._rows import (
    chunks,
    measure_rows,
    query_rows,
    run_row,
    stored_run,
    value_rows,
)
from recallbench.store._run_statistics_store import RunStatisticsStore
from recallbench.store._tables import eval_measures, eval_queries, eval_query_values, eval_runs
from recallbench.store._telemetry_store import TelemetryStore

if TYPE_CHECKING:
    from recallbench.report import Report

FloatArray = NDArray[np.float64]

SHA_PREFIX_MIN = 6
"""Shortest dataset fingerprint prefix ``runs(dataset=...)`` accepts."""
_HEX = frozenset("0123456789abcdef")


def open_store(url: str | None = None, workspace: str = "default") -> Store:
    """Open (creating and migrating when needed) the store at ``url``, default
    :func:`default_store_url`. ConfigError when the URL is bad or the database unusable;
    NotAStoreError, with nothing written, when the database holds tables of its own and is
    not a recallbench store (see ``_identity``; :func:`init_store` adds a store to it)."""
    return _open(url, workspace, init=False).store


def init_store(url: str | None = None) -> StoreInit:
    """Make the database at ``url`` a store (``recallbench store init``): as
    :func:`open_store`, but a database holding other tables gets recallbench's beside them,
    unless one of their names is taken (NotAStoreError). Says what it found and did."""
    opened = _open(url, "default", init=True)
    opened.store.close()
    return opened


@dataclass(frozen=True)
class StoreInit:
    """A store opened: what the database held before and the migrations applied."""

    store: Store
    found: Found
    applied: list[str]


def _open(url: str | None, workspace: str, init: bool) -> StoreInit:
    url = url or default_store_url()
    if not workspace:
        raise ConfigError("the history store's workspace must not be empty")
    shown = display_url(url)
    engine: Engine | None = None
    try:
        probe = create_store_engine(url, probe=True)
        try:
            with transaction(probe) as connection:
                found = identify(connection)
        finally:
            probe.dispose()
        refuse_foreign(found, shown, init)
        engine = create_store_engine(url)
        applied = migrate(engine)
    except (SQLAlchemyError, OSError) as error:
        if engine is not None:
            engine.dispose()
        reason = getattr(error, "orig", None) or error
        raise ConfigError(f"cannot open the history store {shown}: {reason}") from None
    except BaseException:
        if engine is not None:
            engine.dispose()
        raise
    return StoreInit(Store(engine, shown, workspace), found, applied)


def check_store(url: str | None = None, workspace: str = "default") -> str:
    """Open the store at ``url`` and close it again, so that a bad URL or an unreachable
    database stops a command before its work (a run) rather than after it. Returns the URL,
    password masked; ConfigError as :func:`open_store`."""
    with open_store(url, workspace) as store:
        return store.url


class Store(TelemetryStore, AnnotationStore, RunStatisticsStore):
    """Runs and telemetry recorded in one workspace of a store. Use as a context manager,
    or ``close()``."""

    def __init__(self, engine: Engine, url: str, workspace: str) -> None:
        self._engine = engine
        self.url = url
        """The store's URL, password masked."""
        self.workspace = workspace

    def record(
        self, report: Report, source: str | None = None, accepted: bool = False
    ) -> StoredRun:
        """Store ``report``: the run, its measure means and every query's values, all in
        one transaction (a crash leaves no half-recorded run)."""
        now = datetime.now(UTC)
        with transaction(self._engine, write=True) as connection:
            row = run_row(report, self.workspace, source, accepted, now)
            result = connection.execute(eval_runs.insert(), row)
            key = result.inserted_primary_key
            if key is None:  # pragma: no cover - a single-row insert always has one
                raise RuntimeError("the database returned no id for the new run")
            run_id = int(key[0])
            for table, rows in (
                (eval_measures, measure_rows(report, run_id, self.workspace)),
                (eval_queries, query_rows(report, run_id, self.workspace)),
                (eval_query_values, value_rows(report, run_id, self.workspace)),
            ):
                if rows:
                    connection.execute(table.insert(), rows)  # executemany
            return self._get(connection, run_id)

    def accept(self, run_id: int) -> StoredRun:
        """Mark a run as accepted (a baseline candidate). Accepting it again keeps the time
        of its first acceptance."""
        with transaction(self._engine, write=True) as connection:
            connection.execute(
                eval_runs.update()
                .where(self._mine(run_id), eval_runs.c.accepted == false())
                .values(accepted=True, accepted_at=datetime.now(UTC))
            )
            return self._get(connection, run_id)

    def get(self, run_id: int) -> StoredRun:
        """The run with this id in this workspace; ConfigError when there is none."""
        with transaction(self._engine) as connection:
            return self._get(connection, run_id)

    def runs(
        self,
        system: str | None = None,
        dataset: str | None = None,
        accepted: bool | None = None,
        limit: int | None = None,
        per_series: int | None = None,
        offset: int = 0,
    ) -> list[StoredRun]:
        """Runs of this workspace, newest first (report time, then id).

        ``dataset`` matches a dataset name, or a prefix of at least six hex digits of its
        sha256 fingerprint. ``per_series``: only the newest runs of each series (one
        system on one dataset fingerprint), counted after the other filters. ``offset``:
        the first runs left out (a page of ``limit`` runs)."""
        query = select(eval_runs).where(eval_runs.c.workspace_id == self.workspace)
        if system is not None:
            query = query.where(eval_runs.c.system == system)
        if dataset is not None:
            query = query.where(_dataset_matches(dataset))
        if accepted is not None:
            query = query.where(eval_runs.c.accepted == (true() if accepted else false()))
        newest = (eval_runs.c.created_at.desc(), eval_runs.c.id.desc())
        if per_series is not None:
            # a trend shows a series' newest runs: reading thousands of older ones with
            # their measures would take longer than the statistics of the shown ones
            rank = func.row_number().over(
                partition_by=(eval_runs.c.system, eval_runs.c.dataset_sha256), order_by=newest
            )
            ranked = query.add_columns(rank.label("rank_in_series")).subquery()
            query = select(*(ranked.c[c.name] for c in eval_runs.c)).where(
                ranked.c.rank_in_series <= per_series
            )
            newest = (ranked.c.created_at.desc(), ranked.c.id.desc())
        query = query.order_by(*newest)
        if limit is not None:
            query = query.limit(limit)
        if offset:
            query = query.offset(offset)
        with transaction(self._engine) as connection:
            rows = connection.execute(query).mappings().all()
            measures = self._measures(connection, [row["id"] for row in rows])
        return [stored_run(row, measures.get(row["id"], [])) for row in rows]

    def series_sizes(self) -> dict[tuple[str, str], int]:
        """(system, dataset fingerprint) -> the number of runs of that series."""
        r = eval_runs.c
        query = (
            select(r.system, r.dataset_sha256, func.count())
            .where(r.workspace_id == self.workspace)
            .group_by(r.system, r.dataset_sha256)
        )
        with transaction(self._engine) as connection:
            rows = connection.execute(query).all()
        return {(system, sha): count for system, sha, count in rows}

    def query_values(self, run_id: int) -> dict[str, dict[str, float | None]]:
        """Query id -> {measure -> value, None when left out}, in the dataset's order."""
        with transaction(self._engine) as connection:
            names = list(self._get(connection, run_id).means)
            queries = connection.execute(
                select(eval_queries.c.query_id)
                .where(eval_queries.c.run_id == run_id)
                .order_by(eval_queries.c.position)
            ).scalars()
            values: dict[str, dict[str, float | None]] = {
                query_id: dict.fromkeys(names) for query_id in queries
            }
            rows = connection.execute(
                select(
                    eval_query_values.c.query_id,
                    eval_query_values.c.measure,
                    eval_query_values.c.value,
                ).where(eval_query_values.c.run_id == run_id)
            )
            for query_id, measure, value in rows:
                values[query_id][measure] = value
        return values

    def query_values_of(
        self, runs: Sequence[StoredRun]
    ) -> list[dict[str, dict[str, float | None]]]:
        """:meth:`query_values` of each of ``runs`` (runs of this workspace, as
        :meth:`runs` returns them), in a few statements for all of them rather than three
        per run: a trend reads dozens of runs of a thousand values each."""
        found: dict[int, dict[str, dict[str, float | None]]] = {}
        names = {run.id: list(run.means) for run in runs}
        q, v = eval_queries.c, eval_query_values.c
        with transaction(self._engine) as connection:
            for part in chunks(list(names)):
                queries = connection.execute(
                    select(q.run_id, q.query_id)
                    .where(q.run_id.in_(part), q.workspace_id == self.workspace)
                    .order_by(q.run_id, q.position)
                ).all()  # fetchall: far faster than a fetch per row on psycopg
                for run_id, query_id in queries:
                    run = found.get(run_id)
                    if run is None:
                        run = found[run_id] = {}
                    run[query_id] = dict.fromkeys(names[run_id])
                rows = connection.execute(
                    select(v.run_id, v.query_id, v.measure, v.value).where(
                        v.run_id.in_(part), v.workspace_id == self.workspace
                    )
                ).all()
                for run_id, query_id, measure, value in rows:
                    found[run_id][query_id][measure] = value
        return [found.get(run.id, {}) for run in runs]

    def query_value_arrays(self, runs: Sequence[StoredRun]) -> list[QueryValueArrays]:
        """The per-query values of each of ``runs`` (runs of this workspace, as :meth:`runs`
        returns them) as arrays: what :meth:`query_values_of` holds, read in two statements
        for all of them and without a Python object per value, for a trend's hundreds of
        thousands of values."""
        ids = [run.id for run in runs]
        queries: dict[int, list[str]] = {run_id: [] for run_id in ids}
        positions: dict[int, list[int]] = {run_id: [] for run_id in ids}
        q, v = eval_queries.c, eval_query_values.c
        rows: list[tuple[int, int, str, float | None]] = []
        with transaction(self._engine) as connection:
            for part in chunks(ids):
                found = connection.execute(
                    select(q.run_id, q.query_id, q.position)
                    .where(q.run_id.in_(part), q.workspace_id == self.workspace)
                    .order_by(q.run_id, q.position)
                )
                for run_id, query_id, position in found.cursor.fetchall():  # raw: no Rows
                    queries[run_id].append(query_id)
                    positions[run_id].append(position)
                values = connection.execute(
                    select(v.run_id, q.position, v.measure, v.value)
                    .join(eval_queries, (q.run_id == v.run_id) & (q.query_id == v.query_id))
                    .where(v.run_id.in_(part), v.workspace_id == self.workspace)
                )
                rows += values.cursor.fetchall()
        return _value_arrays(ids, queries, positions, rows)

    def close(self) -> None:
        """Release the database connections."""
        self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.url!r}, workspace={self.workspace!r})"

    def _mine(self, run_id: int) -> ColumnElement[bool]:
        return (eval_runs.c.id == run_id) & (eval_runs.c.workspace_id == self.workspace)

    def _get(self, connection: Connection, run_id: int) -> StoredRun:
        row = connection.execute(select(eval_runs).where(self._mine(run_id))).mappings().first()
        if row is None:
            raise ConfigError(
                f"no run {run_id} in workspace {self.workspace!r} of the history store "
                f"{self.url} (see `recallbench history`)"
            )
        return stored_run(row, self._measures(connection, [run_id]).get(run_id, []))

    def _measures(self, connection: Connection, run_ids: list[int]) -> dict[int, list[RowMapping]]:
        found: dict[int, list[RowMapping]] = {}
        for part in chunks(run_ids):
            rows = connection.execute(
                select(eval_measures)
                .where(eval_measures.c.run_id.in_(part))
                .order_by(eval_measures.c.run_id, eval_measures.c.position)
            ).mappings()
            for row in rows:
                found.setdefault(row["run_id"], []).append(row)
        return found


@dataclass(frozen=True, slots=True)
class QueryValueArrays:
    """One run's per-query values: its queries in the dataset's order and, per measure
    (those of its means and any other with values), an array of a value per query, NaN
    where the query has none (the store keeps no NaN: ``finite`` makes it NULL)."""

    queries: list[str]
    values: dict[str, FloatArray]


def _value_arrays(
    ids: list[int],
    queries: dict[int, list[str]],
    positions: dict[int, list[int]],
    rows: list[tuple[int, int, str, float | None]],
) -> list[QueryValueArrays]:
    """(run id, query position, measure, value) rows, in any order, as each run's arrays;
    ``queries`` and ``positions`` of each run in position order."""
    if not rows:
        return [QueryValueArrays(queries[run_id], {}) for run_id in ids]
    # one column at a time (zip(*rows) is far slower on hundreds of thousands of rows)
    names = list(dict.fromkeys([row[2] for row in rows]))
    codes = {name: code for code, name in enumerate(names)}
    measure = np.array([codes[row[2]] for row in rows], dtype=np.int64)
    run = np.array([row[0] for row in rows], dtype=np.int64)
    order = np.argsort(run, kind="stable")
    run, place = run[order], np.array([row[1] for row in rows], dtype=np.int64)[order]
    value = np.array([row[3] for row in rows], dtype=np.float64)[order]  # None becomes NaN
    measure = measure[order]
    wanted = np.array(ids, dtype=np.int64)
    starts, ends = np.searchsorted(run, wanted), np.searchsorted(run, wanted, side="right")
    out = []
    for run_id, start, end in zip(ids, starts, ends, strict=True):
        n = len(queries[run_id])
        where = place[start:end]
        if positions[run_id] != list(range(n)):  # recorded positions are 0..n-1; else ranks
            where = np.searchsorted(np.array(positions[run_id], dtype=np.int64), where)
        grid = np.full((len(names), n), np.nan)
        grid[measure[start:end], where] = value[start:end]
        present = np.unique(measure[start:end])
        out.append(QueryValueArrays(queries[run_id], {names[m]: grid[m] for m in present}))
    return out


def _dataset_matches(dataset: str) -> ColumnElement[bool]:
    by_name = eval_runs.c.dataset_name == dataset
    prefix = dataset.lower()
    if len(prefix) >= SHA_PREFIX_MIN and set(prefix) <= _HEX:
        return or_(by_name, eval_runs.c.dataset_sha256.startswith(prefix, autoescape=True))
    return by_name
