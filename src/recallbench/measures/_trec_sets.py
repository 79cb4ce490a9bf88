"""trec_eval's named measure sets (``-m official``, ``-m all_trec``) and ``-m`` parsing."""

from __future__ import annotations

from collections.abc import Iterable

from recallbench.measures._measure import Measure, parse_trec_measure, trec_family

OFFICIAL = (
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "iprec_at_recall",
    "P",
)
"""trec_eval's default measures, in its print order."""

ALL_TREC = (
    *OFFICIAL,
    "relstring",
    "recall",
    "infAP",
    "gm_bpref",
    "Rprec_mult",
    "utility",
    "11pt_avg",
    "binG",
    "G",
    "ndcg",
    "ndcg_rel",
    "Rndcg",
    "ndcg_cut",
    "map_cut",
    "relative_P",
    "success",
    "set_P",
    "set_relative_P",
    "set_recall",
    "set_map",
    "set_F",
    "num_nonrel_judged_ret",
    "rbp",
    "rbp_resid",
    "unj",
)
"""``-m all_trec``, in trec_eval's print order."""


def expand_trec_measures(specs: Iterable[str]) -> tuple[list[Measure], bool, list[str]]:
    """Parse ``-m`` arguments: (measures without repeats, whether ``runid`` is asked for,
    families of a named set that recallbench does not implement).

    As in trec_eval, naming a family again replaces its parameters: ``-m all_trec -m
    relstring.20`` gives relstring at 20 only, in all_trec's place.
    """
    families: dict[str, list[Measure]] = {}
    runid = False
    missing: list[str] = []
    for spec in specs:
        names: Iterable[str] = (
            OFFICIAL if spec == "official" else ALL_TREC if spec == "all_trec" else (spec,)
        )
        for name in names:
            if name == "runid":
                runid = True
                continue
            if spec in ("official", "all_trec") and trec_family(name) is None:
                missing.append(name)
                continue
            family = name.partition(".")[0] if trec_family(name.partition(".")[0]) else name
            families[family] = parse_trec_measure(name)
    unique: dict[str, Measure] = {}
    for measures in families.values():
        for measure in measures:
            unique.setdefault(str(measure), measure)
    return list(unique.values()), runid, missing
