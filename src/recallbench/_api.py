"""`recallbench.evaluate`: measures from judgments and a run, whatever form they take."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from recallbench.core._errors import ConfigError
from recallbench.measures._evaluate import Evaluation
from recallbench.measures._measure import Measure
from recallbench.measures._trec_eval import TrecOptions, evaluate_trec
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
        return read_trec_qrels(Path(qrels))
    if hasattr(qrels, "qrels") and hasattr(qrels, "documents"):  # a Dataset
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


def _as_rankings(run: Any) -> dict[str, list[str]]:
    from recallbench.datasets._trec import read_trec_rankings

    if isinstance(run, str | os.PathLike):
        return read_trec_rankings(Path(run))[0]
    if hasattr(run, "results") and hasattr(run, "spec"):  # a Run: the order as returned
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


def evaluate(
    qrels: Any,
    run: Any,
    measures: Iterable[str | Measure] = ("ndcg@10", "mrr@10", "recall@10", "P@10", "map"),
    *,
    relevance_level: int = 1,
    complete: bool = False,
    max_docs: int | None = None,
    judged_only: bool = False,
) -> Evaluation:
    """Evaluate a run against judgments with trec_eval's semantics.

    ``qrels``: a TREC qrels path, a ``Dataset``, ``{query: {doc: grade}}``, or a pandas or
    polars frame with query, document and grade columns. ``run``: a TREC run path, a
    ``Run`` (scored in the order returned), ``{query: {doc: score}}`` or a frame with query,
    document and score columns (ordered by score descending, ties by document id
    descending), or ``{query: [doc, ...]}`` (already ranked). ``measures``: recallbench
    names (``ndcg@10``) or trec_eval names (``ndcg_cut.10``, ``official``).
    The options are trec_eval's ``-l``, ``-c``, ``-M`` and ``-J``.

    >>> result = evaluate({"q": {"a": 1}}, {"q": ["b", "a"]}, ["mrr@10"])
    >>> result.mean("mrr@10")
    0.5
    """
    chosen = [m for m in measures if isinstance(m, Measure)]
    parsed, _, _ = expand_trec_measures([m for m in measures if isinstance(m, str)])
    options = TrecOptions(
        relevance_level=relevance_level,
        complete=complete,
        max_docs=max_docs,
        judged_only=judged_only,
    )
    if isinstance(qrels, str | os.PathLike) and isinstance(run, str | os.PathLike):
        from recallbench.measures._files import evaluate_files

        return evaluate_files(Path(qrels), Path(run), [*chosen, *parsed], options)[0]
    return evaluate_trec(_as_qrels(qrels), _as_rankings(run), [*chosen, *parsed], options)
