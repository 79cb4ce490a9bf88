"""``recallbench.evaluate``'s inputs in whatever form they come (TREC paths, dicts, frames,
a ``Dataset`` and a ``Run``), each evaluated by the engine that takes it: the compiled
engine for trec_eval's measures on plain files and dicts in form, else the Python engine
on the table built from dicts in form, or on judgments and rankings read or converted.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
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
    if isinstance(qrels, str | os.PathLike):
        from pathlib import Path

        from recallbench.measures._files import read_qrels

        return read_qrels(Path(qrels))
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


def _as_rankings(run: Any) -> dict[str, list[str]]:
    if isinstance(run, str | os.PathLike):
        from pathlib import Path

        from recallbench.measures._files import read_rankings

        return read_rankings(Path(run))[0]
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
            from recallbench.measures._dict_input import ranked_scores

            ranked = ranked_scores(run)
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
    gm_map's and gm_bpref's per-query values are average precision and bpref here, as the
    Python engine gives them (the geometric mean is taken over the queries); relstring's
    strings are its texts. ``parsed`` are ``specs`` expanded."""
    from recallbench.measures import _trec_native

    chosen = _trec_native.families(specs)
    if chosen is None or options.relevance_level < 0:
        # below 0, trec_eval (so its compiled port) counts unjudged documents relevant
        # (their codes -1 and -2 pass its ">= level"); the Python engine never does
        return None
    done = _trec_native.evaluate_values(
        qrels,
        run,
        _trec_native.per_query_families(chosen[0]),
        relevance_level=options.relevance_level,
        complete=options.complete,
        max_docs=options.max_docs,
        judged_only=options.judged_only,
    )
    if done is None:
        return None
    names, columns, missing_list, num_rel, complete_num_rel = done
    by_name = {str(measure): measure for measure in parsed}
    measured = _trec_native.measure_columns(chosen[0], columns)
    missing = np.array(missing_list, dtype=bool)
    aggregates = {  # as evaluate_trec_table: every judgment graded above 0, whatever -l
        name: float(complete_num_rel)
        for name, measure in by_name.items()
        if options.complete and measure.trec_label() == "num_rel"
    }
    return Evaluation(
        query_ids=tuple(names),
        values={name: np.array(got[0]) for name, got in zip(by_name, measured, strict=True)},
        texts={
            name: got[1] for name, got in zip(by_name, measured, strict=True) if got[1] is not None
        },
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


def evaluate_inputs(
    qrels: Any,
    run: Any,
    measures: list[str | Measure],
    *,
    rules: Literal["report", "trec"] | None = None,
    relevance_level: int | None = None,
    complete: bool | None = None,
    max_docs: int | None = None,
    judged_only: bool | None = None,
) -> Evaluation:
    """:func:`recallbench.evaluate` (see there), ``measures`` read once into a list."""
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
    from recallbench.measures._dict_input import dict_table
    from recallbench.measures._trec_eval import evaluate_trec, evaluate_trec_table

    in_form = dict_table(qrels, run, options)
    if in_form is not None:
        table, missing = in_form
        return evaluate_trec_table(table, [*chosen, *parsed], options, missing)
    judged = _as_qrels(qrels)
    rankings: Mapping[str, Sequence[str]] = _as_rankings(run)
    if hasattr(run, "columns"):  # a query that returned nothing has no rows: not missing
        nothing: Sequence[str] = ()
        rankings = {**dict.fromkeys(judged, nothing), **rankings}
    return evaluate_trec(judged, rankings, [*chosen, *parsed], options)
