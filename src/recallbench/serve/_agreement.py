"""The Agreement page: how far people agree with each other (percent agreement, Cohen's
kappa for each two annotators, Fleiss' kappa, the conflicts to adjudicate) and how far the
judge's labels agree with people's resolved labels."""

from __future__ import annotations

from itertools import combinations
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


def team(store: Store) -> dict[str, Any]:
    """People against each other, on the pairs at least two of them labelled: agreement per
    pair (the share of agreeing pairs of annotators), per annotator (with the others on the
    same pairs), Cohen's kappa for each two annotators (on the pairs both labelled),
    Fleiss' kappa over the pairs with the same number of annotators (Fleiss 1971), and the
    conflicts (annotators disagree, no adjudication) with the adjudicated pairs."""
    from recallbench.judges._agreement import GRADES, cohen_kappa
    from recallbench.stats._fleiss import fleiss_kappa, rating_counts

    by_pair: dict[tuple[str, str], dict[str, int]] = {}
    for label in store.labels():
        if label.grade is not None:
            by_pair.setdefault(label.key, {})[label.annotator] = label.grade
    adjudicated = {a.key: a for a in store.adjudications()}
    annotators = sorted({name for graded in by_pair.values() for name in graded})
    shared = {key: graded for key, graded in by_pair.items() if len(graded) >= 2}
    pairs = [
        {
            "key": key,
            "labels": graded,
            "agreement": _pair_agreement(list(graded.values())),
            "conflict": len(set(graded.values())) > 1 and key not in adjudicated,
            "adjudicated": adjudicated.get(key),
        }
        for key, graded in shared.items()
    ]
    people = []
    for name in annotators:
        agree = compared = labelled = 0
        for graded in shared.values():
            if name not in graded:
                continue
            labelled += 1
            others = [g for other, g in graded.items() if other != name]
            compared += len(others)
            agree += sum(g == graded[name] for g in others)
        people.append({"name": name, "pairs": labelled, "compared": compared,
                       "agreement": agree / compared if compared else None})  # fmt: skip
    kappas = []
    for first, second in combinations(annotators, 2):
        both = [g for g in shared.values() if first in g and second in g]
        if not both:
            continue
        a, b = [g[first] for g in both], [g[second] for g in both]
        kappas.append({"first": first, "second": second, "n": len(both),
                       "agreement": sum(x == y for x, y in zip(a, b, strict=True)) / len(both),
                       "kappa": cohen_kappa(a, b, GRADES, names=(first, second))})  # fmt: skip
    groups: dict[int, list[list[int]]] = {}
    for graded in shared.values():
        groups.setdefault(len(graded), []).append(list(graded.values()))
    fleiss = [
        {"raters": raters, "kappa": fleiss_kappa(rating_counts(ratings, GRADES))}
        for raters, ratings in sorted(groups.items())
    ]
    return {
        "annotators": annotators,
        "labelled": len(by_pair),
        "shared": len(shared),
        "pairs": pairs,
        "mean_agreement": (
            sum(_pair_agreement(list(g.values())) for g in shared.values()) / len(shared)
            if shared
            else None
        ),
        "people": people,
        "kappas": kappas,
        "fleiss": fleiss,
        "conflicts": [p for p in pairs if p["conflict"]],
        "adjudicated": [
            {"key": key, "by": found, "labels": by_pair.get(key, {})}
            for key, found in sorted(adjudicated.items())
        ],
    }


def _pair_agreement(grades: list[int]) -> float:
    """The share of agreeing pairs among the pair's annotators (Fleiss' P_i)."""
    n = len(grades)
    same = sum(grades.count(g) * (grades.count(g) - 1) for g in set(grades))
    return same / (n * (n - 1))
