"""The online telemetry half of the store: the query log, feedback events and judgments
that the SDK logger and the MCP proxy write and ``recallbench harvest`` reads, the shadow
runs, tests, feature flags and session outcomes of online experiments, and the retention
that keeps them from growing without end.

A mixin of :class:`~recallbench.store.Store` (kept apart so that each file stays small),
made of one mixin per concept: the query log, feedback and judgments
(:mod:`~recallbench.store._query_log_store`), shadow runs
(:mod:`~recallbench.store._shadow_runs_store`), shadow tests and their decisions
(:mod:`~recallbench.store._shadow_tests_store`), their checkpoints
(:mod:`~recallbench.store._shadow_checkpoints_store`), feature flags
(:mod:`~recallbench.store._flags_store`), session outcomes
(:mod:`~recallbench.store._sessions_store`), retention and row counts
(:mod:`~recallbench.store._retention`). Every read and write is confined to the store's
workspace.
"""

from __future__ import annotations

from sqlalchemy import Engine

from recallbench.store._flags_store import FlagStore
from recallbench.store._query_log_store import QueryLogStore
from recallbench.store._retention import RetentionStore
from recallbench.store._sessions_store import SessionStore
from recallbench.store._shadow_checkpoints_store import ShadowCheckpointStore
from recallbench.store._shadow_runs_store import ShadowRunStore
from recallbench.store._shadow_tests_store import ShadowTestStore


class TelemetryStore(
    QueryLogStore,
    ShadowRunStore,
    ShadowTestStore,
    ShadowCheckpointStore,
    FlagStore,
    SessionStore,
    RetentionStore,
):
    """Query log, feedback and judgments, shadow runs and tests, feature flags and session
    outcomes of one workspace (mixed into ``Store``)."""

    _engine: Engine
    url: str
    workspace: str
