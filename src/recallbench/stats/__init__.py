"""Statistics for comparing systems: paired tests and intervals, corrections for multiple
comparisons, power, rank differences and sequential tests."""

from recallbench.stats._attainable import PairedTest, queries_to_reach, smallest_pvalue
from recallbench.stats._beta_binomial import BetaBinomialState, probability_better
from recallbench.stats._multiple import CORRECTIONS, Correction, adjust, benjamini_hochberg, holm
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

__all__ = [
    "CORRECTIONS",
    "DECISIONS",
    "RANK_CLASSES",
    "BetaBinomialState",
    "Correction",
    "Decision",
    "OneSided",
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
    "adjust",
    "bca_interval",
    "benjamini_hochberg",
    "bootstrap_means",
    "classify",
    "holm",
    "minimum_detectable_effect",
    "minimum_differing",
    "paired_results",
    "percentile_interval",
    "probability_better",
    "queries_to_reach",
    "randomisation_pvalues",
    "rank_difference",
    "rank_differences",
    "sample_size",
    "smallest_p",
    "smallest_pvalue",
    "sprt_decisions",
    "t_test_power",
    "worse_pvalue",
]
