"""Calibration of a relevance judge against people: how far its 0-3 labels can be trusted.

The people are the dataset's own labels (its ``qrels``), less any pair whose
``label_sources`` says an LLM gave it: a judge is never calibrated against a judge. The
judge labels the same (query, memory) pairs with the ``relevance`` task; a failed judgment
gives no label, is counted by reason, and leaves its pair out of every agreement number.

What comes out (``recallbench.calibration/v1``):

- coverage: pairs asked, labelled, failed by reason; tokens and cost;
- Cohen's kappa on the 0-3 scale, unweighted, linear- and quadratic-weighted, and on binary
  labels at the dataset's relevance threshold, each with a percentile bootstrap interval over
  the pairs (seeded). A negative human grade (trec_eval's "judged, never relevant") is 0 on
  the scale;
- the 4 x 4 confusion matrix (rows: people, columns: the judge) and agreement per query
  category;
- given runs of two or more systems and a measure: Kendall's tau-b between the systems'
  ranking under people's labels and under the judge's (the judge's grade replacing the
  person's on every pair it labelled), with a bootstrap interval over queries, always with
  the quadratic kappa beside it: tau compares only the systems' order, which a judge that
  inverts grades can keep (tau 1.0 at quadratic kappa -0.75);
- given runs: prediction-powered means of the measure per system, from a seeded random
  sample of queries treated as the only ones people labelled, beside the classical mean of
  that sample, the judge-only mean and the mean under every person's label (the target);
- warnings: a human sample under :data:`MIN_HUMAN_SAMPLE` queries (the intervals' coverage
  falls short of nominal), tau high while kappa is low;
- what the judgments cost when asked (recorded, replay-stable) and what this invocation
  spent (a replayed judgment costs nothing now).

Cohen (1960, 1968) for kappa, Kendall (1945) for tau-b, Angelopoulos et al. (2023) for
PPI and Angelopoulos, Duchi & Zrnic (2024) for PPI++; the formulas are with the functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import Field

from recallbench.core import ConfigError, Dataset, DatasetRef, Run
from recallbench.core._model import Record
from recallbench.judges._agreement import (
    BINARY,
    GRADES,
    WEIGHTINGS,
    Weighting,
    binary_labels,
    confusion_matrix,
    group_agreement,
    kappa_interval,
    tau_interval,
)
from recallbench.judges._fill import PoolItem, relevance_inputs, without_labels
from recallbench.judges._judgment import MAX_FAILURE_RATE, JudgeStats, Judgment
from recallbench.judges._ppi import MeanEstimate, classical_mean, ppi_mean
from recallbench.judges._task_kinds import Relevance, RelevanceInput
from recallbench.measures import Measure, Rules
from recallbench.measures._dataset_eval import evaluate_dataset

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

FORMAT: Literal["recallbench.calibration/v1"] = "recallbench.calibration/v1"
RESAMPLES = 2_000
"""Bootstrap resamples of every interval: enough for the 2.5% and 97.5% quantiles to settle
to about two decimals on a few hundred pairs, quick on two cores."""
LEVEL = 0.95
NO_CATEGORY = "(none)"
"""The group of queries without a category."""
MIN_HUMAN_SAMPLE = 20
"""Fewest queries labelled by people for the mean intervals to be near their nominal level.
Below it a warning says so: the normal interval, its variance dividing by n, is too narrow
on few values (``benchmarks/ppi_coverage.py``, 20,000 simulated samples per cell: the 95%
intervals held the true mean 0.88-0.94 of the time at 10 labelled queries, PPI++ lowest,
0.79-0.92 at 5, 0.92-0.95 at 20)."""
COVERAGE_AT_10 = "0.88-0.94"
"""The coverage of the 95% intervals at 10 labelled queries, as measured above."""
KAPPA_BESIDE_TAU = 0.4
"""Quadratic kappa below which a positive tau gets a warning: up to 0.40 is "fair" agreement
at best on Landis & Koch's (1977) scale, too little to trust the judge's labels whatever
the systems' order."""


