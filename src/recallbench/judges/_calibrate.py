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

The pairs are read in ``_calibrate_pairs``, the result's model is ``_calibrate_model``, the
measure under both labellings ``_calibrate_scores``, the ranking ``_calibrate_ranking``, the
PPI means ``_calibrate_ppi`` and the views ``_calibrate_render``; here the pairs' judgments
become a :class:`Calibration`.

Cohen (1960, 1968) for kappa, Kendall (1945) for tau-b, Angelopoulos et al. (2023) for
PPI and Angelopoulos, Duchi & Zrnic (2024) for PPI++; the formulas are with the functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from recallbench.core import ConfigError, Dataset, Run
from recallbench.judges._agreement import (
    BINARY,
    GRADES,
    WEIGHTINGS,
    Weighting,
    binary_labels,
    confusion_matrix,
    group_agreement,
    kappa_interval,
)
from recallbench.judges._calibrate_model import (
    Calibration,
    CalibrationWarning,
    CategoryAgreement,
    Coverage,
    JudgeInfo,
    KappaResult,
    Spent,
)
from recallbench.judges._calibrate_pairs import HumanPairs
from recallbench.judges._calibrate_ppi import _ppi
from recallbench.judges._calibrate_ranking import _ranking
from recallbench.judges._calibrate_scores import _scores
from recallbench.judges._judgment import MAX_FAILURE_RATE, JudgeStats, Judgment
from recallbench.judges._task_kinds import Relevance
from recallbench.measures import Measure

RESAMPLES = 2_000
"""Bootstrap resamples of every interval: enough for the 2.5% and 97.5% quantiles to settle
to about two decimals on a few hundred pairs, quick on two cores."""
LEVEL = 0.95


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
