"""A shadow test's progress kept in the store, so that its decision reads only the pairs
settled since the last one (``shadow status`` on a test of a million pairs re-scored them
all: 30 s and more, and the betting sequence alone is O(pairs x grid)).

A checkpoint is the test's :class:`~recallbench.online._shadow_progress.Progress` over its
pairs up to ``covered_until`` (a settled moment: later pairs are added on the next read)
with the store's **marks** when it was read:

* the count and largest id of the shadow runs of the window up to ``covered_until``: a
  pair inserted late into it (a proxy committing after the settle time) or deleted changes
  them;
* the largest feedback event and judgment ids, and the latest judgment's ``created_at``;
  and the **late evidence** the progress took in: the feedback events and judgments about
  its pairs with an id above ``mark - ID_LAG`` or (judgments, which a new label replaces in
  place) stamped after ``latest - LABEL_LAG``. ``ID_LAG`` ids are read again because
  PostgreSQL hands ids out at insert, not at commit: an event of a transaction still open
  when the marks were read commits later with an id below them.

A checkpoint is used only when the same reads now find the same pairs and the same late
evidence about its pairs; anything else (feedback or a label that came after a pair
settled, a pair inserted late, a rule or window changed, an unreadable document) rebuilds
the test from its first pair, as ``decide`` always did. So the decision is the one
computed from scratch, to the bit (``tests/test_shadow_checkpoint.py`` draws streams and
writes between reads). Deletions (``store prune``, a label withdrawn by adjudication or
undone) clear the workspace's checkpoints; pairs and feedback events are never changed in
place (a migration that changes them must delete the checkpoints). What is not seen: a judgment replaced in place by one stamped
more than ``LABEL_LAG`` before the latest label, and more than ``ID_LAG`` events written
while one transaction stayed open.

The marks are read before the pairs and their evidence, so that anything written between
the two is seen by the next read. A checkpoint is written when the test is rebuilt and
when at least ``REFRESH_PAIRS`` pairs were added since the last; a write that fails (a
read-only store, a concurrent writer) costs only the next read its time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import suppress
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy.exc import SQLAlchemyError

from recallbench.core._query_key import query_key
from recallbench.online._shadow_progress import Progress
from recallbench.online._shadow_rule import GraduationRule
from recallbench.online._shadow_score import score_test

if TYPE_CHECKING:
    from recallbench.store import ShadowTest, Store
    from recallbench.store._shadow_checkpoints_store import LateEvidence, ShadowCheckpoint

ID_LAG: Final = 10_000
"""Ids below a mark read again (writers committing out of id order, PostgreSQL)."""
LABEL_LAG: Final = timedelta(seconds=60)
"""Judgments stamped this long before the latest one read again (labels replaced in place)."""
REFRESH_PAIRS: Final = 1_000
"""Pairs added since the checkpoint before a new one is written."""


def stored_progress(
    store: Store,
    test: ShadowTest,
    rule: GraduationRule,
    end: datetime,
    keys: Mapping[str, str] | None = None,
) -> Progress:
    """The progress of ``test`` over its pairs up to ``end``: its checkpoint's, when it
    still holds, with the pairs since added (module docstring); ``keys``: query id -> query
    unit key of the pairs (default: :func:`unit_keys`)."""
    since = test.started_at
    feedback_mark, label_mark, latest = store.evidence_marks()
    marks: dict[str, Any] = {
        "since": since.isoformat(),
        "feedback_after": feedback_mark - ID_LAG,
        "judgments_after": label_mark - ID_LAG,
        "labelled_from": None if latest is None else (latest - LABEL_LAG).isoformat(),
    }
    checkpoint = store.shadow_checkpoint(test.id)
    if checkpoint is not None and checkpoint.covered_until > end:
        checkpoint = None  # a decision at an earlier moment: from scratch, nothing kept
    lowest = [marks] + ([checkpoint.marks] if checkpoint is not None else [])
    evidence = store.late_evidence(
        since,
        end,
        min(int(m.get("feedback_after", 0)) for m in lowest),
        min(int(m.get("judgments_after", 0)) for m in lowest),
        _earliest(m.get("labelled_from") for m in lowest),
    )
    progress = None
    if checkpoint is not None and _holds(store, checkpoint, since, evidence):
        progress = Progress.load(rule, checkpoint.progress)
    after = checkpoint.covered_until if progress is not None and checkpoint is not None else None
    marks["pairs"] = list(store.shadow_run_marks(since, end))
    marks.update(_late(evidence, marks, end))
    rows, scores = score_test(store, test, end, after=after)
    if keys is None:
        keys = unit_keys(store, test, rows, end)
    rebuilt = progress is None
    if progress is None:
        progress = Progress.start(rule)
    progress.add(rows, scores, keys)
    if rebuilt or len(rows) >= REFRESH_PAIRS:
        with suppress(SQLAlchemyError, OSError):  # a cache: the next read rebuilds
            store.put_shadow_checkpoint(test.id, end, marks, progress.dump())
    return progress


def _holds(
    store: Store, checkpoint: ShadowCheckpoint, since: datetime, evidence: LateEvidence
) -> bool:
    """Whether the store still holds what ``checkpoint`` was computed from (module
    docstring)."""
    marks = checkpoint.marks
    covered = checkpoint.covered_until
    if marks.get("since") != since.isoformat():
        return False
    if list(store.shadow_run_marks(since, covered)) != marks.get("pairs"):
        return False
    return _late(evidence, marks, covered) == {
        "late_feedback": marks.get("late_feedback"),
        "late_judgments": marks.get("late_judgments"),
    }


def _late(evidence: LateEvidence, marks: Mapping[str, Any], until: datetime) -> dict[str, Any]:
    """The late evidence about the pairs up to ``until`` by the marks' bounds (JSON)."""
    feedback_after, judgments_after = marks["feedback_after"], marks["judgments_after"]
    labelled = marks["labelled_from"]
    labelled_from = None if labelled is None else datetime.fromisoformat(labelled)
    feedback = sorted(
        event for at, event in evidence.feedback if at <= until and event > feedback_after
    )
    judgments = sorted(
        [label, stamped.isoformat(), grade, source]
        for at, label, stamped, grade, source in evidence.judgments
        if at <= until
        and (label > judgments_after or (labelled_from is not None and stamped >= labelled_from))
    )
    return {"late_feedback": feedback, "late_judgments": judgments}


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
