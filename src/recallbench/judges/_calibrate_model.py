"""The calibration's model (``recallbench.calibration/v1``): the judge, what it was asked
and answered, kappa, the confusion matrix, agreement per category, the ranking (tau), the
PPI means, warnings and notes, and what this invocation spent."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from recallbench.core import DatasetRef
from recallbench.core._model import Record

FORMAT: Literal["recallbench.calibration/v1"] = "recallbench.calibration/v1"


class JudgeInfo(Record):
    """The judge every number here belongs to."""

    model: str
    provider: str
    endpoint: str | None = None
    prompt: str
    """Task and prompt version, e.g. ``relevance v1``."""
    params: dict[str, Any] = Field(default_factory=dict)
    answered_by: list[str] = Field(default_factory=list)
    """Model names the answers carried, when the server reported others than ``model``."""

    @property
    def label(self) -> str:
        where = f" at {self.endpoint}" if self.endpoint else ""
        return f"{self.model} ({self.provider}{where}), prompt {self.prompt}"


class Coverage(Record):
    """What the judge was asked and what it answered. Replay-stable: nothing here depends on
    whether an answer came from the cache."""

    pairs: int
    """Pairs people labelled that the judge was asked about."""
    judged: int
    """Pairs the judge gave a grade."""
    failed: dict[str, int] = Field(default_factory=dict)
    """Failed judgments by reason (no grade: left out of the agreement)."""
    failure_rate: float
    max_failure_rate: float
    unreliable: bool
    """More failures than ``max_failure_rate`` allows."""
    excluded_llm: int
    excluded_no_text: int
    negative_grades: int
    """Human grades below 0 (judged, never relevant), counted as 0 on the 0-3 scale."""
    tokens_in: int
    tokens_out: int
    cost_usd: float | None
    """Recorded: what the judgments cost at the configured prices when they were asked,
    replayed ones included (None: no price given). What this invocation spent is
    :attr:`Calibration.spent`."""


class Spent(Record):
    """What this invocation's judge calls cost: a replayed judgment costs nothing now."""

    calls: int
    """Provider calls made now (judgments missing from the cache)."""
    replayed: int
    """Answers replayed from the cache (free now)."""
    tokens_in: int
    """Tokens of the calls made now."""
    tokens_out: int
    cost_usd: float | None
    """At the configured prices (None: no price given)."""


class CalibrationWarning(Record):
    """A reason to distrust a number of the calibration, shown wherever it is."""

    code: Literal["small-human-sample", "tau-without-agreement"]
    message: str


class KappaResult(Record):
    """Cohen's kappa with its bootstrap interval (None where undefined)."""

    labels: Literal["0-3", "binary"]
    weighting: str
    value: float | None
    low: float | None
    high: float | None
    pairs: int
    undefined: str | None = None
    undefined_resamples: int = 0


class CategoryAgreement(Record):
    """Agreement on the pairs of one query category (no interval: groups are small)."""

    category: str
    pairs: int
    agreement: float
    """Share of pairs with the same 0-3 grade."""
    kappa_quadratic: float | None
    kappa_binary: float | None


class SystemScore(Record):
    system: str
    human: float
    """Mean of the measure under people's labels, over the ranking's queries."""
    judge: float
    """The same under the judge's labels."""
    human_rank: int
    judge_rank: int


class Ranking(Record):
    """Kendall's tau-b between the systems' order under people's and the judge's labels."""

    measure: str
    queries: int
    """Queries every system's measure is defined on under both labellings."""
    dropped_queries: int
    tau: float | None
    low: float | None
    high: float | None
    undefined: str | None = None
    undefined_resamples: int = 0
    kappa_quadratic: float | None
    """Quadratic-weighted kappa on the 0-3 labels, shown beside tau: tau compares only the
    systems' order, which a judge that inverts grades can keep."""
    kappa_low: float | None
    kappa_high: float | None
    systems: list[SystemScore]


class Estimate(Record):
    """A mean with its normal interval (see :class:`recallbench.judges.MeanEstimate`)."""

    estimate: float
    low: float
    high: float
    standard_error: float
    method: str
    labelled: int
    unlabelled: int
    weight: float


class SystemMeans(Record):
    system: str
    target: Estimate
    """People's labels on every query: what the other estimates try to reach."""
    classical: Estimate
    """People's labels on the labelled sample alone."""
    judge_only: Estimate
    """The judge's labels on every query; its interval ignores the judge's bias."""
    ppi: Estimate | None
    ppi_tuned: Estimate | None
    """PPI++ (power-tuned weight on the judge)."""


class PPIResult(Record):
    measure: str
    queries: int
    labelled: int
    """Queries treated as labelled by people (the seeded sample)."""
    unlabelled: int
    seed: int
    labelled_queries: list[str]
    note: str | None = None
    systems: list[SystemMeans]


class Calibration(Record):
    """How a relevance judge agrees with people on one dataset (``recallbench.calibration/v1``)."""

    format: Literal["recallbench.calibration/v1"] = FORMAT
    created_at: datetime
    dataset: DatasetRef
    relevance_threshold: int
    judge: JudgeInfo
    coverage: Coverage
    level: float
    resamples: int
    seed: int
    kappas: list[KappaResult] = Field(default_factory=list)
    """Empty when no pair was judged."""
    confusion: list[list[int]] | None = None
    """Rows: people's grade 0-3; columns: the judge's."""
    categories: list[CategoryAgreement] = Field(default_factory=list)
    ranking: Ranking | None = None
    ppi: PPIResult | None = None
    warnings: list[CalibrationWarning] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    spent: Spent | None = None
    """This invocation's calls and their cost (None: not given). The only part of the
    calibration that differs between a run and its replay."""

    @property
    def computable(self) -> bool:
        """Whether any pair was judged (else kappa cannot be computed)."""
        return self.coverage.judged > 0

    @property
    def interval_method(self) -> str:
        return (
            f"{self.level:.0%} percentile bootstrap, {self.resamples:,} resamples, seed {self.seed}"
        )
