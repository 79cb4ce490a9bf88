"""The summary of one batch of judgments (:class:`~recallbench.core._judged.JudgeSummary`,
the record a judged number carries; defined in ``core`` because datasets and reports keep
it)."""

from __future__ import annotations

from typing import Any

from recallbench.core._judged import (
    METADATA_KEY,
    JudgeSummary,
    describe,
    judge_of,
    label_counts,
)
from recallbench.judges._judgment import JudgeStats, Judgment

__all__ = ["METADATA_KEY", "JudgeSummary", "describe", "judge_of", "label_counts", "summarize"]


def summarize(
    judgments: list[Judgment[Any]],
    stats: JudgeStats,
    *,
    model: str,
    provider: str,
    prompt: str,
    params: dict[str, Any],
    cost: float,
) -> JudgeSummary:
    """The summary of one batch's judgments."""
    answered = sorted({j.model for j in judgments if j.model and j.model != model})
    return JudgeSummary(
        model=model,
        answered_by=answered,
        provider=provider,
        prompt=prompt,
        params=params,
        judged=len(judgments),
        labelled=sum(1 for judgment in judgments if judgment.value is not None),
        failures=dict(sorted(stats.failed.items())),
        failure_rate=stats.failure_rate,
        max_failure_rate=stats.max_failure_rate,
        unreliable=stats.unreliable,
        tokens_in=sum(judgment.tokens_in for judgment in judgments),
        tokens_out=sum(judgment.tokens_out for judgment in judgments),
        cost_usd=cost,
    )
