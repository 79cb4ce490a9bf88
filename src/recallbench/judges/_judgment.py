"""What one judge call yields, and what a batch of them adds up to.

A failed judgment is not dropped: it scores the neutral 0.5 so that every input keeps a
value, and its reason is counted, so that a report can say how much of a score is neutral
filler. Past a failure rate the measure is unreliable (and a strict gate fails closed).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

V = TypeVar("V")

NEUTRAL = 0.5
"""The score of a failed judgment: halfway on every task's 0-1 score."""

MAX_FAILURE_RATE = 0.1
"""Default share of failed judgments above which a measure is marked unreliable."""

FailureReason = Literal["timeout", "connection", "http", "unparseable", "provider"]
"""Why a judgment has no value: no answer in time, endpoint unreachable, an error status
(refusals included), an answer outside the prompt's schema or scale, another provider
failure."""


@dataclass(frozen=True, slots=True)
class Judgment(Generic[V]):
    """One input's judgment: a value on the task's scale, or a failure scored neutral."""

    value: V | None
    score: float
    """The task's 0-1 score of ``value``; :data:`NEUTRAL` when failed."""
    failure: FailureReason | None = None
    detail: str = ""
    """What went wrong, for the log (empty when the judgment succeeded)."""
    cached: bool = False
    """Replayed from the judge cache rather than asked."""
    model: str = ""
    """The model that answered, as the server named it (empty when none answered)."""
    tokens_in: int = 0
    """Tokens of the answer's call (as recorded when it came from the cache); 0 when
    ``shared``, so that adding up judgments adds up calls."""
    tokens_out: int = 0
    latency_ms: float = 0.0
    """How long the answer took (as recorded when it came from the cache)."""
    shared: bool = False
    """The answer of an identical input earlier in the batch: one call, counted there."""

    @property
    def failed(self) -> bool:
        return self.failure is not None


@dataclass(slots=True)
class JudgeStats:
    """A batch's counts: what was asked, replayed, spent and lost."""

    asked: int = 0
    """Inputs judged (cached or not)."""
    cached: int = 0
    """Answers replayed from the cache (one per distinct call, however many inputs
    share it)."""
    called: int = 0
    """Provider calls made (distinct inputs missing from the cache)."""
    failed: Counter[str] = field(default_factory=Counter)
    """Failed judgments by reason."""
    tokens_in: int = 0
    """Tokens of the calls made by this batch (replayed judgments spend none)."""
    tokens_out: int = 0
    cost: float | None = 0.0
    """Cost of the calls made by this batch; None when a price was unknown."""
    max_failure_rate: float = MAX_FAILURE_RATE

    @property
    def failures(self) -> int:
        return sum(self.failed.values())

    @property
    def failure_rate(self) -> float:
        return self.failures / self.asked if self.asked else 0.0

    @property
    def unreliable(self) -> bool:
        """More failures than ``max_failure_rate`` allows: the scores are mostly filler."""
        return self.failure_rate > self.max_failure_rate
