"""Statistics for comparing systems: paired tests and intervals, corrections for multiple
comparisons, power, rank differences and sequential tests.

Names are imported on first use (PEP 562): a command that needs one module (`history`
needs the resampling) does not pay for scipy.stats, which others load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recallbench._lazy import lazy_exports

if TYPE_CHECKING:
    from recallbench.stats._attainable import PairedTest, queries_to_reach, smallest_pvalue
    from recallbench.stats._beta_binomial import BetaBinomialState, probability_better
    from recallbench.stats._bounded_cs import (
        BoundedCsSettings,
        BoundedPath,
        bounded_cs_path,
        bounded_decisions,
    )
    from recallbench.stats._bounded_stream import BoundedCS
    from recallbench.stats._interleaving import (
        Interleaving,
        InterleavingSummary,
        Outcome,
        Team,
        summarise,
        summary_from_counts,
        team_draft,
    )
    from recallbench.stats._msprt import (
        DEFAULT_TAU,
        MixtureSPRT,
        MsprtPath,
        MsprtSettings,
        first_rejections,
        mixture_likelihood_ratio,
        msprt_path,
    )
    from recallbench.stats._multiple import (
        CORRECTIONS,
        Correction,
        adjust,
        benjamini_hochberg,
        holm,
    )
    from recallbench.stats._one_sided import OneSided, minimum_differing, smallest_p, worse_pvalue
    from recallbench.stats._paired import PairedResult, PairedSettings, paired_results
    from recallbench.stats._power import (
        SampleSize,
        minimum_detectable_effect,
        sample_size,
        t_test_power,
    )
    from recallbench.stats._rankdiff import (
        RANK_CLASSES,
        RankClass,
        RankDifference,
        RankDiffSummary,
        classify,
        rank_difference,
        rank_differences,
    )
    from recallbench.stats._resampling import (
        bca_interval,
        bootstrap_means,
        percentile_interval,
        randomisation_pvalues,
    )
    from recallbench.stats._sprt import (
        DECISIONS,
        Decision,
        PairedSPRT,
        SprtSettings,
        SprtState,
        sprt_decisions,
    )
    from recallbench.stats._srm import SRM_THRESHOLD, SrmResult, sample_ratio_check

__all__ = [
    "CORRECTIONS",
    "DECISIONS",
    "DEFAULT_TAU",
    "RANK_CLASSES",
    "SRM_THRESHOLD",
    "BetaBinomialState",
    "BoundedCS",
    "BoundedCsSettings",
    "BoundedPath",
    "Correction",
    "Decision",
    "Interleaving",
    "InterleavingSummary",
    "MixtureSPRT",
    "MsprtPath",
    "MsprtSettings",
    "OneSided",
    "Outcome",
    "PairedResult",
    "PairedSPRT",
    "PairedSettings",
    "PairedTest",
    "RankClass",
    "RankDiffSummary",
    "RankDifference",
    "SampleSize",
    "SprtSettings",
    "SprtState",
    "SrmResult",
    "Team",
    "adjust",
    "bca_interval",
    "benjamini_hochberg",
    "bootstrap_means",
    "bounded_cs_path",
    "bounded_decisions",
    "classify",
    "first_rejections",
    "holm",
    "minimum_detectable_effect",
    "minimum_differing",
    "mixture_likelihood_ratio",
    "msprt_path",
    "paired_results",
    "percentile_interval",
    "probability_better",
    "queries_to_reach",
    "randomisation_pvalues",
    "rank_difference",
    "rank_differences",
    "sample_ratio_check",
    "sample_size",
    "smallest_p",
    "smallest_pvalue",
    "sprt_decisions",
    "summarise",
    "summary_from_counts",
    "t_test_power",
    "team_draft",
    "worse_pvalue",
]

__getattr__ = lazy_exports(
    __name__,
    (
        "_attainable",
        "_beta_binomial",
        "_bounded_cs",
        "_bounded_stream",
        "_interleaving",
        "_msprt",
        "_multiple",
        "_one_sided",
        "_paired",
        "_power",
        "_rankdiff",
        "_resampling",
        "_sprt",
        "_srm",
    ),
    __all__,
)
