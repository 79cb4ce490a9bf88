"""Online telemetry from inside a memory system: log each search, what the agent did with
the results and validations, to a recallbench store, without slowing the search down.

    from recallbench.telemetry import get_logger

    telemetry = get_logger()  # the store at $RECALLBENCH_STORE, or the default SQLite file
    query_id = telemetry.log_search("where do I live?", ["m1", "m7"], session_id="s1")
    telemetry.log_feedback(query_id, "read_after_search", doc_id="m7", rank=2)

Calls only queue records (microseconds); a background thread writes them in batches, and
a clean interpreter exit (or SIGTERM, when the program left it at its default) writes what
is still queued; SIGKILL or a crash loses it. Records the queue refused are counted in
``stats.dropped`` / ``overflowed``, records a close or the exit could not write in
``stats.lost``; none is lost without a count and a warning. ``store_texts=False`` and
``redact=[...]`` keep query and memory texts out of the store. Nothing leaves the given store.

At the end of a session, ``telemetry.log_session_outcome("s1", success=True)`` (or a number)
records how its task ended; ``flag_variant(store.flags(), "memory", session_id)`` gives the
variant a feature flag assigns to a session (same session, same variant).
"""

from __future__ import annotations

from recallbench.telemetry._flags import flag_variant
from recallbench.telemetry._logger import TelemetryLogger, get_logger
from recallbench.telemetry._sink import Sink, StoreSink
from recallbench.telemetry._span import Result, SearchSpan, last_query_id
from recallbench.telemetry._writer import TelemetryStats

__all__ = [
    "Result",
    "SearchSpan",
    "Sink",
    "StoreSink",
    "TelemetryLogger",
    "TelemetryStats",
    "flag_variant",
    "get_logger",
    "last_query_id",
]
