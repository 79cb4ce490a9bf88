"""The measure per query and system under both labellings, people's and the judge's (its
grade in place of the person's on every pair it labelled): what the ranking (tau) and the
PPI means of a calibration are computed on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from recallbench.core import ConfigError, Dataset, Run
from recallbench.judges._calibrate_pairs import HumanPairs
from recallbench.judges._fill import without_labels
from recallbench.judges._judgment import Judgment
from recallbench.judges._task_kinds import Relevance
from recallbench.measures import Measure, Rules
from recallbench.measures._dataset_eval import evaluate_dataset

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class _Scores:
    """Per-query values of the measure, systems x queries, under both labellings, on the
    queries where every one is defined."""

    measure: str
    systems: list[str]
    query_ids: list[str]
    human: FloatArray
    judge: FloatArray
    dropped: int


def judge_dataset(
    dataset: Dataset, pairs: HumanPairs, judgments: Sequence[Judgment[Relevance]]
) -> Dataset:
    """People's labels with the judge's grade in place of each person's on every pair it
    labelled; a pair whose judgment failed is unjudged (the judge said nothing about it).
    LLM labels the dataset carried are dropped, as in the human labelling."""
    human = without_labels(dataset)
    qrels = {query: dict(judged) for query, judged in human.qrels.items()}
    for pair, judgment in zip(pairs.pairs, judgments, strict=True):
        if judgment.value is None:
            del qrels[pair.query_id][pair.doc_id]
        else:
            qrels[pair.query_id][pair.doc_id] = judgment.value.grade
    return human.replaced(
        qrels={query: judged for query, judged in qrels.items() if judged},
        label_sources={},
    )


def _per_query(dataset: Dataset, run: Run, measure: Measure) -> tuple[FloatArray, BoolArray]:
    rankings = {
        result.query_id: [hit.doc_id for hit in result.hits]
        for result in run.results
        if not result.failed
    }
    rules = Rules(relevance_threshold=dataset.relevance_threshold)
    evaluation = evaluate_dataset(dataset, rankings, [measure], rules)
    name = str(measure)
    if name in evaluation.texts:
        raise ConfigError(f"measure {name} is textual: calibration needs a numeric measure")
    values = np.asarray(evaluation.values[name], dtype=np.float64)
    return values, np.asarray(evaluation.population(name), dtype=bool) & np.isfinite(values)


def _scores(
    dataset: Dataset,
    pairs: HumanPairs,
    judgments: Sequence[Judgment[Relevance]],
    runs: Sequence[tuple[str, Run]],
    measure: Measure,
) -> _Scores:
    human_dataset = without_labels(dataset)
    judged_dataset = judge_dataset(dataset, pairs, judgments)
    human_rows: list[FloatArray] = []
    judge_rows: list[FloatArray] = []
    common = np.ones(len(dataset.queries), dtype=bool)
    for _, run in runs:
        for target, rows in ((human_dataset, human_rows), (judged_dataset, judge_rows)):
            values, population = _per_query(target, run, measure)
            rows.append(values)
            common &= population
    ids = [query.id for query in dataset.queries]
    return _Scores(
        str(measure),
        [name for name, _ in runs],
        [query_id for query_id, kept in zip(ids, common, strict=True) if kept],
        np.vstack(human_rows)[:, common],
        np.vstack(judge_rows)[:, common],
        int((~common).sum()),
    )
