"""A shadow test's progress kept in the store, so that its decision reads only the pairs
settled since the last one (``shadow status`` on a test of a million pairs re-scored them
all: 30 s and more, and the betting sequence alone is O(pairs x grid)).

A checkpoint is the test's :class:`~recallbench.online._shadow_progress.Progress` over its
pairs up to ``covered_until`` (a settled moment: later pairs are added on the next read)
with the store's **marks** when it was read:

* the largest shadow run, feedback event and judgment ids, and the latest judgment's
  ``created_at``;
* and what the progress took in above them (**late**): the pairs of its window with an id
  above ``mark - ID_LAG`` (a pair inserted into the window after it settled, by a proxy
  committing late), and the feedback events and judgments about its pairs with an id
  above ``mark - ID_LAG`` or (judgments, which a new label replaces in place) stamped
  after ``latest - LABEL_LAG``. On PostgreSQL ``ID_LAG`` ids are read
  again because it hands ids out at insert, not at commit: an event of a transaction
  still open when the marks were read commits later with an id below them (SQLite has one
  writer at a time: its ids are in commit order).

A checkpoint is used only when the same reads now find the same pairs and the same late
evidence about its pairs; anything else (feedback or a label that came after a pair
settled, a pair inserted late, a rule or window changed, an unreadable document) rebuilds
the test from its first pair, as ``decide`` always did. So the decision is the one
computed from scratch, to the bit (``tests/test_shadow_checkpoint.py`` draws streams and
writes between reads). Deletions (``store prune``, a label withdrawn by adjudication or
undone) clear the workspace's checkpoints; pairs and feedback events are never changed in
place (a migration that changes them must delete the checkpoints). What is not seen: a
judgment replaced in place by one stamped more than ``LABEL_LAG`` before the latest
label, and more than ``ID_LAG`` events written while one transaction stayed open.

The marks are read before the pairs and their evidence, so that anything written between
the two is seen by the next read. A checkpoint is written when the test is rebuilt and
when at least ``REFRESH_PAIRS`` pairs were added since the last; a write that fails (a
read-only store, a concurrent writer) costs only the next read its time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy.exc import SQLAlchemyError

from recallbench.core._query_key import query_key
from recallbench.online._shadow_progress import Progress
from recallbench.online._shadow_rule import GraduationRule
from recallbench.online._shadow_score import score_test
from recallbench.online._shadow_verdict import decision_from_json, decision_json, decision_of

if TYPE_CHECKING:
    from recallbench.online._shadow_decision import Decision
    from recallbench.store import ShadowTest, Store
    from recallbench.store._shadow_checkpoints_store import LateEvidence, ShadowCheckpoint

ID_LAG: Final = 100_000
"""Ids below a mark watched (writers committing out of id order, PostgreSQL)."""
LABEL_LAG: Final = timedelta(seconds=60)
"""Judgments stamped this long before the latest one read again (labels replaced in place)."""
REFRESH_PAIRS: Final = 1_000
LATE: Final = ("late_pairs", "late_feedback", "late_judgments")
"""Pairs added since the checkpoint before a new one is written."""


@dataclass(slots=True)
class Reads:
    """The marks, late rows and id counts one command read (the rows and counts by their
    bounds): tests checked together read them once."""

    evidence: dict[tuple[Any, ...], LateEvidence] = field(default_factory=dict)
    counts: dict[tuple[int, ...], list[int]] = field(default_factory=dict)
    marks: tuple[int, int, int, datetime | None] | None = None
    """The store's marks, read before anything else (:meth:`Store.evidence_marks`)."""


