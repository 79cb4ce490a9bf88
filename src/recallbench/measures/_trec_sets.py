"""trec_eval's named measure sets (``-m official``, ``-m all_trec``) and ``-m`` parsing."""

from __future__ import annotations

from collections.abc import Iterable

from recallbench.core import UnknownMeasureError
from recallbench.measures._measure import Measure, parse_trec_measure, trec_family
from recallbench.measures._trec_names import ALL_TREC, OFFICIAL, TABLE_ORDER


def table_position(measure: Measure) -> int:
    """Where trec_eval prints ``measure``: the table entry whose name its label starts with
    (the longest: ``ndcg_cut_10`` is ``ndcg_cut``'s, not ``ndcg``'s); after every entry for
    a measure trec_eval lacks."""
    label = measure.trec_label()
    matches = [
        index
        for index, name in enumerate(TABLE_ORDER)
        if label == name or label.startswith(name + "_")
    ]
    return max(matches, key=lambda index: len(TABLE_ORDER[index]), default=len(TABLE_ORDER))


def _parameter(measure: Measure) -> float:
    """The number trec_eval sorts a family's parameters by (cutoff, recall level)."""
    if measure.cutoff is not None:
        return float(measure.cutoff)
    value = getattr(measure, "value", None)
    return float(value) if isinstance(value, int | float) else 0.0


def expand_trec_measures(specs: Iterable[str]) -> tuple[list[Measure], bool, list[str]]:
    """Parse ``-m`` arguments: (measures in trec_eval's print order, whether ``runid`` is
    asked for, families of a named set that recallbench does not implement).

    As trec_eval (trec_eval.c ``mark_measure``, meas_init.c): a family named with
    parameters takes the parameters of the first ``-m`` that gives any (``-m P.5 -m P.10``
    is P at 5 only; ``-m all_trec -m relstring.20`` is relstring at 20), else its defaults;
    measures print in trec_eval's table order, a family's cutoffs ascending
    (``-m P.10,5`` prints P_5 first). recallbench's own names (``ndcg@10``) add that one
    measure, printed where trec_eval prints the measure of that label.
    """
    marked: dict[str, str | None] = {}  # trec_eval name -> parameters of the first -m with any
    own: list[Measure] = []
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
            family, dot, params = name.partition(".")
            if trec_family(family) is None:
                own.extend(parse_trec_measure(name))
                continue
            if marked.get(family) is None:
                marked[family] = params if dot else None
    measures: list[Measure] = []
    for family, given in marked.items():
        spec = family if given is None else f"{family}.{given}"
        parsed = parse_trec_measure(spec)
        if len({str(measure) for measure in parsed}) < len(parsed):
            raise UnknownMeasureError(f"trec_eval measure {spec}: duplicate cutoffs")
        measures.extend(parsed)
    unique: dict[str, Measure] = {}
    for measure in sorted(
        [*measures, *own], key=lambda m: (table_position(m), _parameter(m))
    ):  # stable: measures of one position and parameter keep the order named
        unique.setdefault(str(measure), measure)
    return list(unique.values()), runid, missing
