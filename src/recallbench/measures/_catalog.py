"""Which module registers which measure name, so that parsing a name imports one module.

Importing every measure module costs ~0.1-0.3 s (the agent-memory ones import the dataset
models); `recallbench evaluate -m ndcg_cut.10` needs one.
:func:`recallbench.measures._measure.scan_catalog` rebuilds these tables from the modules
themselves; a test checks that they agree.
"""

from __future__ import annotations

import importlib

SPELLINGS: dict[str, tuple[str, ...]] = {
    "average_precision": ("ap", "map", "map_cut"),
    "bpref": ("bpref", "gm_bpref"),
    "chain": ("chain_completeness",),
    "cold_start": ("cold_start_ratio", "mrr_cold", "mrr_warm"),
    "cost": ("dedup_saving", "noise", "token_saving", "tokens"),
    "counts": ("num_q", "num_rel", "num_rel_ret", "num_ret"),
    "diversity": ("folder_redundancy", "ils_folder"),
    "false_surface": ("abstention_error", "false_surface"),
    "gain": ("bin_g", "binary_gain", "bing", "g", "normalized_gain", "trec_g"),
    "gm_map": ("gm_map", "gmap"),
    "hit": ("hit", "hit_rate", "success"),
    "importance": (
        "iw_recall",
        "precision_constitutional",
        "precision_critical",
        "precision_important",
        "precision_normal",
        "precision_temporary",
    ),
    "infap": ("infap", "inferred_ap"),
    "interpolated_precision": ("eleven_pt_avg", "iprec", "iprec_at_recall", "iprec_avg"),
    "judged_counts": ("num_nonrel_judged_ret", "num_nonrel_ret", "unj", "unjudged"),
    "must_surface": ("must_surface",),
    "ndcg": ("ndcg", "ndcg-exp", "ndcg_burges", "ndcg_cut", "ndcg_exp"),
    "ndcg_variants": ("ndcg_rel", "r_ndcg", "rndcg"),
    "precision": ("p", "precision"),
    "rbp": ("rank_biased_precision", "rbp", "rbp_resid", "rbp_residual"),
    "recall": ("r", "recall"),
    "recall_any_all": ("recall_all", "recall_any"),
    "reciprocal_rank": ("mrr", "recip_rank", "reciprocal_rank", "rr"),
    "relative_precision": ("rel_p", "relative_p", "relative_precision"),
    "relstring": ("relstring",),
    "rprec": ("r-prec", "r-precision", "r_prec", "rprec"),
    "rprec_mult": ("r-prec_mult", "rprec_mult"),
    "set_based": (
        "set_ap",
        "set_f",
        "set_f1",
        "set_map",
        "set_p",
        "set_precision",
        "set_recall",
        "set_relative_p",
        "set_relative_precision",
    ),
    "utility": ("utility",),
}
"""Measure module -> the spellings (lower case: names and aliases) it registers."""

TREC_NAMES: dict[str, tuple[str, ...]] = {
    "average_precision": ("map", "map_cut"),
    "bpref": ("bpref", "gm_bpref"),
    "chain": (),
    "cold_start": (),
    "cost": (),
    "counts": ("num_q", "num_rel", "num_rel_ret", "num_ret"),
    "diversity": (),
    "false_surface": (),
    "gain": ("G", "binG"),
    "gm_map": ("gm_map",),
    "hit": ("success",),
    "importance": (),
    "infap": ("infAP",),
    "interpolated_precision": ("11pt_avg", "iprec_at_recall"),
    "judged_counts": ("num_nonrel_judged_ret", "unj"),
    "must_surface": (),
    "ndcg": ("ndcg", "ndcg_cut"),
    "ndcg_variants": ("Rndcg", "ndcg_rel"),
    "precision": ("P",),
    "rbp": ("rbp", "rbp_resid"),
    "recall": ("recall",),
    "recall_any_all": (),
    "reciprocal_rank": ("recip_rank",),
    "relative_precision": ("relative_P",),
    "relstring": ("relstring",),
    "rprec": ("Rprec",),
    "rprec_mult": ("Rprec_mult",),
    "set_based": ("set_F", "set_P", "set_map", "set_recall", "set_relative_P"),
    "utility": ("utility",),
}
"""Measure module -> the trec_eval names (case-sensitive) it registers."""

MODULE_OF = {spelling: module for module, names in SPELLINGS.items() for spelling in names}
TREC_MODULE_OF = {name: module for module, names in TREC_NAMES.items() for name in names}


def modules() -> list[str]:
    """Every public module of the package (each file defines measures)."""
    package = __name__.rpartition(".")[0]
    path = importlib.import_module(package).__path__
    import pkgutil

    return sorted(m.name for m in pkgutil.iter_modules(path) if not m.name.startswith("_"))
