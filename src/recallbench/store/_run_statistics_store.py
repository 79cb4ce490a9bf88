"""Each run's statistics as `history` shows them (m015 ``eval_run_statistics``), kept so that
a trend of thousands of runs is read rather than resampled.

The store keeps what it is given and knows nothing of how it was computed: the report layer
(``report._run_statistics``) computes a run's interval and the test of its change, names
the computation in ``settings`` and writes the rows here. A mixin of
:class:`~recallbench.store.Store`: every read and write is confined to the store's
workspace.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from sqlalchemy import Engine, select

from recallbench.store._engine import transaction
from recallbench.store._rows import chunks
from recallbench.store._statements import dialect_insert
from recallbench.store._tables import eval_run_statistics


@dataclass(frozen=True, slots=True)
class RunStatistics:
    """One run's statistics of one measure, made as ``settings`` says."""

    run_id: int
    measure: str
    settings: str
    """The computation's version, the measure's scale and the interval's and test's
    settings, as the report layer writes them: a row is read only for the same text."""
    n: int
    """The interval: the run's queries with a value, its bounds (None: no interval, and
    ``reason`` why), whether n is too small for the interval to be trusted."""
    low: float | None
    high: float | None
    small: bool
    reason: str | None
    previous_run_id: int | None = None
    """The run the change into this one was tested from; None: no change stored."""
    change_n: int | None = None
    """Queries both runs scored, the mean of their differences and the raw p-value."""
    change_delta: float | None = None
    change_p: float | None = None


_FIELDS = [field.name for field in fields(RunStatistics)]
_KEY = ("run_id", "measure", "settings")


class RunStatisticsStore:
    """The cached statistics of one workspace's runs (mixed into ``Store``)."""

    _engine: Engine
    workspace: str

    def run_statistics(
        self, run_ids: Sequence[int], settings: Collection[str]
    ) -> list[RunStatistics]:
        """The stored statistics of these runs made with any of ``settings``, in no order."""
        if not run_ids or not settings:
            return []
        s = eval_run_statistics.c
        columns = [s[name] for name in _FIELDS]
        found: list[RunStatistics] = []
        with transaction(self._engine) as connection:
            for part in chunks(list(run_ids)):
                rows = connection.execute(
                    select(*columns).where(
                        s.run_id.in_(part),
                        s.workspace_id == self.workspace,
                        s.settings.in_(sorted(settings)),
                    )
                )
                found += [_statistics(*row) for row in rows.cursor.fetchall()]  # raw rows
        return found

    def save_run_statistics(self, rows: Sequence[RunStatistics]) -> None:
        """Store ``rows`` in one transaction: a row replaces the stored one of its run,
        measure and settings when it holds a change, and is otherwise kept only when there
        was none (an interval alone never erases a stored change). Rows of runs not in this
        workspace are an error of the caller (the run's key must exist)."""
        with_change = [self._row(row) for row in rows if row.previous_run_id is not None]
        without = [self._row(row) for row in rows if row.previous_run_id is None]
        if not rows:
            return
        with transaction(self._engine, write=True) as connection:
            if with_change:
                statement = dialect_insert(connection, eval_run_statistics)
                replace = {name: statement.excluded[name] for name in _FIELDS if name not in _KEY}
                connection.execute(
                    statement.on_conflict_do_update(index_elements=list(_KEY), set_=replace),
                    with_change,
                )
            if without:
                statement = dialect_insert(connection, eval_run_statistics)
                connection.execute(
                    statement.on_conflict_do_nothing(index_elements=list(_KEY)), without
                )

    def _row(self, row: RunStatistics) -> dict[str, object]:
        return {**asdict(row), "workspace_id": self.workspace}


def _statistics(*row: Any) -> RunStatistics:
    """A raw row (SQLite's booleans are 0 and 1) as statistics."""
    fields_of = dict(zip(_FIELDS, row, strict=True))
    return RunStatistics(**{**fields_of, "small": bool(fields_of["small"])})
