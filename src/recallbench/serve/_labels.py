"""Labels written by several people at once: a write names the label it replaces, a stale
write is refused with the label written meanwhile, and an undo says what it did.

The annotation page shows a pair with the version of its current manual label (none, for
a pair in the queue); grading posts that version back. When the pair's label changed in
between (another annotator, or another tab of the same one), nothing is written and the
page is shown again with the label that is there now (HTTP 409): its author replaces it
only by posting again with that label's version. Checked under the queue's lock, so within
one dashboard process no label is lost without its author having seen it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from recallbench.core import RecallbenchError
from recallbench.store import Judgment

GRADE_WORDS = ("not relevant", "related", "relevant", "exactly what was needed")
"""What each grade 0-3 means, as the annotation page shows it."""


def label_version(label: Judgment | None) -> str:
    """The version a write names as the label it replaces: "" for no label, else a short
    digest of who gave which grade when (a label put back by an undo keeps its version)."""
    if label is None:
        return ""
    identity = f"{label.annotator}\x1f{label.grade}\x1f{label.created_at.isoformat()}"
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


def _who(label: Judgment) -> str:
    return label.annotator or "someone"


class LabelConflict(RecallbenchError):
    """A grade not written: the pair's label is no longer the one its author was shown."""

    def __init__(self, key: tuple[str, str], grade: int, current: Judgment | None) -> None:
        self.key = key
        self.grade = grade
        self.current = current
        """The pair's label now (None: it has none, the one shown was taken back)."""
        super().__init__(self.message)

    @property
    def message(self) -> str:
        yours = f"yours ({self.grade}) was not written"
        if self.current is None:
            return f"the label you were shown was taken back meanwhile; {yours}"
        current = self.current
        return (
            f"{_who(current)} labelled this pair {current.grade} "
            f"({GRADE_WORDS[current.grade]}) at {current.created_at:%Y-%m-%d %H:%M:%S} UTC "
            f"while you were looking at it; {yours}"
        )


@dataclass(frozen=True, slots=True)
class Undone:
    """What an undo did: ``done`` False when there was nothing it could take back."""

    kind: Literal["grade", "skip", "prefer", "skip-pairwise"]
    key: tuple[str, ...]
    done: bool
    written: Judgment | None = None
    """For a grade: the label the annotator wrote."""
    current: Judgment | None = None
    """For a grade not undone: the pair's label now (someone else's, or none)."""
    restored: Judgment | None = None
    """For a grade undone: the label it had replaced, put back."""

    @property
    def message(self) -> str:
        what = {"grade": "label", "prefer": "choice"}.get(self.kind, "skip")
        of = " / ".join(self.key)
        if self.done:
            back = self.restored
            return f"undone: the {what} of {of}" + (
                f"; {_who(back)}'s {back.grade} is back" if back is not None else ""
            )
        if self.kind != "grade":
            return f"not undone: your {what} of {of} is no longer stored"
        mine = f" ({self.written.grade})" if self.written is not None else ""
        if self.current is None:
            return f"not undone: your label{mine} of {of} was taken back already"
        return (
            f"not undone: {_who(self.current)}'s label {self.current.grade} of {of} replaced "
            f"yours{mine} since, and stays (their undo will not put yours back)"
        )