# ---------------------------------------------------------------- the pairs people labelled


@dataclass(frozen=True, slots=True)
class HumanPair:
    """One (query, memory) pair a person labelled."""

    query_id: str
    doc_id: str
    grade: int
    """As in the dataset; may be negative (judged, never relevant)."""
    category: str

    @property
    def scale_grade(self) -> int:
        """The grade on the judge's 0-3 scale: a negative grade is 0."""
        return max(self.grade, 0)


@dataclass(frozen=True, slots=True)
class HumanPairs:
    pairs: list[HumanPair]
    """In the dataset's query order, then its order of judgments."""
    excluded_llm: int
    """Pairs whose label came from an LLM (``label_sources``): not people's labels."""
    no_text: int
    """Pairs naming a memory the dataset does not hold: nothing to show the judge."""


def human_pairs(dataset: Dataset) -> HumanPairs:
    """The pairs people labelled, each with its grade and its query's category."""
    llm = {
        (query, doc)
        for query, by_doc in dataset.label_sources.items()
        for doc, label in by_doc.items()
        if label.source == "llm"
    }
    documents = dataset.documents_by_id
    pairs: list[HumanPair] = []
    excluded = no_text = 0
    for query in dataset.queries:
        for doc, grade in dataset.qrels.get(query.id, {}).items():
            if (query.id, doc) in llm:
                excluded += 1
            elif doc not in documents:
                no_text += 1
            else:
                pairs.append(HumanPair(query.id, doc, grade, query.category or NO_CATEGORY))
    return HumanPairs(pairs, excluded, no_text)


def judge_inputs(dataset: Dataset, pairs: Sequence[HumanPair]) -> list[RelevanceInput]:
    """The judge's input for each pair, built exactly as `recallbench judge` builds it, so
    both commands share cached judgments."""
    items = [PoolItem(pair.query_id, pair.doc_id, 0, ()) for pair in pairs]
    return relevance_inputs(dataset, items)


# ---------------------------------------------------------------- the result model


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


# ---------------------------------------------------------------- computing it


def calibrate(
    dataset: Dataset,
    pairs: HumanPairs,
    judgments: Sequence[Judgment[Relevance]],
    judge: JudgeInfo,
    *,
    runs: Sequence[tuple[str, Run]] = (),
    measure: Measure | None = None,
    human_sample: int | None = None,
    seed: int = 0,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    max_failure_rate: float = MAX_FAILURE_RATE,
    price: Callable[[int, int], float] | None = None,
    stats: JudgeStats | None = None,
    now: datetime | None = None,
) -> Calibration:
    """Compare ``judgments`` (one per pair of ``pairs``, in order) with people's grades.

    ``runs`` are (system name, run) on ``dataset``; with ``measure`` they give the ranking
    (two or more runs) and the PPI means. ``human_sample`` is the number of queries treated
    as labelled by people for PPI (default: all, when PPI has nothing to add). ``stats``
    are the batch's counts: what was asked now and replayed, priced with ``price``."""
    if len(judgments) != len(pairs.pairs):
        raise ValueError(f"{len(judgments)} judgments for {len(pairs.pairs)} pairs")
    if not pairs.pairs:
        raise ConfigError(
            f"{dataset.name}: no pair labelled by people to calibrate against "
            f"({pairs.excluded_llm} LLM labels, {pairs.no_text} without a memory text)"
        )
    if runs and measure is None:
        raise ValueError("runs need a measure")
    notes: list[str] = []
    warnings: list[CalibrationWarning] = []
    coverage = _coverage(pairs, judgments, max_failure_rate, price)
    if coverage.negative_grades:
        notes.append(
            f"{coverage.negative_grades} human grades below 0 (judged, never relevant) count "
            "as 0 on the 0-3 scale."
        )
    if pairs.excluded_llm:
        notes.append(f"{pairs.excluded_llm} labels from an LLM are not people's: left out.")
    if pairs.no_text:
        notes.append(
            f"{pairs.no_text} labelled pairs name a memory the dataset does not hold: not "
            "judged (they keep people's grade under both labellings)."
        )
    judged = [
        (pair, judgment.value.grade)
        for pair, judgment in zip(pairs.pairs, judgments, strict=True)
        if judgment.value is not None
    ]
    result: dict[str, Any] = {}
    if judged:
        human = [pair.scale_grade for pair, _ in judged]
        grades = [grade for _, grade in judged]
        groups = [pair.category for pair, _ in judged]
        threshold = dataset.relevance_threshold
        result["kappas"] = _kappas(human, grades, threshold, resamples, seed, level)
        result["confusion"] = confusion_matrix(human, grades).tolist()
        result["categories"] = _categories(human, grades, groups, threshold)
        if coverage.failed:
            notes.append(
                f"{sum(coverage.failed.values())} failed judgments gave no grade: their pairs "
                "are left out of kappa and unjudged under the judge's labels."
            )
    else:
        notes.append(
            "every judgment failed: kappa, the confusion matrix, the ranking and PPI cannot "
            "be computed."
        )
    if runs and measure is not None and judged:
        scores = _scores(dataset, pairs, judgments, runs, measure)
        quadratic = next(k for k in result["kappas"] if k.weighting == "quadratic")
        result["ranking"] = _ranking(scores, quadratic, resamples, seed, level, notes, warnings)
        result["ppi"] = _ppi(scores, human_sample, seed, level, notes, warnings)
    elif not runs:
        notes.append("no runs given: no system ranking (tau) and no PPI means.")
    return Calibration(
        created_at=now or datetime.now(UTC),
        dataset=dataset.ref,
        relevance_threshold=dataset.relevance_threshold,
        judge=judge,
        coverage=coverage,
        level=level,
        resamples=resamples,
        seed=seed,
        notes=notes,
        warnings=warnings,
        spent=_spent(stats, price) if stats is not None else None,
        **result,
    )


