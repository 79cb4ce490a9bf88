"""The comparison format, `recallbench.comparison/v2`: paired statistics of systems against a
baseline on the same queries."""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal

from pydantic import Field

from recallbench.core import DatasetRef, RunSpec
from recallbench.core._model import Record
from recallbench.report._model import MeasureInfo

COMPARISON_FORMAT: Final = "recallbench.comparison/v2"

Verdict = Literal["better", "worse", "no significant difference", "not tested"]


class Interval(Record):
    low: float
    high: float


class PairedComparison(Record):
    """A system against the baseline on one measure; differences are system - baseline."""

    system: str
    measure: str
    n: int
    """Paired queries (those in the measure's population, in every input)."""
    mean_baseline: float
    mean_system: float
    delta: float
    ci: Interval | None
    """Bootstrap interval of the mean difference (None with fewer than 2 queries), at
    ``ci_level``: simultaneous over the family when p-values are corrected."""
    ci_level: float | None = None
    """Confidence level of ``ci``: ``1 - (1 - level) / m`` for Holm and Westfall-Young
    (Bonferroni), ``1 - R (1 - level) / m`` for Benjamini-Hochberg (false coverage rate)."""
    p_randomisation: float | None
    p_exact: bool = False
    """Whether the randomisation p-value enumerated every sign assignment."""
    p_t: float | None
    p_wilcoxon: float | None
    p_adjusted: dict[str, float | None]
    """The three p-values corrected for multiple comparisons over the whole table."""
    p_floor: float | None = None
    """The smallest randomisation p-value possible with this many non-zero differences
    (2 / 2^m, or 1 / (resamples + 1) when sampled): at or above alpha, no verdict but
    "no significant difference" can come out, whatever the difference."""
    verdict: Verdict
    """From the adjusted randomisation p-value and the sign of the difference."""
    effect_size: float | None
    """d_z: mean / standard deviation of the differences."""
    wins: int
    """Queries where the system is better than the baseline (in the measure's direction)."""
    ties: int
    losses: int
    mde: float | None = None
    """Minimum detectable effect at this n (paired t-test at the power of the settings and
    alpha / m for a corrected family of m: a conservative bound)."""
    not_available: str | None = None
    """Why effect_size, mde and p_t are missing: too few queries, or differences that do
    not vary."""


class GroupComparison(PairedComparison):
    grouping: Literal["category", "intent"]
    group: str


class RankChange(Record):
    query_id: str
    text: str
    kendall_tau: float
    jaccard: float
    top1_changed: bool
    position_changes: int
    rank_class: str


class RankDifferences(Record):
    """How a system's rankings differ from the baseline's, whatever the judgments say."""

    system: str
    k: int
    queries: int
    classes: dict[str, int]
    """identical / minor / major / incompatible (thresholds in ``methods.rank_classes``)."""
    mean_kendall_tau: float
    mean_jaccard: float
    top1_changed: int
    most_changed: list[RankChange]


class ComparedSystem(Record):
    label: str
    source: str
    kind: Literal["report", "run"]
    system: RunSpec
    failed: int
    """Queries whose search failed (scored 0)."""


class Settings(Record):
    resamples: int
    seed: int
    level: float
    interval: Literal["bca", "percentile"]
    alpha: float
    power: float
    correction: Literal["holm", "bh", "westfall-young", "none"]
    missing: Literal["error", "drop", "zero"]
    k: int
    """Cutoff of the rank differences."""


class QueryCounts(Record):
    dataset: int
    paired: int
    dropped: list[str]
    """Queries left out because some input lacked them (``--missing drop``)."""
    missing_everywhere: int
    """Queries no input answered (scored 0 in each, ties)."""


class Comparison(Record):
    """Systems compared with a baseline (`recallbench.comparison/v2`).

    v2 adds ``ci_level``, ``p_floor`` and ``not_available`` to each comparison and the
    ``westfall-young`` correction; intervals are simultaneous when p-values are corrected
    (v1's were per comparison)."""

    format: Literal["recallbench.comparison/v2"] = COMPARISON_FORMAT
    created_at: datetime
    recallbench_version: str
    dataset: DatasetRef
    baseline: str
    systems: list[ComparedSystem]
    measures: list[MeasureInfo]
    settings: Settings
    methods: dict[str, str]
    """Every statistic in words, with its source."""
    queries: QueryCounts
    comparisons: list[PairedComparison]
    breakdowns: list[GroupComparison] = Field(default_factory=list)
    rank_differences: list[RankDifferences] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
