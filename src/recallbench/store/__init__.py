"""The history store: every evaluation run's summary and per-query values, read by the
quality gate and `recallbench history`, and the online telemetry (query log, feedback
events, judgments) read by `recallbench harvest`. SQLite by default; PostgreSQL or another
database selected by a SQLAlchemy URL.

Names are imported on first use (PEP 562): SQLAlchemy loads only when a store is opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recallbench._lazy import lazy_exports

if TYPE_CHECKING:
    from recallbench.store._engine import default_store_url
    from recallbench.store._identity import NotAStoreError
    from recallbench.store._model import StoredRun
    from recallbench.store._store import Store, StoreInit, check_store, init_store, open_store
    from recallbench.store._telemetry import (
        FEEDBACK_KINDS,
        JUDGMENT_SOURCES,
        FeedbackEvent,
        Judgment,
        QueryLogEntry,
    )
    from recallbench.store._telemetry_rows import (
        FeatureFlag,
        SessionOutcome,
        ShadowDecision,
        ShadowTest,
    )

__all__ = [
    "FEEDBACK_KINDS",
    "JUDGMENT_SOURCES",
    "FeatureFlag",
    "FeedbackEvent",
    "Judgment",
    "NotAStoreError",
    "QueryLogEntry",
    "SessionOutcome",
    "ShadowDecision",
    "ShadowTest",
    "Store",
    "StoreInit",
    "StoredRun",
    "check_store",
    "default_store_url",
    "init_store",
    "open_store",
]

__getattr__ = lazy_exports(
    __name__, ("_engine", "_identity", "_model", "_store", "_telemetry", "_telemetry_rows"), __all__
)
