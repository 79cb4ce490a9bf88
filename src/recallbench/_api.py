"""`recallbench.evaluate`: measures from judgments and a run, whatever form they take."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any, Literal

import numpy as np

from recallbench.core._errors import ConfigError
from recallbench.measures._evaluate import Evaluation
from recallbench.measures._measure import Measure
from recallbench.measures._trec_options import TrecOptions
from recallbench.measures._trec_sets import expand_trec_measures

QUERY_COLUMNS = ("query_id", "qid", "query", "q_id", "query-id", "topic")
DOC_COLUMNS = ("doc_id", "docno", "docid", "doc", "corpus_id", "corpus-id", "document")
GRADE_COLUMNS = ("relevance", "grade", "rel", "label", "score", "judgment")
SCORE_COLUMNS = ("score", "rank_score", "similarity")


def _column(frame: Any, names: Sequence[str], role: str) -> list[Any]:
    for name in names:
        if name in frame.columns:
            return list(frame[name])
    raise ConfigError(
        f"no {role} column; expected one of {', '.join(names)}, "
        f"got {', '.join(map(str, frame.columns))}"
    )


def _as_qrels(qrels: Any) -> dict[str, dict[str, int]]:
    from recallbench.datasets._trec import read_trec_qrels

    if isinstance(qrels, str | os.PathLike):
        from pathlib import Path

        return read_trec_qrels(Path(qrels))
    if _is_dataset(qrels):
        return {q: dict(j) for q, j in qrels.qrels.items()}
    if hasattr(qrels, "columns"):  # a pandas or polars frame
        judged: dict[str, dict[str, int]] = {}
        rows = zip(
            _column(qrels, QUERY_COLUMNS, "query"),
            _column(qrels, DOC_COLUMNS, "document"),
            _column(qrels, GRADE_COLUMNS, "grade"),
            strict=True,
        )
        for query, doc, grade in rows:
            judged.setdefault(str(query), {})[str(doc)] = int(grade)
        return judged
    if isinstance(qrels, Mapping):
        judged = {}
        for q, j in qrels.items():
            if (
                type(q) is str
                and set(map(type, j)) <= {str}
                and set(map(type, j.values())) <= {int}
            ):
                judged[q] = j  # already in form: read, never modified (copying cost 3x more)
            else:
                judged[str(q)] = {str(d): int(g) for d, g in j.items()}
        return judged
    raise ConfigError(f"cannot read judgments from a {type(qrels).__name__}")


def _trec_sorted(scored: Iterable[tuple[str, str, float]]) -> dict[str, list[str]]:
    per_query: dict[str, list[tuple[float, str]]] = {}
    for query, doc, score in scored:
        per_query.setdefault(str(query), []).append((float(score), str(doc)))
    return {q: [d for _, d in sorted(pairs, reverse=True)] for q, pairs in per_query.items()}


def _ranked_scores(run: Mapping[Any, Mapping[Any, Any]]) -> dict[str, list[str]] | None:
    """``{query: {doc: score}}`` in trec_eval's order, sorted in numpy rather than as
    Python tuples (5x faster); None when ``_trec_sorted`` must do it: query ids equal once
    made strings (merged there) or a NaN score (sorted there as Python compares it)."""
    from recallbench.datasets._trec_split import ranked_blocks

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


def _dict_table(qrels: Any, run: Any, options: TrecOptions) -> tuple[Any, Any] | None:
    """The table trec_eval evaluates from ``{query: {doc: grade}}`` and ``{query: {doc:
    score}}`` dicts already in form (str ids, int grades, numeric scores, no NaN), and
    which queries the run lacks; None for anything else (then converted and ranked as
    lists). No ranked list is built: each returned document's grade is one dict lookup at
    C speed (NaN when unjudged, so that grades go to numpy in one conversion), only the
    judged ones get a row, the order is checked in numpy, and only groups of tied scores
    are sorted by id."""
    from recallbench.measures._trec_bytes import assemble_table

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

    order = _score_order(block, values, documents)
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


def _score_order(
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


def _as_rankings(run: Any) -> dict[str, list[str]]:
    from recallbench.datasets._trec import read_trec_rankings

    if isinstance(run, str | os.PathLike):
        from pathlib import Path

        return read_trec_rankings(Path(run))[0]
    if _is_run(run):  # the order as returned
        return {r.query_id: [h.doc_id for h in r.hits] for r in run.results if not r.failed}
    if hasattr(run, "columns"):
        return _trec_sorted(
            zip(
                _column(run, QUERY_COLUMNS, "query"),
                _column(run, DOC_COLUMNS, "document"),
                _column(run, SCORE_COLUMNS, "score"),
                strict=True,
            )
        )
    if isinstance(run, Mapping):
        first = next(iter(run.values()), None)
        if isinstance(first, Mapping):  # query -> {doc: score}, ordered as trec_eval
            ranked = _ranked_scores(run)
            if ranked is not None:
                return ranked
            return _trec_sorted((q, d, s) for q, scored in run.items() for d, s in scored.items())
        return {str(q): [str(d) for d in ranking] for q, ranking in run.items()}
    raise ConfigError(f"cannot read a run from a {type(run).__name__}")


def _compiled(
    qrels: Any, run: Any, specs: list[str], parsed: list[Measure], options: TrecOptions
) -> Evaluation | None:
    """The evaluation by the compiled engine of dicts in form or two plain files (see
    :mod:`recallbench.measures._trec_native`), None when it declines them or the measures.
    gm_map's per-query value is average precision here, as the Python engine gives it (the
    geometric mean is taken over the queries). ``parsed`` are ``specs`` expanded."""
    from recallbench.measures import _trec_native

    chosen = _trec_native.families(specs)
    if chosen is None or options.relevance_level < 0:
        return None  # below 0, the Python engine's num_rel differs from trec_eval's
    gm_map, map_code = _trec_native.FAMILIES["gm_map"], _trec_native.FAMILIES["map"]
    done = _trec_native.evaluate_values(
        qrels,
        run,
        [(map_code if code == gm_map else code, p, labels) for code, p, labels in chosen[0]],
        relevance_level=options.relevance_level,
        complete=options.complete,
        max_docs=options.max_docs,
        judged_only=options.judged_only,
    )
    if done is None:
        return None
    names, columns, missing_list, num_rel, complete_num_rel = done
    by_name = {str(measure): measure for measure in parsed}
    missing = np.array(missing_list, dtype=bool)
    aggregates = {  # as evaluate_trec_table: every judgment graded above 0, whatever -l
        name: float(complete_num_rel)
        for name, measure in by_name.items()
        if options.complete and measure.trec_label() == "num_rel"
    }
    return Evaluation(
        query_ids=tuple(names),
        values={name: np.array(column) for name, column in zip(by_name, columns, strict=True)},
        included=np.ones(len(names), dtype=bool) if options.complete else ~missing,
        missing=missing,
        no_relevant=np.array(num_rel) == 0,
        measures=by_name,
        rules=options.rules,
        aggregates=aggregates,
    )


def _is_dataset(value: Any) -> bool:
    return hasattr(value, "qrels") and hasattr(value, "documents")


def _is_run(value: Any) -> bool:
    return hasattr(value, "results") and hasattr(value, "spec")


def _report_rules(dataset: Any, run: Any, measures: list[Measure]) -> Evaluation:
    """The run report's evaluation (``recallbench run``, DESIGN §4): every query of the
    dataset, failed or absent ones scored 0, queries without a relevant judgment left out
    of the means and counted, relevant at the dataset's threshold."""
    from recallbench.measures._dataset_eval import evaluate_dataset
    from recallbench.measures._evaluate import Rules

    rankings = {r.query_id: [h.doc_id for h in r.hits] for r in run.results if not r.failed}
    rules = Rules(relevance_threshold=dataset.relevance_threshold)
    return evaluate_dataset(dataset, rankings, measures, rules)


