"""People's labels from the store into a dataset's ``qrels``, each with its provenance.

The labels are the store's ``manual`` judgments (the dashboard's annotation queue writes
them, with the annotator's name). Each one of a query and a memory the dataset holds
enters ``qrels`` with ``label_sources`` ``{source: manual, by: ANNOTATOR}``, so that a
reader can always tell a person's label from the dataset authors' and from a judge's, and
so that judge calibration (:mod:`._calibrate_pairs`) counts it as a person's.

Rules, in order:

1. A pair the dataset's authors judged (in ``qrels`` without a ``label_sources`` entry)
   keeps their grade: the dataset's gold is not rewritten from a dashboard. Such pairs
   are counted, and those a person graded differently counted apart.
2. A person's label replaces a judge's (``label_sources`` ``llm``) or a harvest's
   (``harvest``, graded from what agents did): a judge is never calibrated against a
   judge, and people's labels are what calibrates it.
3. A pair labelled before (``manual`` in ``label_sources``) takes the store's label now.
4. Several annotators' labels of one pair (where the store keeps one per annotator) give
   the lower median of their grades (an even split goes to the lower grade: a pair is not
   made relevant by half the people), and ``by`` names them all, sorted.
5. A label of a query or memory the dataset does not hold is left out and counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from recallbench.core import Dataset, LabelSource

if TYPE_CHECKING:
    from recallbench.store import Judgment

MANUAL = "manual"


@dataclass(frozen=True, slots=True)
class ManualLabels:
    """The dataset with people's labels, and what became of each label."""

    dataset: Dataset
    added: int
    """Pairs the dataset did not judge, now labelled."""
    replaced: int
    """Pairs an LLM judge or a harvest had labelled, now a person's."""
    updated: int
    """Pairs a person had labelled in the dataset, now with the store's label."""
    kept_authors: int
    """Pairs the dataset's authors judged: their grade kept."""
    differing_authors: int
    """Of those, pairs a person graded differently."""
    unknown: int
    """Labels of a query or memory the dataset does not hold: left out."""
    annotators: tuple[str, ...]
    """Who gave the labels that entered the dataset, sorted."""

    @property
    def written(self) -> int:
        return self.added + self.replaced + self.updated


def lower_median(grades: Iterable[int]) -> int:
    ordered = sorted(grades)
    return ordered[(len(ordered) - 1) // 2]


def with_manual_labels(dataset: Dataset, judgments: Iterable[Judgment]) -> ManualLabels:
    """``dataset`` with the ``manual`` ones of ``judgments`` as labels (module docstring);
    the dataset given is not changed."""
    queries = {query.id for query in dataset.queries}
    documents = dataset.documents_by_id
    grouped: dict[tuple[str, str], list[Judgment]] = {}
    unknown = 0
    for judgment in judgments:
        if judgment.source != MANUAL:
            continue
        if judgment.query_id not in queries or judgment.doc_id not in documents:
            unknown += 1
            continue
        grouped.setdefault((judgment.query_id, judgment.doc_id), []).append(judgment)
    qrels = {query: dict(judged) for query, judged in dataset.qrels.items()}
    sources = {query: dict(by_doc) for query, by_doc in dataset.label_sources.items()}
    added = replaced = updated = kept = differing = 0
    annotators: set[str] = set()
    for (query, doc), labels in grouped.items():
        grade = lower_median(label.grade for label in labels)
        previous = sources.get(query, {}).get(doc)
        if doc in qrels.get(query, {}) and previous is None:
            kept += 1
            differing += qrels[query][doc] != grade
            continue
        if previous is None:
            added += 1
        elif previous.source == MANUAL:
            updated += 1
        else:
            replaced += 1
        names = sorted({label.annotator for label in labels if label.annotator})
        annotators.update(names)
        qrels.setdefault(query, {})[doc] = grade
        sources.setdefault(query, {})[doc] = LabelSource(source=MANUAL, by=", ".join(names) or None)
    labelled = dataset.replaced(qrels=qrels, label_sources=sources)
    return ManualLabels(
        labelled, added, replaced, updated, kept, differing, unknown, tuple(sorted(annotators))
    )
