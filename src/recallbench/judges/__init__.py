"""LLM judges: providers (any OpenAI-compatible endpoint, a local GGUF model), judge tasks
with versioned prompts, a cache in the history store that replays judgments, agreement with
people (kappa, tau) and prediction-powered inference, and cost.

A library so far: `recallbench judge` and the reports and gates that use judged scores are
not built yet. A failed judgment is never a guess: it scores the neutral 0.5 and is counted.

Names are imported on first use (PEP 562): reading a ``[judge]`` configuration does not
load the providers, the store or the statistics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recallbench._lazy import lazy_exports

if TYPE_CHECKING:
    from recallbench.judges._agreement import (
        Kappa,
        KappaInterval,
        Tau,
        TauInterval,
        binary_labels,
        cohen_kappa,
        confusion_matrix,
        group_agreement,
        kappa_interval,
        kendall_tau_b,
        tau_interval,
    )
    from recallbench.judges._cache import JudgeCache, JudgeCacheMissError, cache_key
    from recallbench.judges._config import JudgeConfig, judge_config
    from recallbench.judges._judgment import NEUTRAL, JudgeStats, Judgment
    from recallbench.judges._labels import record_llm_labels, resolved_grades
    from recallbench.judges._local import LocalProvider
    from recallbench.judges._openai import OpenAIProvider
    from recallbench.judges._ppi import MeanEstimate, classical_mean, ppi_mean
    from recallbench.judges._provider import (
        Completion,
        Provider,
        ProviderConnectionError,
        ProviderError,
        ProviderHTTPError,
        ProviderTimeoutError,
        UnparseableOutputError,
        attempt,
    )
    from recallbench.judges._run import JudgeRun, judge_many
    from recallbench.judges._task_kinds import (
        TASKS,
        AnswerInput,
        AnswerTask,
        FaithfulnessInput,
        FaithfulnessTask,
        MergeInput,
        MergeTask,
        RelevanceInput,
        RelevanceTask,
    )
    from recallbench.judges._tasks import JudgeTask

__all__ = [
    "NEUTRAL",
    "TASKS",
    "AnswerInput",
    "AnswerTask",
    "Completion",
    "FaithfulnessInput",
    "FaithfulnessTask",
    "JudgeCache",
    "JudgeCacheMissError",
    "JudgeConfig",
    "JudgeRun",
    "JudgeStats",
    "JudgeTask",
    "Judgment",
    "Kappa",
    "KappaInterval",
    "LocalProvider",
    "MeanEstimate",
    "MergeInput",
    "MergeTask",
    "OpenAIProvider",
    "Provider",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderHTTPError",
    "ProviderTimeoutError",
    "RelevanceInput",
    "RelevanceTask",
    "Tau",
    "TauInterval",
    "UnparseableOutputError",
    "attempt",
    "binary_labels",
    "cache_key",
    "classical_mean",
    "cohen_kappa",
    "confusion_matrix",
    "group_agreement",
    "judge_config",
    "judge_many",
    "kappa_interval",
    "kendall_tau_b",
    "ppi_mean",
    "record_llm_labels",
    "resolved_grades",
    "tau_interval",
]

__getattr__ = lazy_exports(
    __name__,
    (
        "_agreement",
        "_cache",
        "_config",
        "_judgment",
        "_labels",
        "_local",
        "_openai",
        "_ppi",
        "_provider",
        "_run",
        "_task_kinds",
        "_tasks",
    ),
    __all__,
)