def evaluate(
    qrels: Any,
    run: Any,
    measures: Iterable[str | Measure] = ("ndcg@10", "mrr@10", "recall@10", "P@10", "map"),
    *,
    rules: Literal["report", "trec"] | None = None,
    relevance_level: int | None = None,
    complete: bool | None = None,
    max_docs: int | None = None,
    judged_only: bool | None = None,
) -> Evaluation:
    """Evaluate a run against judgments.

    ``qrels``: a TREC qrels path, a ``Dataset``, ``{query: {doc: grade}}``, or a pandas or
    polars frame with query, document and grade columns. ``run``: a TREC run path, a
    ``Run`` (scored in the order returned), ``{query: {doc: score}}`` or a frame with query,
    document and score columns (ordered by score descending, ties by document id
    descending), or ``{query: [doc, ...]}`` (already ranked). ``measures``: recallbench
    names (``ndcg@10``) or trec_eval names (``ndcg_cut.10``, ``official``).

    ``rules``: which queries enter the means. ``"report"`` (the default for a ``Dataset``
    and a ``Run``): the rules of ``recallbench run``'s report, so both give one number:
    failed or absent queries score 0, queries without a relevant judgment are left out and
    counted, relevant means grade >= the dataset's threshold. ``"trec"`` (the default for
    every other input): trec_eval's, with its ``-l``, ``-c``, ``-M`` and ``-J`` as the
    options (queries without a relevant judgment score 0; without ``-c`` judged queries the
    run lacks are left out). A frame has no row for a query that returned nothing, so every
    judged query a run frame lacks is read as an empty ranking (scored 0, never dropped).
    The returned :class:`Evaluation` names its rules and population in its repr.

    >>> result = evaluate({"q": {"a": 1}}, {"q": ["b", "a"]}, ["mrr@10"])
    >>> result.mean("mrr@10")
    0.5
    """
    measures = list(measures)  # read once: a generator would be empty the second time
    chosen = [m for m in measures if isinstance(m, Measure)]
    names = [m for m in measures if isinstance(m, str)]
    parsed, _, _ = expand_trec_measures(names)
    given = {
        name: value
        for name, value in (
            ("relevance_level", relevance_level),
            ("complete", complete),
            ("max_docs", max_docs),
            ("judged_only", judged_only),
        )
        if value is not None
    }
    if rules is None:
        rules = "report" if _is_dataset(qrels) and _is_run(run) else "trec"
    if rules == "report":
        if not (_is_dataset(qrels) and _is_run(run)):
            raise ConfigError('rules="report" needs a Dataset and a Run (the run report\'s inputs)')
        if given:
            raise ConfigError(
                f'{", ".join(given)}: trec_eval\'s options; pass rules="trec" with them (on a '
                "Dataset and a Run the default rules are the run report's)"
            )
        return _report_rules(qrels, run, [*chosen, *parsed])
    if rules != "trec":
        raise ConfigError(f'rules must be "report" or "trec", got {rules!r}')
    options = TrecOptions(
        relevance_level=1 if relevance_level is None else relevance_level,
        complete=bool(complete),
        max_docs=max_docs,
        judged_only=bool(judged_only),
    )
    if not chosen:
        compiled = _compiled(qrels, run, names, parsed, options)
        if compiled is not None:
            return compiled
    if isinstance(qrels, str | os.PathLike) and isinstance(run, str | os.PathLike):
        from pathlib import Path

        from recallbench.measures._files import evaluate_files

        return evaluate_files(Path(qrels), Path(run), [*chosen, *parsed], options)[0]
    from recallbench.measures._trec_eval import evaluate_trec, evaluate_trec_table

    in_form = _dict_table(qrels, run, options)
    if in_form is not None:
        table, missing = in_form
        return evaluate_trec_table(table, [*chosen, *parsed], options, missing)
    judged = _as_qrels(qrels)
    rankings: Mapping[str, Sequence[str]] = _as_rankings(run)
    if hasattr(run, "columns"):  # a query that returned nothing has no rows: not missing
        nothing: Sequence[str] = ()
        rankings = {**dict.fromkeys(judged, nothing), **rankings}
    return evaluate_trec(judged, rankings, [*chosen, *parsed], options)
