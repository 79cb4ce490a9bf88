"""trec_eval's output: ``measure<TAB>query|all<TAB>value``, so results diff against it."""

from __future__ import annotations

from collections.abc import Iterator

from recallbench.measures._evaluate import Evaluation

LABEL_WIDTH = 22
"""trec_eval pads measure names to 22 characters ("%-22s")."""


def trec_lines(
    evaluation: Evaluation,
    per_query: bool = False,
    runid: str | None = None,
    summary: bool = True,
) -> Iterator[tuple[str, str, str]]:
    """(label, query id or ``all``, value) in trec_eval's order: every included query's
    values (queries sorted as strings) when ``per_query``, then, unless ``summary`` is off
    (trec_eval ``-n``), the run's tag when given and every measure's aggregate."""
    if per_query:
        for index in sorted(
            (i for i, chosen in enumerate(evaluation.included) if chosen),
            key=lambda i: evaluation.query_ids[i],
        ):
            for name, measure in evaluation.measures.items():
                if name in evaluation.texts:
                    text = evaluation.texts[name][index]
                    yield measure.trec_label(), evaluation.query_ids[index], f"'{text}'"
                elif measure.shown_per_query:
                    value = float(evaluation.values[name][index])
                    yield (
                        measure.trec_label(),
                        evaluation.query_ids[index],
                        measure.format_value(value),
                    )
    if not summary:
        return
    if runid is not None:
        yield "runid", "all", runid
    for name, measure in evaluation.measures.items():
        if name not in evaluation.texts:
            yield measure.trec_label(), "all", measure.format_value(evaluation.mean(name))


def format_trec(lines: Iterator[tuple[str, str, str]]) -> str:
    return "".join(f"{label:<{LABEL_WIDTH}}\t{qid}\t{value}\n" for label, qid, value in lines)
