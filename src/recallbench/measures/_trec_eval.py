"""trec_eval's evaluation semantics on recallbench's engine.

trec_eval's defaults differ from `recallbench run`'s (DESIGN §4): a query without relevant
documents is evaluated (scoring 0), and a judged query missing from the run is ignored
unless ``-c``. Options map one to one onto trec_eval's flags.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from recallbench.measures._evaluate import Evaluation, Rules, evaluate_table
from recallbench.measures._measure import Measure
from recallbench.measures._table import build_table


@dataclass(frozen=True)
class TrecOptions:
    """trec_eval's evaluation flags."""

    relevance_level: int = 1
    """``-l``: a document is relevant when its grade is at least this."""
    complete: bool = False
    """``-c``: average over every judged query; those the run lacks score 0."""
    max_docs: int | None = None
    """``-M``: only the first N documents of each ranking count."""
    judged_only: bool = False
    """``-J``: unjudged documents are removed from each ranking before anything else."""

    @property
    def rules(self) -> Rules:
        return Rules(
            missing="zero" if self.complete else "skip",
            no_relevant="zero",
            relevance_threshold=self.relevance_level,
        )


def trec_query_ids(judged: Sequence[str], returned: Sequence[str], complete: bool) -> list[str]:
    """The queries trec_eval evaluates, sorted as strings: judged ones that the run has,
    or every judged one with ``-c``."""
    present = set(returned)
    return sorted(q for q in judged if complete or q in present)


def shape_ranking(
    ranking: Sequence[str], judgments: Mapping[str, int], options: TrecOptions
) -> list[str]:
    """Apply ``-J`` (drop unjudged documents), then ``-M`` (keep the first N)."""
    kept = [doc for doc in ranking if doc in judgments] if options.judged_only else list(ranking)
    return kept if options.max_docs is None else kept[: options.max_docs]


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
        qid: shape_ranking(rankings[qid], qrels.get(qid, {}), options)
        for qid in ids
        if qid in rankings
    }
    table = build_table(qrels, shaped, ids, options.relevance_level)
    missing = np.array([qid not in rankings for qid in ids], dtype=bool)
    return evaluate_table(table, measures, options.rules, missing)