def stored_decision(
    store: Store,
    test: ShadowTest,
    rule: GraduationRule,
    end: datetime,
    keys: Mapping[str, str] | None = None,
    read: Reads | None = None,
    sampled: tuple[int, int] | None = None,
) -> Decision:
    """The decision (:func:`~recallbench.online._shadow_verdict.decision_of`) on the
    progress of ``test`` over its pairs up to ``end``: its checkpoint's, when it still
    holds, with the pairs since added (module docstring); ``keys``: query id -> query unit
    key of the pairs (default: :func:`unit_keys`); ``read``: what this command read of the
    store already (tests checked together read it once); ``sampled``: the sampling SRM's
    counts. A decision at a moment before the kept checkpoint is computed from scratch and
    keeps nothing (the later checkpoint stays)."""
    since = test.started_at
    lag = 0 if store.url.startswith("sqlite") else ID_LAG  # SQLite commits in id order
    read = Reads() if read is None else read
    if read.marks is None:
        read.marks = store.evidence_marks()
    pair_mark, feedback_mark, label_mark, latest = read.marks
    marks: dict[str, Any] = {
        "since": since.isoformat(),
        "rule": json.loads(json.dumps(rule.to_dict())),  # as read back
        "marks": [pair_mark, feedback_mark, label_mark],
        "after": [pair_mark - lag, feedback_mark - lag, label_mark - lag],
        "labelled_from": None if latest is None else (latest - LABEL_LAG).isoformat(),
    }

    def evidence(bounds: Sequence[int], labelled_from: str | None) -> LateEvidence:
        key = (*bounds, labelled_from)
        if key not in read.evidence:
            moment = None if labelled_from is None else datetime.fromisoformat(labelled_from)
            read.evidence[key] = store.late_evidence(bounds[0], bounds[1], bounds[2], moment)
        return read.evidence[key]

    def counts(low: Sequence[int], high: Sequence[int]) -> list[int]:
        key = (*low, *high)
        if key not in read.counts:
            read.counts[key] = list(store.id_counts(low, high))
        return read.counts[key]

    checkpoint = store.shadow_checkpoint(test.id)
    earlier = checkpoint is not None and checkpoint.covered_until > end
    if earlier:
        checkpoint = None  # a decision at an earlier moment: from scratch, nothing kept
    held = None if checkpoint is None else _holds(checkpoint, marks, evidence, counts)
    base = checkpoint if held is not None else None  # the checkpoint that still holds
    after = None if base is None else base.covered_until
    keep = not earlier and (after is None or store.shadow_run_count(after, end) >= REFRESH_PAIRS)
    # what the new checkpoint took in is read before its pairs, as the marks above: the
    # late rows about the pairs since, added to its own while its window of ids is under
    # twice ID_LAG (one read of the window per ID_LAG new rows), else the whole window
    if (
        keep
        and base is not None
        and held == "above"
        and all(m - a <= 2 * lag for m, a in zip(marks["marks"], base.marks["after"], strict=True))
    ):
        marks.update(after=base.marks["after"], labelled_from=base.marks["labelled_from"])
        marks["counts"] = counts(marks["after"], marks["marks"])
        labelled = marks["labelled_from"]
        moment = None if labelled is None else datetime.fromisoformat(labelled)
        since_then = store.late_evidence_between(base.covered_until, end, marks["after"], moment)
        added = _late(since_then, marks, marks["after"], since, end)
        marks.update({name: _union(base.marks[name], added[name]) for name in LATE})
    elif keep:
        low, high = tuple(marks["after"]), tuple(marks["marks"])
        marks["counts"] = counts(low, high)
        marks.update(_late(evidence(low, marks["labelled_from"]), marks, low, since, end))
    rows, scores = score_test(store, test, end, after=after)
    if base is not None and not rows and sampled is None:
        kept = base.marks.get("decision")  # nothing added: the decision it gave
        if isinstance(kept, str):
            return decision_from_json(kept)
    progress = None
    if base is not None:
        document = store.shadow_checkpoint_progress(base)
        progress = None if document is None else Progress.load(rule, document)
    if progress is None and after is not None:  # the kept one unreadable: every pair again
        rows, scores = score_test(store, test, end)
        keep = True
    if progress is None:
        progress = Progress.start(rule)
    progress.add(rows, scores, unit_keys(store, test, rows, end) if keys is None else keys)
    decision = decision_of(progress, sampled)
    if keep and "counts" in marks:
        plain = decision if sampled is None else decision_of(progress, None)
        marks["decision"] = decision_json(plain)
        with suppress(SQLAlchemyError, OSError):  # a cache: the next read rebuilds
            store.put_shadow_checkpoint(test.id, end, marks, progress.dump())
    return decision


