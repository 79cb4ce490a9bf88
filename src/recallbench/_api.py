"""`recallbench.evaluate`: measures from judgments and a run, whatever form they take."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from recallbench.measures._evaluate import Evaluation
    from recallbench.measures._measure import Measure


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
    from recallbench.measures._inputs import evaluate_inputs

    return evaluate_inputs(
        qrels,
        run,
        list(measures),  # read once: a generator would be empty the second time
        rules=rules,
        relevance_level=relevance_level,
        complete=complete,
        max_docs=max_docs,
        judged_only=judged_only,
    )
