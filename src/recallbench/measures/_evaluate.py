"""Evaluate rankings against judgments under explicit, named rules (DESIGN §4)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from recallbench.measures._measure import Measure
from recallbench.measures._table import BoolArray, FloatArray, RankTable, build_table


@dataclass(frozen=True)
class Rules:
    """How queries enter the means. Every report names the rules it used."""

    missing: Literal["zero", "skip"] = "zero"
    """A judged query the run lacks (or that failed): scored 0 and averaged ("zero",
    trec_eval -c), or left out of the means ("skip", trec_eval's default)."""
    no_relevant: Literal["exclude", "zero"] = "exclude"
    """A query without any relevant judged document: left out of the means and counted
    ("exclude"), or scored 0 like trec_eval ("zero")."""
    relevance_threshold: int = 1
    """Binary measures count a document relevant when its grade is at least this."""
    equivalence: bool = False
    """Count a hit on any member of a class of interchangeable memories once for the class
    (the dataset's ``equivalence`` classes)."""

    def describe(self) -> dict[str, str]:
        described = {
            "ordering": "system results in the order returned; imported TREC runs by score "
            "descending, ties by document id descending (trec_eval)",
            "missing_or_failed_queries": (
                "scored 0 and counted in the means (trec_eval -c)"
                if self.missing == "zero"
                else "left out of the means (trec_eval default)"
            ),
            "queries_without_relevant_documents": (
                "left out of the means and counted separately"
                if self.no_relevant == "exclude"
                else "scored 0 and counted in the means (trec_eval)"
            ),
            "relevance": f"a document is relevant when its grade >= {self.relevance_threshold}",
            "duplicates": "a document returned twice counts once, at its first rank; "
            "later copies keep their place but earn nothing",
            "gains": "ndcg: gain = grade; ndcg_exp: gain = 2^grade - 1; discount 1/log2(rank+1)",
            "rounding": "none before rendering",
        }
        if self.equivalence:
            described["equivalence"] = (
                "the members of an equivalence class are one memory: its grade is the best "
                "member's, a hit on any member counts once, at the class's first rank"
            )
        return described


@dataclass(frozen=True, eq=False)
class Evaluation:
    """Per-query values of every measure, and which queries enter the means."""

    query_ids: tuple[str, ...]
    values: Mapping[str, FloatArray]
    """Canonical measure name -> value per query (in ``query_ids`` order)."""
    included: BoolArray
    """Whether each query enters the means."""
    missing: BoolArray
    """Judged queries absent from the run (or failed)."""
    no_relevant: BoolArray
    """Queries without any relevant judged document."""
    measures: Mapping[str, Measure] = field(default_factory=dict)
    """Canonical name -> measure, in the order asked for."""
    texts: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Per-query strings of textual measures (relstring), in ``query_ids`` order."""
    duplicates: Mapping[str, int] = field(default_factory=dict)
    rules: Rules = field(default_factory=Rules)
    populations: Mapping[str, BoolArray] = field(default_factory=dict)
    """Measures that define their own population (agent-memory measures)."""
    aggregates: Mapping[str, float] = field(default_factory=dict)
    """Measures whose aggregate is not computed from per-query values (ratios of means)."""
    details: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    """Measure -> query id -> items the report lists (memories a query missed)."""

    def population(self, measure: str) -> BoolArray:
        """The queries ``measure``'s mean takes: the included ones, or for an abstention
        measure the queries without a relevant document (those the run has, unless missing
        queries score 0), or the population an agent-memory measure defines."""
        if measure in self.populations:
            return self.populations[measure]
        if self.measures[measure].population == "answerable":
            return self.included
        present = ~self.missing if self.rules.missing == "skip" else np.ones_like(self.missing)
        return present & self.no_relevant

    def mean(self, measure: str) -> float:
        """The measure's aggregate over its population (the arithmetic mean for all but a
        few, such as gm_map's geometric mean and sums for counts); NaN when none."""
        if measure in self.aggregates:
            return self.aggregates[measure]
        chosen = self.values[measure][self.population(measure)]
        if not len(chosen):
            return float("nan")
        return self.measures[measure].aggregate(chosen)

    def means(self) -> dict[str, float]:
        """Aggregates of the numeric measures (textual ones have none)."""
        return {name: self.mean(name) for name in self.values if name not in self.texts}

    def __repr__(self) -> str:
        """The means with the number of queries each takes, and the rules that chose them:
        a mean is never shown without its population."""
        shown = []
        for name in self.values:
            if name in self.texts:
                continue
            count = int(self.population(name).sum()) if name not in self.aggregates else None
            value = self.mean(name)
            shown.append(f"{name}={value:.4f}" + (f" (n={count})" if count is not None else ""))
        left = []
        if no_relevant := int((self.no_relevant & ~self.included).sum()):
            left.append(f"{no_relevant} without a relevant judgment")
        if missing := int((self.missing & ~self.included).sum()):
            left.append(f"{missing} missing from the run")
        population = f"{int(self.included.sum())} of {len(self.query_ids)} queries in the means"
        if left:
            population += f" (left out: {', '.join(left)})"
        rules = self.rules
        missing_rule = "score 0" if rules.missing == "zero" else "left out"
        said = (
            f"rules: missing or failed queries {missing_rule}"
            f", queries without a relevant judgment "
            f"{'left out' if rules.no_relevant == 'exclude' else 'score 0'}"
            f", relevant at grade >= {rules.relevance_threshold}"
        )
        return f"Evaluation({', '.join(shown)}; {population}; {said})"

    @property
    def included_ids(self) -> list[str]:
        return [qid for qid, chosen in zip(self.query_ids, self.included, strict=True) if chosen]

    def per_query(self, query_id: str) -> dict[str, float]:
        index = self.query_ids.index(query_id)
        return {name: float(values[index]) for name, values in self.values.items()}


def evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    rankings: Mapping[str, Sequence[str]],
    measures: Sequence[Measure],
    rules: Rules | None = None,
    query_ids: Sequence[str] | None = None,
) -> Evaluation:
    """Compute ``measures`` for every query, all queries at once.

    ``query_ids`` defaults to the judged queries. Queries in ``rankings`` outside that set
    are ignored, like trec_eval does. Nothing passed in is modified.
    """
    rules = rules or Rules()
    ids = list(qrels) if query_ids is None else list(query_ids)
    table = build_table(qrels, rankings, ids, rules.relevance_threshold)
    missing = np.array([qid not in rankings for qid in ids], dtype=bool)
    return evaluate_table(table, measures, rules, missing)


def evaluate_table(
    table: RankTable, measures: Sequence[Measure], rules: Rules, missing: BoolArray
) -> Evaluation:
    """Compute ``measures`` on a built table; ``missing`` marks queries the run lacks."""
    no_relevant = table.num_rel == 0
    included = np.ones(table.num_queries, dtype=bool)
    if rules.missing == "skip":
        included &= ~missing
    if rules.no_relevant == "exclude":
        included &= ~no_relevant
    by_name = {str(measure): measure for measure in measures}
    ids = table.query_ids
    return Evaluation(
        query_ids=ids,
        values={name: measure.compute(table) for name, measure in by_name.items()},
        included=included,
        missing=missing,
        no_relevant=no_relevant,
        measures=by_name,
        texts={name: texts for name, m in by_name.items() if (texts := m.texts(table)) is not None},
        duplicates={qid: int(n) for qid, n in zip(ids, table.duplicates, strict=True) if n},
        rules=rules,
    )