def _holds(
    checkpoint: ShadowCheckpoint,
    now: Mapping[str, Any],
    evidence: Callable[[Sequence[int], str | None], LateEvidence],
    counts: Callable[[Sequence[int], Sequence[int]], list[int]],
) -> str | None:
    """Whether the store still holds what ``checkpoint`` was computed from (module
    docstring): the same test and rule, and the same late pairs, feedback and labels about
    the pairs it covers. When no row came into the id ranges below its marks since (the
    counts, from the primary keys), only the rows above the marks are read: "above";
    "whole" when the window was read; None when it does not hold."""
    marks = checkpoint.marks
    if any(marks.get(name) != now[name] for name in ("since", "rule")):
        return None
    if any(name not in marks for name in ("marks", "after", "counts", *LATE)):
        return None
    low, high = tuple(marks["after"]), tuple(marks["marks"])
    since = datetime.fromisoformat(now["since"])
    above = counts(low, high) == marks["counts"]
    bounds = high if above else low
    read = evidence(bounds, marks["labelled_from"])
    found = _late(read, marks, bounds, since, checkpoint.covered_until)
    kept = _within(marks, bounds)
    if any(found[name] != kept[name] for name in LATE):
        return None
    return "above" if above else "whole"


def _late(
    evidence: LateEvidence,
    marks: Mapping[str, Any],
    bounds: Sequence[int],
    since: datetime,
    until: datetime,
) -> dict[str, Any]:
    """The pairs of ``since`` to ``until`` with an id above ``bounds[0]``, and the feedback
    and labels about them above ``bounds[1]`` and ``bounds[2]`` or (labels) stamped from the
    marks' ``labelled_from`` (JSON)."""
    labelled = marks["labelled_from"]
    labelled_from = None if labelled is None else datetime.fromisoformat(labelled)
    pairs = sorted(pair for at, pair in evidence.pairs if since <= at <= until and pair > bounds[0])
    feedback = sorted(
        event for at, event in evidence.feedback if since <= at <= until and event > bounds[1]
    )
    judgments = sorted(
        [label, stamped.isoformat(), grade, source]
        for at, label, stamped, grade, source in evidence.judgments
        if since <= at <= until
        and (label > bounds[2] or (labelled_from is not None and stamped >= labelled_from))
    )
    return {"late_pairs": pairs, "late_feedback": feedback, "late_judgments": judgments}


def _union(kept: list[Any], added: list[Any]) -> list[Any]:
    """Two sorted lists of late rows (ids, or judgments as lists) as one, sorted, once."""
    merged = {tuple(item) if isinstance(item, list) else item: item for item in [*kept, *added]}
    return sorted(merged.values())


def _within(marks: Mapping[str, Any], bounds: Sequence[int]) -> dict[str, Any]:
    """The checkpoint's late rows that :func:`_late` with ``bounds`` would find."""
    labelled = marks["labelled_from"]
    since = None if labelled is None else datetime.fromisoformat(labelled)
    return {
        "late_pairs": [p for p in marks["late_pairs"] if p > bounds[0]],
        "late_feedback": [e for e in marks["late_feedback"] if e > bounds[1]],
        "late_judgments": [
            j
            for j in marks["late_judgments"]
            if j[0] > bounds[2] or (since is not None and datetime.fromisoformat(j[1]) >= since)
        ],
    }


def _earliest(moments: Any) -> datetime | None:
    found = [datetime.fromisoformat(m) for m in moments if m is not None]
    return min(found) if found else None


def unit_keys(
    store: Store, test: ShadowTest, rows: Sequence[Mapping[str, Any]], end: datetime | None
) -> dict[str, str]:
    """Query id -> key of its text for the pairs ``rows``: the key the pair was written with
    (m014), else that of its query logged in the test's window (a pair whose query was not
    logged when m014 ran, or loaded without it). Only those are looked up in ``query_log``:
    reading a million pairs' texts from its largest rows was most of the time of ``shadow
    status``."""
    keys: dict[str, str] = {}
    missing = []
    for row in rows:
        if row.get("query_key"):
            keys[str(row["query_id"])] = str(row["query_key"])
        else:
            missing.append(str(row["query_id"]))
    if missing:
        for query_id, entry in store.query_log_entries(missing).items():
            if entry.created_at >= test.started_at and (end is None or entry.created_at <= end):
                keys[query_id] = query_key(entry.text)
    return keys
