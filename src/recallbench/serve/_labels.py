"""Labels written by a team at once: each annotator's own label of a pair, conflicts between
annotators, the adjudication that resolves one, stale writes refused, and what an undo did.

The annotation page shows a pair with the version of the annotator's *own* label of it
(none, for a pair in their queue); grading posts that version back. When their label
changed in between (another tab of the same annotator), nothing is written and the page is
shown again with their label as it is now (HTTP 409): they replace it only by posting again
with that version. Other annotators' labels never conflict with one's own: each is kept
(``store.write_label``), and a pair whose annotators disagree is a conflict for
adjudication. An adjudication names the version of the whole pair (:func:`pair_version`:
every label and the adjudication): if any of them changed meanwhile, it is refused the same
way and the adjudication page shows the pair as it is now.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from recallbench.core import RecallbenchError
from recallbench.store._annotations_store import Label

GRADE_WORDS = ("not relevant", "related", "relevant", "exactly what was needed")
"""What each grade 0-3 means, as the annotation page shows it."""


def label_version(label: Label | None) -> str:
    """The version a write names as the row it replaces: "" for none."""
    return "" if label is None else str(label.version)


def parse_version(text: str) -> int | None:
    """A posted version: None for "" (no row); -1, which no row has, for anything else."""
    if text == "":
        return None
    return int(text) if text.isdigit() else -1


@dataclass(frozen=True, slots=True)
class PairState:
    """Every annotator's current label of one pair and its adjudication."""

    key: tuple[str, str]
    labels: tuple[Label, ...]
    """Current labels (withdrawn ones left out), by annotator."""
    adjudication: Label | None
    """The adjudication row, withdrawn or not (see :attr:`adjudicated`)."""
    version: str
    """:func:`pair_version` of the rows read."""

    @property
    def adjudicated(self) -> Label | None:
        found = self.adjudication
        return found if found is not None and found.grade is not None else None

    @property
    def conflict(self) -> bool:
        """The annotators disagree and no one adjudicated the pair."""
        return len({label.grade for label in self.labels}) > 1 and self.adjudicated is None

    def of(self, annotator: str) -> Label | None:
        return next((label for label in self.labels if label.annotator == annotator), None)


def pair_version(rows: list[Label], adjudication: Label | None) -> str:
    """A digest of every label row of a pair (withdrawn ones too) and its adjudication row:
    any write to the pair changes it."""
    parts = [f"{r.annotator}\x1f{r.version}" for r in sorted(rows, key=lambda r: r.annotator)]
    if adjudication is not None:
        parts.append(f"adjudication\x1f{adjudication.version}")
    return hashlib.sha256("\x1e".join(parts).encode()).hexdigest()[:16]


def _grade(grade: int | None) -> str:
    return "no label" if grade is None else f"{grade} ({GRADE_WORDS[grade]})"


class LabelConflict(RecallbenchError):
    """A grade not written: the annotator's own label of the pair is no longer the one this
    page showed (another tab)."""

    def __init__(self, key: tuple[str, str], grade: int, current: Label | None) -> None:
        self.key = key
        self.grade = grade
        self.current = current
        """Their label row now (grade None: withdrawn; None: never labelled)."""
        super().__init__(self.message)

    @property
    def message(self) -> str:
        yours = f"this one ({self.grade}) was not written"
        current = self.current
        if current is None or current.grade is None:
            return f"your label of this pair was taken back meanwhile (another tab); {yours}"
        return (
            f"you labelled this pair {_grade(current.grade)} at "
            f"{current.updated_at:%Y-%m-%d %H:%M:%S} UTC in another tab or window; {yours}"
        )


class AdjudicationConflict(RecallbenchError):
    """An adjudication not written: the pair's labels or adjudication changed meanwhile."""

    def __init__(self, state: PairState, grade: int) -> None:
        self.state = state
        self.grade = grade
        super().__init__(self.message)

    @property
    def message(self) -> str:
        yours = f"your adjudication ({self.grade}) was not written"
        found = self.state.adjudicated
        if found is not None:
            return (
                f"{found.annotator} adjudicated this pair {_grade(found.grade)} at "
                f"{found.updated_at:%Y-%m-%d %H:%M:%S} UTC meanwhile; {yours}"
            )
        return f"the pair's labels changed meanwhile (shown as they are now); {yours}"


Kind = Literal["grade", "skip", "prefer", "skip-pairwise", "adjudicate", "skip-adjudicate"]


@dataclass(frozen=True, slots=True)
class Undone:
    """What an undo did: ``done`` False when it could not (``message`` says why)."""

    kind: Kind
    key: tuple[str, ...]
    done: bool
    before: Label | None = None
    """For a grade or an adjudication: the row as it was before the action undone."""
    written: Label | None = None
    """For a grade or an adjudication: the row the action wrote."""
    current: Label | None = None
    """For one not undone: the row now."""
    after: PairState | None = None
    """For an adjudication undone: the pair now."""
    restored_choice: bool = False
    """For a pairwise choice: the choice it had replaced was put back."""

    @property
    def message(self) -> str:
        of = " / ".join(self.key[-2:] if self.kind.endswith("adjudicate") else self.key)
        if self.kind in ("skip", "skip-pairwise", "skip-adjudicate"):
            return f"undone: your skip of {of} (it is back in your queue)"
        if self.kind == "prefer":
            if not self.done:
                return f"not undone: your choice on {of} is no longer stored"
            back = "; your earlier choice is back" if self.restored_choice else ""
            return f"undone: your choice on {of}{back}"
        written = self.written.grade if self.written is not None else None
        before = self.before.grade if self.before is not None else None
        if self.kind == "grade":
            return self._grade_message(of, written, before)
        return self._adjudication_message(of, written, before)

    def _grade_message(self, of: str, written: int | None, before: int | None) -> str:
        if not self.done:
            now = self.current.grade if self.current is not None else None
            return (
                f"not undone: your label of {of} changed since (now {_grade(now)}, "
                "from another tab or window); undo there, or grade it again"
            )
        if before is None:
            return f"undone: your label {written} of {of}; the pair is back in your queue"
        return f"undone: your relabel of {of} from {before} to {written}; your {before} is back"

    def _adjudication_message(self, of: str, written: int | None, before: int | None) -> str:
        if not self.done:
            now = self.current
            adjudicated = now is not None and now.grade is not None
            who = f"{now.annotator} adjudicated it {now.grade}" if now and adjudicated else "it"
            return f"not undone: your adjudication {written} of {of} changed since ({who})"
        if before is not None and self.before is not None:
            return (
                f"undone: your adjudication {written} of {of}; "
                f"{self.before.annotator}'s adjudication {before} is back"
            )
        again = "a conflict again" if self.after and self.after.conflict else "unadjudicated"
        return f"undone: your adjudication {written} of {of}; it is {again}"