def _spent(stats: JudgeStats, price: Callable[[int, int], float] | None) -> Spent:
    return Spent(
        calls=stats.called,
        replayed=stats.cached,
        tokens_in=stats.tokens_in,
        tokens_out=stats.tokens_out,
        cost_usd=price(stats.tokens_in, stats.tokens_out) if price is not None else None,
    )


def _coverage(
    pairs: HumanPairs,
    judgments: Sequence[Judgment[Relevance]],
    max_failure_rate: float,
    price: Callable[[int, int], float] | None,
) -> Coverage:
    failed: dict[str, int] = {}
    for judgment in judgments:
        if judgment.failure is not None:
            failed[judgment.failure] = failed.get(judgment.failure, 0) + 1
    failures = sum(failed.values())
    rate = failures / len(judgments) if judgments else 0.0
    tokens_in = sum(judgment.tokens_in for judgment in judgments)
    tokens_out = sum(judgment.tokens_out for judgment in judgments)
    return Coverage(
        pairs=len(judgments),
        judged=len(judgments) - failures,
        failed=dict(sorted(failed.items())),
        failure_rate=rate,
        max_failure_rate=max_failure_rate,
        unreliable=rate > max_failure_rate,
        excluded_llm=pairs.excluded_llm,
        excluded_no_text=pairs.no_text,
        negative_grades=sum(1 for pair in pairs.pairs if pair.grade < 0),
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=price(tokens_in, tokens_out) if price is not None else None,
    )


