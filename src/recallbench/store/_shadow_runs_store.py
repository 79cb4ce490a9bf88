"""Shadow runs in the store: the pairs of ranked lists (control and treatment, and what
was interleaved) the MCP proxy logs for a query, and the profiles they name.

A mixin of :class:`~recallbench.store.Store` (through ``TelemetryStore``): every read and
write is confined to the store's workspace.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, or_, select

from recallbench.store._engine import transaction
from recallbench.store._statements import dialect_insert, mine
from recallbench.store._tables import shadow_runs
from recallbench.store._telemetry_rows import interleaved_json


class ShadowRunStore:
    """Shadow runs of one workspace (mixed into ``Store``)."""

    _engine: Engine
    workspace: str

    def log_shadow_run(self, run: dict[str, Any]) -> None:
        """Write one shadow run (``shadow_runs`` columns but the workspace and, when not
        given, ``created_at``): the ranked lists as JSON arrays of ids.

        Optional keys from m008: ``interleaved``, a sequence of ``(doc_id, team)`` with team
        ``"control"`` or ``"treatment"`` (what the agent saw when the two lists were
        team-draft interleaved; ValueError, located, for a malformed pair), ``session_id``,
        and ``control`` / ``treatment``, the profiles that answered. From m010:
        ``interleaved_credited``, how many leading items of ``interleaved`` a click
        credits (the rest were shown from below the depth both lists reach). From m014:
        ``query_key``, the key of the searched text (a shadow test's query unit)."""
        self.log_shadow_runs([run])

    def log_shadow_runs(self, runs: Sequence[Mapping[str, Any]]) -> None:
        """Write shadow runs as :meth:`log_shadow_run` does, all in one transaction (one
        commit, one sync to disk: the proxy writes its pairs in batches). Nothing is
        written when one of them is malformed. A run whose ``query_id`` is stored already
        in this workspace is skipped (m012: one pair per search), so writing a batch
        again stores nothing twice."""
        now = datetime.now(UTC)
        rows = []
        for run in runs:
            row = {"created_at": now, **run, "workspace_id": self.workspace}
            for side in ("control_results", "treatment_results"):
                row[side] = json.dumps(list(row[side]))
            if "interleaved" in row:
                row["interleaved"] = interleaved_json(row["interleaved"])
            rows.append(row)
        groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for row in rows:  # one executemany per set of columns (a missing key is its default)
            groups.setdefault(tuple(sorted(row)), []).append(row)
        if not groups:
            return
        with transaction(self._engine, write=True) as connection:
            # a pair is one search: one already stored under its query id (a batch written
            # again after a failure that came after its commit) is skipped
            ignore = dialect_insert(connection, shadow_runs).on_conflict_do_nothing(
                index_elements=["workspace_id", "query_id"]
            )
            for group in groups.values():
                connection.execute(ignore, group)

    def shadow_runs(
        self,
        since: datetime | None = None,
        until: datetime | None = None,
        after: datetime | None = None,
    ) -> list[dict[str, Any]]:
        """This workspace's shadow runs (with ``since <= created_at``, ``created_at <=
        until`` and ``after < created_at`` when given), oldest first: the ranked lists as
        tuples of ids, ``interleaved`` as a tuple of ``(doc_id, team)`` or None.

        The order is the rows' own: ``created_at`` (stamped by the proxy that made the
        pair), then ``query_id`` on a tie, never the row's ``id``, which says only which
        of several proxies committed first. So the sequential tests read a fleet's pairs
        in the same order as one proxy's holding the same pairs."""
        query = select(shadow_runs).where(mine(shadow_runs, self.workspace))
        if since is not None:
            query = query.where(shadow_runs.c.created_at >= since)
        if until is not None:
            query = query.where(shadow_runs.c.created_at <= until)
        if after is not None:
            query = query.where(shadow_runs.c.created_at > after)
        query = query.order_by(shadow_runs.c.created_at, shadow_runs.c.query_id)
        with transaction(self._engine) as connection:
            result = connection.execute(query)
            names = list(result.keys())
            # plain tuples zipped with the names: a mapping per row was a quarter of the
            # time of reading a million pairs
            rows = [dict(zip(names, values, strict=True)) for values in result]
        loads = json.loads
        for row in rows:
            row["control_results"] = tuple(loads(row["control_results"]))
            row["treatment_results"] = tuple(loads(row["treatment_results"]))
            shown = row["interleaved"]
            if shown is not None:
                row["interleaved"] = tuple((doc, team) for doc, team in loads(shown))
        return rows

    def shadow_query_ids(
        self, since: datetime, until: datetime, control: str, treatment: str
    ) -> set[str]:
        """Query ids of the shadow runs with ``since <= created_at <= until`` answered by
        the profiles ``control`` and ``treatment`` (a run that names none is theirs)."""
        c = shadow_runs.c
        query = select(c.query_id).where(
            mine(shadow_runs, self.workspace),
            c.created_at >= since,
            c.created_at <= until,
            or_(c.control.is_(None), c.control == control),
            or_(c.treatment.is_(None), c.treatment == treatment),
        )
        with transaction(self._engine) as connection:
            return {str(qid) for qid in connection.execute(query).scalars()}

    def shadow_profiles(self) -> set[str]:
        """The profile names this workspace's shadow runs were logged with, either side."""
        query = (
            select(shadow_runs.c.control, shadow_runs.c.treatment)
            .where(mine(shadow_runs, self.workspace))
            .distinct()
        )
        with transaction(self._engine) as connection:
            rows = connection.execute(query).all()
        return {name for row in rows for name in row if name is not None}
