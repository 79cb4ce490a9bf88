"""trec_eval's evaluation semantics on recallbench's engine.

trec_eval's defaults differ from `recallbench run`'s (DESIGN §4): a query without relevant
documents is evaluated (scoring 0), and a judged query missing from the run is ignored
unless ``-c``. Options map one to one onto trec_eval's flags.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from recallbench.measures._evaluate import Evaluation, evaluate_table
from recallbench.measures._gains import positive_judged
from recallbench.measures._measure import Measure
from recallbench.measures._table import BoolArray, RankTable, build_table
from recallbench.measures._trec_options import TrecOptions as TrecOptions  # re-exported

STAND_IN = "ceci_nest_pas_un_docno"
"""With ``-c``, trec_eval evaluates a judged query the run lacks as a ranking of this one
unjudged document (trec_eval.c ``bogus_ranking``); it counts where a measure divides by
the number returned (iprec_at_recall: 0, not NaN) unless ``-J`` removes it."""

STAND_IN_CLEARED = ("num_ret", "utility", "rbp_resid")
"""Labels whose value trec_eval resets to 0 for a stand-in ranking (and every ``unj*``
label, and ``relstring``'s text); compared as trec_eval does, by printed label, so that
``relstring_4`` or ``utility_2,-1,0,0`` keep what the stand-in gave them."""


def trec_query_ids(judged: Sequence[str], returned: Sequence[str], complete: bool) -> list[str]:
    """The queries trec_eval evaluates, sorted as strings: judged ones that the run has,
    or every judged one with ``-c``."""
    present = set(returned)
    return sorted(q for q in judged if complete or q in present)


def shape_ranking(
    ranking: Sequence[str], judgments: Mapping[str, int], options: TrecOptions
) -> list[str]:
    """Apply ``-M`` (keep the first N), then ``-J`` (drop documents without a grade of 0 or
    more: unjudged ones and those graded below 0), in trec_eval's order
    (form_res_rels.c cuts at N before it drops)."""
    kept = list(ranking) if options.max_docs is None else list(ranking[: options.max_docs])
    if options.judged_only:
        kept = [doc for doc in kept if judgments.get(doc, -1) >= 0]
    return kept


def evaluate_trec(
    qrels: Mapping[str, Mapping[str, int]],
    rankings: Mapping[str, Sequence[str]],
    measures: Sequence[Measure],
    options: TrecOptions | None = None,
) -> Evaluation:
    """Evaluate ordered rankings as trec_eval would (rankings already in trec order)."""
    options = options or TrecOptions()
    ids = trec_query_ids(list(qrels), list(rankings), options.complete)
    shaped = {
        qid: shape_ranking(rankings.get(qid, (STAND_IN,)), qrels.get(qid, {}), options)
        for qid in ids
    }
    table = build_table(qrels, shaped, ids, options.relevance_level)
    missing = np.array([qid not in rankings for qid in ids], dtype=bool)
    return evaluate_trec_table(table, measures, options, missing)


def evaluate_trec_table(
    table: RankTable, measures: Sequence[Measure], options: TrecOptions, missing: BoolArray
) -> Evaluation:
    """:func:`evaluate_table` with trec_eval's own conventions on top (both engine paths end
    here): values of a stand-in ranking reset as trec_eval resets them, NaN where trec_eval
    divides 0 by 0 (see :func:`_undefined`), and with ``-c`` the
    summary ``num_rel`` counts every judgment graded above 0 whatever ``-l`` says
    (m_num_rel.c ``te_calc_avg_num_rel`` reads the qrels again)."""
    evaluation = evaluate_table(table, measures, options.rules, missing)
    values, texts = dict(evaluation.values), dict(evaluation.texts)
    aggregates = dict(evaluation.aggregates)
    for name, measure in evaluation.measures.items():
        label = measure.trec_label()
        if missing.any() and (label in STAND_IN_CLEARED or label.startswith("unj")):
            values[name] = np.where(missing, 0.0, values[name])
        if missing.any() and label == "relstring":
            texts[name] = [
                "" if absent else text for text, absent in zip(texts[name], missing, strict=True)
            ]
        if options.complete and label == "num_rel":
            aggregates[name] = float(np.count_nonzero(table.judged_grade > 0))
        undefined = _undefined(measure, table)
        if undefined is not None:
            values[name] = np.where(undefined, np.nan, values[name])
    return replace(evaluation, values=values, texts=texts, aggregates=aggregates)


def _undefined(measure: Measure, table: RankTable) -> BoolArray | None:
    """Queries where trec_eval's value of ``measure`` is NaN: its 0/0 on an empty ranking
    (interpolated precision), or on a query whose relevant documents all have gain 0
    (Rndcg under ``-l 0``: no R level to average over).

    The two measure modules are looked up, not imported: a measure of theirs exists only
    once they are, and importing them for nothing cost ~8 ms of every evaluation."""
    variants = sys.modules.get("recallbench.measures.ndcg_variants")
    if variants is not None and isinstance(measure, variants.RNDCG):
        # relevant documents (-l 0) but no positive gain: 0/0
        undefined_points: BoolArray = (table.num_rel > 0) & (positive_judged(table) == 0)
        return undefined_points
    interpolated = sys.modules.get("recallbench.measures.interpolated_precision")
    if interpolated is None:
        return None
    levels: tuple[float, ...] = ()
    if isinstance(measure, interpolated.InterpolatedPrecision):
        levels = (measure.level,)
    elif isinstance(measure, interpolated.InterpolatedPrecisionAverage):
        levels = measure.levels
    if not levels:
        return None
    undefined: BoolArray = np.any(interpolated.undefined_when_empty(table, levels), axis=0)
    return undefined