def _kappas(
    human: list[int], judge: list[int], threshold: int, resamples: int, seed: int, level: float
) -> list[KappaResult]:
    """Cohen's weighted kappa on 0-3 and kappa on binary labels, with bootstrap intervals.

    kappa_w = 1 - sum_ij v_ij p_ij / sum_ij v_ij r_i c_j, with v_ij = [i != j] (unweighted,
    Cohen 1960), |i - j| (linear) or (i - j)^2 (quadratic, Cohen 1968); p_ij the share of
    pairs people graded i and the judge j, r and c the margins. The interval resamples the
    pairs (see :func:`recallbench.judges.kappa_interval`)."""
    out = []
    runs: list[tuple[Literal["0-3", "binary"], Weighting, list[int], list[int], tuple[int, ...]]]
    runs = [("0-3", weighting, human, judge, GRADES) for weighting in WEIGHTINGS]
    runs.append(
        (
            "binary",
            "unweighted",
            binary_labels(human, threshold),
            binary_labels(judge, threshold),
            BINARY,
        )
    )
    for labels, weighting, first, second, categories in runs:
        found = kappa_interval(first, second, categories, weighting, resamples, seed, level)
        out.append(
            KappaResult(
                labels=labels,
                weighting=weighting,
                value=found.kappa.value,
                low=found.interval.low,
                high=found.interval.high,
                pairs=len(first),
                undefined=found.kappa.undefined,
                undefined_resamples=found.interval.undefined_resamples,
            )
        )
    return out


def _categories(
    human: list[int], judge: list[int], groups: list[str], threshold: int
) -> list[CategoryAgreement]:
    graded = group_agreement(human, judge, groups, GRADES, "quadratic")
    binary = group_agreement(
        binary_labels(human, threshold), binary_labels(judge, threshold), groups, BINARY
    )
    return [
        CategoryAgreement(
            category=grade.group,
            pairs=grade.n,
            agreement=grade.agreement,
            kappa_quadratic=grade.kappa.value,
            kappa_binary=both.kappa.value,
        )
        for grade, both in zip(graded, binary, strict=True)
    ]


@dataclass(frozen=True, slots=True)
class _Scores:
    """Per-query values of the measure, systems x queries, under both labellings, on the
    queries where every one is defined."""

    measure: str
    systems: list[str]
    query_ids: list[str]
    human: FloatArray
    judge: FloatArray
    dropped: int


def judge_dataset(
    dataset: Dataset, pairs: HumanPairs, judgments: Sequence[Judgment[Relevance]]
) -> Dataset:
    """People's labels with the judge's grade in place of each person's on every pair it
    labelled; a pair whose judgment failed is unjudged (the judge said nothing about it).
    LLM labels the dataset carried are dropped, as in the human labelling."""
    human = without_labels(dataset)
    qrels = {query: dict(judged) for query, judged in human.qrels.items()}
    for pair, judgment in zip(pairs.pairs, judgments, strict=True):
        if judgment.value is None:
            del qrels[pair.query_id][pair.doc_id]
        else:
            qrels[pair.query_id][pair.doc_id] = judgment.value.grade
    return human.replaced(
        qrels={query: judged for query, judged in qrels.items() if judged},
        label_sources={},
    )


def _per_query(dataset: Dataset, run: Run, measure: Measure) -> tuple[FloatArray, BoolArray]:
    rankings = {
        result.query_id: [hit.doc_id for hit in result.hits]
        for result in run.results
        if not result.failed
    }
    rules = Rules(relevance_threshold=dataset.relevance_threshold)
    evaluation = evaluate_dataset(dataset, rankings, [measure], rules)
    name = str(measure)
    if name in evaluation.texts:
        raise ConfigError(f"measure {name} is textual: calibration needs a numeric measure")
    values = np.asarray(evaluation.values[name], dtype=np.float64)
    return values, np.asarray(evaluation.population(name), dtype=bool) & np.isfinite(values)


def _scores(
    dataset: Dataset,
    pairs: HumanPairs,
    judgments: Sequence[Judgment[Relevance]],
    runs: Sequence[tuple[str, Run]],
    measure: Measure,
) -> _Scores:
    human_dataset = without_labels(dataset)
    judged_dataset = judge_dataset(dataset, pairs, judgments)
    human_rows: list[FloatArray] = []
    judge_rows: list[FloatArray] = []
    common = np.ones(len(dataset.queries), dtype=bool)
    for _, run in runs:
        for target, rows in ((human_dataset, human_rows), (judged_dataset, judge_rows)):
            values, population = _per_query(target, run, measure)
            rows.append(values)
            common &= population
    ids = [query.id for query in dataset.queries]
    return _Scores(
        str(measure),
        [name for name, _ in runs],
        [query_id for query_id, kept in zip(ids, common, strict=True) if kept],
        np.vstack(human_rows)[:, common],
        np.vstack(judge_rows)[:, common],
        int((~common).sum()),
    )


