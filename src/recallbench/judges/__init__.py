"""LLM judges: providers (any OpenAI-compatible endpoint, a local GGUF model), judge tasks
with versioned prompts, a cache in the history store that replays judgments, agreement with
people (kappa, tau) and prediction-powered inference, and cost.

The commands on top: `recallbench judge` (fill unjudged results: :func:`fill_unjudged`),
`judge calibrate` (:func:`calibrate`), `judge task` and `recallbench qa`. A failed
judgment is never a guess: it scores the neutral 0.5 and is counted.

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
    from recallbench.judges._cache import (
        FileJudgeCache,
        JudgeCache,
        JudgeCacheMissError,
        cache_key,
    )
    from recallbench.judges._calibrate import calibrate
    from recallbench.judges._calibrate_model import Calibration
    from recallbench.judges._calibrate_pairs import human_pairs
    from recallbench.judges._config import JudgeConfig, judge_config
    from recallbench.judges._fill import Filled, Pool, PoolItem, fill_unjudged, unjudged_pool
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
    from recallbench.judges._run import JudgeRun, judge_many, judgment_key
    from recallbench.judges._setup import JudgeSetup, judge_all, open_cache, provider_for
    from recallbench.judges._summary import JudgeSummary, judge_of, label_counts
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
    "Calibration",
    "Completion",
    "FaithfulnessInput",
    "FaithfulnessTask",
    "FileJudgeCache",
    "Filled",
    "JudgeCache",
    "JudgeCacheMissError",
    "JudgeConfig",
    "JudgeRun",
    "JudgeSetup",
    "JudgeStats",
    "JudgeSummary",
    "JudgeTask",
    "Judgment",
    "Kappa",
    "KappaInterval",
    "LocalProvider",
    "MeanEstimate",
    "MergeInput",
    "MergeTask",
    "OpenAIProvider",
    "Pool",
    "PoolItem",
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
    "calibrate",
    "classical_mean",
    "cohen_kappa",
    "confusion_matrix",
    "fill_unjudged",
    "group_agreement",
    "human_pairs",
    "judge_all",
    "judge_config",
    "judge_many",
    "judge_of",
    "judgment_key",
    "kappa_interval",
    "kendall_tau_b",
    "label_counts",
    "open_cache",
    "ppi_mean",
    "provider_for",
    "record_llm_labels",
    "resolved_grades",
    "tau_interval",
    "unjudged_pool",
]

__getattr__ = lazy_exports(
    __name__,
    (
        "_agreement",
        "_cache",
        "_calibrate",
        "_calibrate_model",
        "_calibrate_pairs",
        "_fill",
        "_setup",
        "_summary",
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
