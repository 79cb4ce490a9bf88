"""Session summaries: what an agent's session did with memory, and how its task ended
(the design notes' session-level feedback, section 5.4).

Per session (the ``session_id`` of the logged searches):

* ``searches``: searches logged; ``memories_read``: distinct documents read after a search
  (``read_after_search``); ``validated_useful`` / ``validated_not_useful``: validations;
* ``re_search_rate = re_searches / searches``, a re-search being a near-duplicate search
  soon after the previous one (the proxy's ``re_search`` events, see
  :mod:`recallbench.online._feedback`);
* ``duration_s``: from the first search to the last event of the session (search,
  feedback or recorded outcome);
* ``mean_mrr``: over the session's *golden* searches (``query_log.golden``) that have a
  relevant label, the mean reciprocal rank ``1 / min{r : results[r] relevant}`` (0 when
  none is returned), a document being relevant when its grade is at least ``threshold``
  (labels by precedence manual, validated, llm, implicit, bootstrapped); None without such
  a search;
* ``outcome`` / ``success``: the latest recorded outcome of the session (``Store.
  log_session_outcome``), None when none was recorded.

:func:`outcomes_by_variant` groups the summaries by the system that served each session —
the variant a feature flag gave it when it started (:func:`recallbench.telemetry._flags.
variant_at`) — for ``recallbench shadow status``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recallbench.store import FeedbackEvent, Judgment, QueryLogEntry, SessionOutcome, Store

LABEL_PRECEDENCE = ("manual", "validated", "llm", "implicit", "bootstrapped")


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One session's searches, reads, validations, re-searches, duration, golden MRR and
    task outcome (module docstring)."""

    session_id: str
    searches: int
    memories_read: int
    validated_useful: int
    validated_not_useful: int
    re_searches: int
    re_search_rate: float
    started_at: datetime
    ended_at: datetime
    duration_s: float
    golden_searches: int
    mean_mrr: float | None
    outcome: float | None
    success: bool | None

    def to_dict(self) -> dict[str, Any]:
        return {
            name: (value.isoformat() if isinstance(value, datetime) else value)
            for name, value in ((name, getattr(self, name)) for name in self.__slots__)
        }


def summarise_sessions(
    queries: Sequence[QueryLogEntry],
    feedback: Iterable[FeedbackEvent] = (),
    labels: Iterable[Judgment] = (),
    outcomes: Iterable[SessionOutcome] = (),
    threshold: int = 1,
) -> list[SessionSummary]:
    """One summary per session of ``queries`` (searches without a session are left out),
    ordered by the session's first search."""
    by_session: dict[str, list[QueryLogEntry]] = {}
    session_of: dict[str, str] = {}
    for entry in sorted(queries, key=lambda entry: entry.created_at):
        if entry.session_id is None:
            continue
        by_session.setdefault(entry.session_id, []).append(entry)
        session_of[entry.query_id] = entry.session_id
    events: dict[str, list[FeedbackEvent]] = {}
    for event in feedback:
        session = session_of.get(event.query_id) or event.session_id
        if session in by_session:
            events.setdefault(session, []).append(event)
    relevant = _relevant(labels, threshold)
    latest: dict[str, SessionOutcome] = {}
    for outcome in sorted(outcomes, key=lambda outcome: outcome.recorded_at):
        latest[outcome.session_id] = outcome
    return [
        _summary(session, entries, events.get(session, []), relevant, latest.get(session))
        for session, entries in by_session.items()
    ]


def session_summaries(
    store: Store, since: datetime | None = None, until: datetime | None = None, threshold: int = 1
) -> list[SessionSummary]:
    """:func:`summarise_sessions` of the searches the store logged from ``since`` to
    ``until`` (exclusive), with their feedback, labels and the sessions' outcomes."""
    queries = store.query_log(since=since, until=until)
    ids = [entry.query_id for entry in queries]
    sessions = sorted({entry.session_id for entry in queries if entry.session_id is not None})
    golden = [entry.query_id for entry in queries if entry.golden]
    return summarise_sessions(
        queries,
        store.feedback(ids) if ids else [],
        store.judgments(golden) if golden else [],
        store.session_outcomes(sessions) if sessions else [],
        threshold,
    )