def _ranks(means: FloatArray) -> list[int]:
    """Competition ranks, 1 for the highest mean (ties share the better rank)."""
    return [1 + int(np.sum(means > value)) for value in means]


def _ranking(
    scores: _Scores,
    kappa: KappaResult,
    resamples: int,
    seed: int,
    level: float,
    notes: list[str],
    warnings: list[CalibrationWarning],
) -> Ranking | None:
    """Kendall's tau-b between the systems' mean scores under the two labellings, with the
    quadratic ``kappa`` beside it.

    tau_b = (C - D) / sqrt((n0 - t_h)(n0 - t_j)) over the n0 = m(m-1)/2 pairs of the m
    systems: C pairs ordered alike under both labellings, D ordered oppositely, t_h and t_j
    pairs tied under one. Interval: the queries resampled together for every system and
    both labellings (Kendall 1945; :func:`recallbench.judges.tau_interval`).

    tau says nothing about the labels themselves: a judge that inverts grades (3 <-> 0,
    2 <-> 1) keeps the order of systems that differ in how many middle-grade memories they
    find, so tau can be 1.0 at a quadratic kappa of -0.75. A positive tau beside a kappa
    below :data:`KAPPA_BESIDE_TAU` is a warning."""
    if len(scores.systems) < 2:
        notes.append("one run given: a ranking (tau) needs at least two systems.")
        return None
    if len(scores.query_ids) < 2:
        notes.append(
            f"{len(scores.query_ids)} queries have {scores.measure} defined under both "
            "labellings for every system: no ranking (tau)."
        )
        return None
    found = tau_interval(scores.human, scores.judge, resamples, seed, level)
    human, judge = scores.human.mean(axis=1), scores.judge.mean(axis=1)
    systems = [
        SystemScore(system=name, human=float(h), judge=float(j), human_rank=hr, judge_rank=jr)
        for name, h, j, hr, jr in zip(
            scores.systems, human, judge, _ranks(human), _ranks(judge), strict=True
        )
    ]
    if scores.dropped:
        notes.append(
            f"{scores.dropped} queries are left out of the ranking and PPI: {scores.measure} "
            "is undefined for them under one labelling (no relevant memory)."
        )
    tau = found.tau.value
    if tau is not None and tau > 0 and (kappa.value is None or kappa.value < KAPPA_BESIDE_TAU):
        shown = "undefined" if kappa.value is None else f"{kappa.value:.3f}"
        warnings.append(
            CalibrationWarning(
                code="tau-without-agreement",
                message=(
                    f"Kendall's tau-b between the system rankings is {tau:.3f}, but the "
                    f"judge's grades agree little with people's (quadratic kappa {shown}, "
                    f"below {KAPPA_BESIDE_TAU}): tau compares only the order of the systems' "
                    "means, which a judge that inverts grades can keep (tau 1.0 at kappa "
                    "-0.75). Do not read tau as agreement; read kappa."
                ),
            )
        )
    return Ranking(
        measure=scores.measure,
        queries=len(scores.query_ids),
        dropped_queries=scores.dropped,
        tau=tau,
        low=found.interval.low,
        high=found.interval.high,
        undefined=found.tau.undefined,
        undefined_resamples=found.interval.undefined_resamples,
        kappa_quadratic=kappa.value,
        kappa_low=kappa.low,
        kappa_high=kappa.high,
        systems=systems,
    )


def _estimate(found: MeanEstimate, method: str | None = None) -> Estimate:
    return Estimate(
        estimate=found.estimate,
        low=found.low,
        high=found.high,
        standard_error=found.standard_error,
        method=method or found.method,
        labelled=found.labelled,
        unlabelled=found.unlabelled,
        weight=found.weight,
    )


