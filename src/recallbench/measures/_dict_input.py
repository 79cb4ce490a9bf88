"""``recallbench.evaluate``'s dicts for the Python engine (recallbench's own measures).

``{query: {doc: grade}}`` and ``{query: {doc: score}}`` dicts already in form become the
table trec_eval evaluates without a ranked list per query (:func:`dict_table`); any other
scored run is put in trec_eval's order with one numpy sort (:func:`ranked_scores`). The
compiled engine takes such dicts itself for trec_eval's measures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any

import numpy as np
import numpy.typing as npt

from recallbench.measures._table import BoolArray, IntArray, RankTable, _ranks
from recallbench.measures._trec_eval import trec_query_ids
from recallbench.measures._trec_options import TrecOptions


def ranked_blocks(
    names: list[str], bounds: list[int], docs: list[str], scores: npt.NDArray[np.float64]
) -> dict[str, list[str]]:
    """Each query's documents in trec_eval's order: score descending, then document id
    descending (code-point order of str is UTF-8 byte order, that is strcmp's).

    Runs are usually written best first: then nothing moves. Otherwise the queries with a
    tie or out of order get one numpy sort by (query, score) and each group of tied scores
    a sort of its ids."""
    ranked = {name: docs[a:b] for name, a, b in zip(names, bounds, bounds[1:], strict=False)}
    block = np.repeat(np.arange(len(names)), np.diff(bounds))
    same = block[1:] == block[:-1]
    unsorted = np.unique(block[np.flatnonzero(same & (scores[1:] >= scores[:-1]))])
    if not len(unsorted):
        return ranked
    # only the queries with a tie or out of order: rows by (query, score descending)
    rows = np.concatenate([np.arange(bounds[b], bounds[b + 1]) for b in unsorted.tolist()])
    rows = rows[np.lexsort((-scores[rows], block[rows]))]
    ordered = [docs[i] for i in rows.tolist()]
    tied_score = scores[rows]
    tied = np.flatnonzero(
        (block[rows][1:] == block[rows][:-1]) & (tied_score[1:] == tied_score[:-1])
    )
    if len(tied):
        # runs of consecutive tied positions: group [tied[a], tied[b] + 1]
        opens = np.flatnonzero(np.concatenate(([True], np.diff(tied) != 1)))
        closes = np.append(opens[1:], len(tied)) - 1
        for first, last in zip(tied[opens].tolist(), (tied[closes] + 2).tolist(), strict=True):
            ordered[first:last] = sorted(ordered[first:last], reverse=True)
    start = 0
    for b in unsorted.tolist():
        size = bounds[b + 1] - bounds[b]
        ranked[names[b]] = ordered[start : start + size]
        start += size
    return ranked


def ranked_scores(run: Mapping[Any, Mapping[Any, Any]]) -> dict[str, list[str]] | None:
    """``{query: {doc: score}}`` in trec_eval's order, sorted in numpy rather than as
    Python tuples (5x faster); None when ``the caller's sort must do it: query ids equal once
    made strings (merged there) or a NaN score (sorted there as Python compares it)."""
    names = [q if type(q) is str else str(q) for q in run]
    if len(set(names)) != len(names):
        return None
    docs: list[str] = []
    scores: list[Any] = []
    bounds = [0]
    for scored in run.values():
        docs.extend(scored)
        scores.extend(scored.values())
        bounds.append(len(docs))
    if not set(map(type, docs)) <= {str}:
        docs = [str(doc) for doc in docs]
    values = np.fromiter(map(float, scores), dtype=np.float64, count=len(scores))
    if np.isnan(values).any():
        return None
    return ranked_blocks(names, bounds, docs, values)


MAX_EXACT = 1 << 53
"""Integers of smaller magnitude are exact doubles."""


def dict_table(qrels: Any, run: Any, options: TrecOptions) -> tuple[Any, Any] | None:
    """The table trec_eval evaluates from ``{query: {doc: grade}}`` and ``{query: {doc:
    score}}`` dicts already in form (str ids, int grades, numeric scores, no NaN), and
    which queries the run lacks; None for anything else (then converted and ranked as
    lists). No ranked list is built: each returned document's grade is one dict lookup at
    C speed (NaN when unjudged, so that grades go to numpy in one conversion), only the
    judged ones get a row, the order is checked in numpy, and only groups of tied scores
    are sorted by id."""
    if not (isinstance(qrels, dict) and isinstance(run, dict)):
        return None
    judged_lengths: list[int] = []
    judged_grades: list[int] = []
    for name, judged in qrels.items():
        if type(name) is not str or type(judged) is not dict:
            return None
        given = judged.values()
        if not set(map(type, judged)) <= {str} or not set(map(type, given)) <= {int}:
            return None
        judged_lengths.append(len(judged))
        judged_grades.extend(given)
    grades_in_full = np.array(judged_grades, dtype=np.int64)
    if len(grades_in_full) and np.abs(grades_in_full).max() >= MAX_EXACT:
        return None
    unjudged = float("nan")
    scores: list[Any] = []
    grades: list[float] = []
    lengths: list[int] = []
    nothing: dict[str, int] = {}
    for name, scored in run.items():
        if type(name) is not str or type(scored) is not dict:
            return None
        try:
            "".join(scored)  # a TypeError unless every id is a str
        except TypeError:
            return None  # the lists path converts them
        scores.extend(scored.values())
        grades.extend(map(qrels.get(name, nothing).get, scored, repeat(unjudged)))
        lengths.append(len(scored))
    if not set(map(type, scores)) <= {float, int}:
        return None
    values = np.array(scores, dtype=np.float64)
    if np.isnan(values).any():
        return None
    sizes = np.array(lengths, dtype=np.int64)
    block = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    opens = np.cumsum(sizes) - sizes
    rankings = list(run.values())

    def documents(blocks: Iterable[int]) -> dict[int, str]:
        """Row -> id of every row of ``blocks`` (the queries with tied scores)."""
        ids: dict[int, str] = {}
        for b in blocks:
            start = int(opens[b])
            ids.update(zip(range(start, start + lengths[b]), rankings[b], strict=True))
        return ids

    order = score_order(block, values, documents)
    rank_of = np.arange(len(values), dtype=np.int64) - opens[block]
    if order is not None:
        rank_of[order] = rank_of.copy()
    grade_of = np.array(grades, dtype=np.float64)
    hits = np.flatnonzero(~np.isnan(grade_of))
    return assemble_table(
        list(qrels),
        np.repeat(np.arange(len(judged_lengths), dtype=np.int64), judged_lengths),
        grades_in_full,
        list(run),
        sizes,
        block[hits],
        rank_of[hits],
        grade_of[hits].astype(np.int64),
        options,
    )


def score_order(
    block: Any, values: Any, documents: Callable[[Iterable[int]], dict[int, str]]
) -> Any:
    """trec_eval's order of the rows (score descending, then id descending, within each
    query's block), None when the given order already is; ``documents`` gives the ids of
    the rows of the queries (blocks) it is given, asked only for those with tied scores."""
    same = block[1:] == block[:-1]
    order = None
    if np.any(same & (values[1:] > values[:-1])):
        order = np.lexsort((-values, block))  # stable: ties keep their order until below
        values = values[order]
    tied = np.flatnonzero(same & (values[1:] == values[:-1]))
    if not len(tied):
        return order
    order = np.arange(len(values), dtype=np.int64) if order is None else order
    docs = documents(sorted(set(block[tied].tolist())))
    # runs of consecutive tied positions: one group from tied[a] to tied[b] + 1
    group_opens = np.flatnonzero(np.concatenate(([True], np.diff(tied) != 1)))
    group_closes = np.append(group_opens[1:], len(tied)) - 1
    for first, last in zip(
        tied[group_opens].tolist(), (tied[group_closes] + 2).tolist(), strict=True
    ):
        order[first:last] = sorted(order[first:last].tolist(), key=docs.__getitem__, reverse=True)
    return order


def assemble_table(
    judged_names: Sequence[str],
    judged_query: IntArray,
    judged_grade: IntArray,
    run_names: Sequence[str],
    run_lengths: IntArray,
    hit_block: IntArray,
    hit_rank: IntArray,
    hit_grade: IntArray,
    options: TrecOptions,
) -> tuple[RankTable, BoolArray]:
    """The table trec_eval evaluates, and which of its queries the run lacks, from the
    judgments (query index into ``judged_names``, grade), the run's queries (names and
    lengths) and its judged rows (query index into ``run_names``, 0-based rank in trec
    order, grade); as the columnar join builds it. No document is returned twice."""
    ids = trec_query_ids(judged_names, run_names, options.complete)
    count = len(ids)
    final = {name: index for index, name in enumerate(ids)}
    judged_final = np.array([final.get(n, -1) for n in judged_names], dtype=np.int64)
    block_final = np.array([final.get(n, -1) for n in run_names], dtype=np.int64)

    row_query = block_final[hit_block]
    kept = row_query >= 0
    row_query, rank, grade = row_query[kept], hit_rank[kept], hit_grade[kept]
    # query by query, rank order within each: one integer key, usually already in order
    key = row_query * (int(rank.max(initial=0)) + 1) + rank
    if np.any(key[1:] < key[:-1]):
        by_query = np.argsort(key)  # keys are distinct: no document is returned twice
        row_query, rank, grade = row_query[by_query], rank[by_query], grade[by_query]

    num_ret = np.zeros(count, dtype=np.int64)
    evaluated = block_final >= 0
    num_ret[block_final[evaluated]] = run_lengths[evaluated]
    present = set(run_names)
    missing = np.array([name not in present for name in ids], dtype=bool)
    num_ret[missing] = 1  # trec_eval's one-document stand-in ranking (see STAND_IN)
    # trec_eval cuts at -M first, then -J drops every document without a grade >= 0
    if options.max_docs is not None:
        cut = rank < options.max_docs
        row_query, rank, grade = row_query[cut], rank[cut], grade[cut]
        num_ret = np.minimum(num_ret, options.max_docs)
    if options.judged_only:  # the rest close up their ranks
        judged = grade >= 0
        row_query, rank, grade = row_query[judged], rank[judged], grade[judged]
        rank, num_ret = _ranks(row_query, count)

    query_of_judgment = judged_final[judged_query]
    evaluated_judgment = query_of_judgment >= 0
    table = RankTable.from_columns(
        ids,
        options.relevance_level,
        query=row_query,
        rank=rank.astype(np.int64),
        grade=grade.astype(np.int64),
        num_ret=num_ret,
        judged_query=query_of_judgment[evaluated_judgment],
        judged_grade=judged_grade[evaluated_judgment],
    )
    return table, missing