@dataclass(frozen=True, slots=True)
class VariantOutcomes:
    """The sessions one system served: how many, their outcomes, and their means."""

    variant: str
    sessions: int
    with_outcome: int
    success_rate: float | None
    """Among sessions with a recorded success."""
    mean_outcome: float | None
    """Among sessions with a recorded number."""
    mean_searches: float
    mean_re_search_rate: float
    mean_mrr: float | None
    """Mean over sessions with a golden MRR."""


def outcomes_by_variant(
    summaries: Sequence[SessionSummary], variant_of: Callable[[SessionSummary], str]
) -> list[VariantOutcomes]:
    """The summaries grouped by ``variant_of(summary)`` (e.g. the flag's variant of the
    session when it started), sorted by variant."""
    groups: dict[str, list[SessionSummary]] = {}
    for summary in summaries:
        groups.setdefault(variant_of(summary), []).append(summary)
    found = []
    for variant in sorted(groups):
        group = groups[variant]
        successes = [s.success for s in group if s.success is not None]
        numbers = [s.outcome for s in group if s.outcome is not None]
        mrrs = [s.mean_mrr for s in group if s.mean_mrr is not None]
        found.append(
            VariantOutcomes(
                variant=variant,
                sessions=len(group),
                with_outcome=sum(s.success is not None or s.outcome is not None for s in group),
                success_rate=sum(successes) / len(successes) if successes else None,
                mean_outcome=_mean(numbers),
                mean_searches=sum(s.searches for s in group) / len(group),
                mean_re_search_rate=sum(s.re_search_rate for s in group) / len(group),
                mean_mrr=_mean(mrrs),
            )
        )
    return found


def _summary(
    session: str,
    entries: Sequence[QueryLogEntry],
    events: Sequence[FeedbackEvent],
    relevant: Mapping[str, set[str]],
    outcome: SessionOutcome | None,
) -> SessionSummary:
    kinds = [event.kind for event in events]
    read = {event.doc_id for event in events if event.kind == "read_after_search" and event.doc_id}
    re_searches = kinds.count("re_search")
    times = [entry.created_at for entry in entries] + [event.created_at for event in events]
    if outcome is not None:
        times.append(outcome.recorded_at)
    started, ended = entries[0].created_at, max(times)
    golden = [entry for entry in entries if entry.golden and relevant.get(entry.query_id)]
    rrs = [_reciprocal_rank(entry.results, relevant[entry.query_id]) for entry in golden]
    return SessionSummary(
        session_id=session,
        searches=len(entries),
        memories_read=len(read),
        validated_useful=kinds.count("validated_useful"),
        validated_not_useful=kinds.count("validated_not_useful"),
        re_searches=re_searches,
        re_search_rate=re_searches / len(entries),
        started_at=started,
        ended_at=ended,
        duration_s=(ended - started).total_seconds(),
        golden_searches=len(golden),
        mean_mrr=_mean(rrs),
        outcome=None if outcome is None else outcome.outcome,
        success=None if outcome is None else outcome.success,
    )


def _relevant(labels: Iterable[Judgment], threshold: int) -> dict[str, set[str]]:
    """Per query, the documents whose grade (by source precedence) is >= ``threshold``."""
    order = {source: at for at, source in enumerate(LABEL_PRECEDENCE)}
    best: dict[tuple[str, str], tuple[int, int]] = {}
    for label in labels:
        rank = order.get(label.source, len(order))
        key = (label.query_id, label.doc_id)
        if key not in best or rank < best[key][0]:
            best[key] = (rank, label.grade)
    found: dict[str, set[str]] = {}
    for (query, doc), (_, grade) in best.items():
        if grade >= threshold:
            found.setdefault(query, set()).add(doc)
    return found


def _reciprocal_rank(results: Sequence[str], relevant: set[str]) -> float:
    for rank, doc in enumerate(dict.fromkeys(results), start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
