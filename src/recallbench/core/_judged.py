"""What a judged number must carry: which judge, with which prompt, how often it failed,
and what it cost. Stored in a judged dataset's metadata and copied into every report made
on it, so that a number measured with the judge's labels never travels without them.

The record is part of the data model (a dataset's provenance), so it lives here, below
both the judges that write it (:func:`recallbench.judges._summary.summarize`) and the
reports that copy it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, ValidationError

from recallbench.core._model import Record

if TYPE_CHECKING:
    from recallbench.core import Dataset

METADATA_KEY = "judge"
"""Where a judged dataset keeps its :class:`JudgeSummary` (``metadata.judge``)."""


class JudgeSummary(Record):
    """The judge behind a set of labels, and how it did. Replay-stable: nothing here
    depends on whether a judgment came from the cache or from the model."""

    model: str
    """The model asked (the configuration's name)."""
    answered_by: list[str] = Field(default_factory=list)
    """The model names the answers carried, when the server reported others."""
    provider: str
    """``openai`` (an OpenAI-compatible endpoint) or ``local``. The endpoint's URL is not
    kept here: a replay asks none, and the labels are the same wherever they were asked."""
    prompt: str
    """Task and prompt version, e.g. ``relevance v1``."""
    params: dict[str, Any] = Field(default_factory=dict)
    judged: int
    """Judgments made (pairs judged)."""
    labelled: int
    """Judgments that gave a label."""
    failures: dict[str, int] = Field(default_factory=dict)
    """Failed judgments by reason (they gave no label; a score uses 0.5 for them)."""
    failure_rate: float
    max_failure_rate: float
    unreliable: bool
    """The failure rate is above ``max_failure_rate``: judged numbers are mostly filler."""
    tokens_in: int
    tokens_out: int
    cost_usd: float
    """What the judgments cost at the configured prices (replayed ones at what they cost
    when asked)."""


def describe(summary: JudgeSummary) -> str:
    """One line for terminals and Markdown."""
    failed = sum(summary.failures.values())
    reasons = ", ".join(f"{reason} {n}" for reason, n in summary.failures.items())
    line = (
        f"judge {summary.model} ({summary.provider}), {summary.prompt}: "
        f"{summary.labelled} of {summary.judged} judgments labelled, "
        f"{failed} failed ({summary.failure_rate:.1%}"
        + (f": {reasons}" if reasons else "")
        + f"); {summary.tokens_in + summary.tokens_out:,} tokens, ${summary.cost_usd:.4f}"
    )
    if summary.unreliable:
        line += f"; UNRELIABLE: more than {summary.max_failure_rate:.0%} of judgments failed"
    return line


def label_counts(dataset: Dataset) -> dict[str, int]:
    """Judged pairs by source: ``dataset`` (the authors') and each other source."""
    counts: dict[str, int] = {"dataset": sum(len(judged) for judged in dataset.qrels.values())}
    for by_doc in dataset.label_sources.values():
        for label in by_doc.values():
            counts[label.source] = counts.get(label.source, 0) + 1
            counts["dataset"] -= 1
    return counts


def judge_of(dataset: Dataset) -> JudgeSummary | None:
    """The judge a judged dataset names in ``metadata.judge``; None when it names none,
    or in a shape this version does not read (metadata is free-form: not an error)."""
    data = dataset.metadata.get(METADATA_KEY)
    if not isinstance(data, dict):
        return None
    try:
        return JudgeSummary.model_validate(data)
    except ValidationError:
        return None