def labelled_sample(queries: int, size: int, seed: int) -> BoolArray:
    """Which of ``queries`` are treated as labelled by people: ``size`` drawn without
    replacement with ``seed`` (the same draw for every system)."""
    chosen = np.zeros(queries, dtype=bool)
    chosen[np.random.default_rng(seed).choice(queries, size=size, replace=False)] = True
    return chosen


def _ppi(
    scores: _Scores,
    human_sample: int | None,
    seed: int,
    level: float,
    notes: list[str],
    warnings: list[CalibrationWarning],
) -> PPIResult | None:
    """Prediction-powered means of the measure per system.

    The n sampled queries play the labelled set (Y: the measure under people's labels,
    f(X): under the judge's); the other N queries the unlabelled set (f(X~): the judge's
    labels only). theta_PP = mean(f(X~)) - mean(f(X) - Y) with the interval
    theta_PP ± z sqrt(var(f~)/N + var(f - Y)/n) (Angelopoulos et al. 2023, Science 382);
    PPI++ weighs the judge by a tuned lambda in [0, 1] (Angelopoulos, Duchi & Zrnic 2024,
    arXiv:2311.01453). Labelled and unlabelled queries are disjoint, as the method needs.
    With every query labelled there is nothing unlabelled to add: PPI is the classical
    mean, and only that is reported."""
    total = len(scores.query_ids)
    if total < 2:
        notes.append(f"{total} queries with {scores.measure} defined: no PPI means.")
        return None
    size = total if human_sample is None else human_sample
    if size < 2:
        raise ConfigError(f"--human-sample must be at least 2 queries, got {size}")
    note = None
    if size > total:
        note = f"--human-sample {size} is more than the {total} queries: all are labelled."
        size = total
    labelled = labelled_sample(total, size, seed)
    if size == total:
        note = (note + " " if note else "") + (
            "Every query is labelled by people, so PPI has no unlabelled queries to borrow "
            "from and equals the classical mean (same estimate, same coverage); give "
            "--human-sample N below the query count to see the judge's correction at work."
        )
    elif total - size < 2:
        note = f"{total - size} unlabelled query: PPI needs at least 2."
    if size < MIN_HUMAN_SAMPLE:
        asked = f" (--human-sample {human_sample})" if human_sample is not None else ""
        warnings.append(
            CalibrationWarning(
                code="small-human-sample",
                message=(
                    f"only {size} queries labelled by people{asked}: with fewer than "
                    f"{MIN_HUMAN_SAMPLE}, the {level:.0%} intervals of the classical mean, "
                    f"PPI and PPI++ hold the true mean less often than {level:.0%} (95% "
                    f"intervals in simulation: {COVERAGE_AT_10} of the time at 10 labelled "
                    "queries, PPI++ lowest; benchmarks/ppi_coverage.py): they are too "
                    f"narrow on so few people's labels. Label at least {MIN_HUMAN_SAMPLE} "
                    "queries."
                ),
            )
        )
    systems = []
    for index, name in enumerate(scores.systems):
        y_all, f_all = scores.human[index], scores.judge[index]
        y, f, f_tilde = y_all[labelled], f_all[labelled], f_all[~labelled]
        usable = f_tilde.size >= 2
        systems.append(
            SystemMeans(
                system=name,
                target=_estimate(classical_mean(y_all, level), "people, every query"),
                classical=_estimate(classical_mean(y, level), "classical (people, sample)"),
                judge_only=_estimate(classical_mean(f_all, level), "judge only"),
                ppi=_estimate(ppi_mean(y, f, f_tilde, level)) if usable else None,
                ppi_tuned=_estimate(ppi_mean(y, f, f_tilde, level, tuned=True)) if usable else None,
            )
        )
    ids = [query_id for query_id, chosen in zip(scores.query_ids, labelled, strict=True) if chosen]
    return PPIResult(
        measure=scores.measure,
        queries=total,
        labelled=size,
        unlabelled=total - size,
        seed=seed,
        labelled_queries=ids,
        note=note,
        systems=systems,
    )
