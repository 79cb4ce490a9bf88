"""The Agreement page: how far the judge's labels agree with people's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recallbench.store import Store


def agreement(store: Store) -> dict[str, Any]:
    """The judge (source ``llm``) against people (``manual``) on the pairs both labelled:
    Cohen's kappa (unweighted and quadratic) and the confusion matrix, people in rows."""
    from recallbench.judges._agreement import GRADES, cohen_kappa, confusion_matrix

    judge = {(j.query_id, j.doc_id): j.grade for j in store.judgments(source="llm")}
    human = {(j.query_id, j.doc_id): j.grade for j in store.judgments(source="manual")}
    both = [key for key in human if key in judge]
    out: dict[str, Any] = {"judge": len(judge), "human": len(human), "both": len(both)}
    if not both:
        return out
    people, judged = [human[k] for k in both], [judge[k] for k in both]
    out.update(
        kappa=cohen_kappa(people, judged),
        quadratic=cohen_kappa(people, judged, weighting="quadratic"),
        matrix=confusion_matrix(people, judged).tolist(),
        grades=GRADES,
        agreement=sum(p == j for p, j in zip(people, judged, strict=True)) / len(both),
    )
    return out
