"""Scoring a system's extraction against ground truth: per document (per seed for graph
expansion), then aggregated with bootstrap intervals.

Per document, with the items matched one-to-one under the selected rule
(:mod:`recallbench.extraction._matching`):

- events: ``precision = matched / extracted``, ``recall = matched / expected``,
  ``F1 = 2 matched / (expected + extracted)`` (the harmonic mean of the two, defined
  whenever either side is non-empty). Events are matched on their descriptions only;
  ``category_accuracy`` and ``actor_accuracy`` are then the share of matched events whose
  category equals the expected one (after normalisation) and whose actor is the expected
  one under the name rule (:class:`~recallbench.extraction._matching.NameRule`: exact after
  normalisation, the aliases of the document's entities that name the actor included),
  over matched events whose expected category (actor) is given.
- entities: an extracted entity's *name* matches an expected entity's name or one of its
  declared aliases (``mentions``) under the name rule (an exact name preferred to an
  alias); the extracted entity's own mentions take no part (they are its cluster for
  B-cubed), so listing every capitalised word as mentions matches nothing. Precision,
  recall and F1 as for events; ``type_accuracy`` over matched entities (types compared
  after normalisation; a missing type is wrong).
- deduplication: B-cubed over mention clusters (Bagga & Baldwin 1998), see :func:`bcubed`.
- observations: what the system stored -- its observations and event descriptions, one
  per distinct normalised text -- matched one-to-one with the expected observations under
  the rule. ``observation_precision = covered / stored``, ``observation_coverage`` (the
  recall) ``= covered / expected``, ``observation_f1 = 2 covered / (expected + stored)``:
  one stored item covers one fact at most, and storing more than the facts costs
  precision, so neither a single summary nor many copies of the document cover a session.
- graph expansion, per seed: connections matched by target document (or, for an expected
  connection that names only an event, by the event's description under the rule);
  ``connection_precision`` and ``connection_recall`` as above; ``connection_fpr`` = share
  of the seed's expected-not-connected documents that the expansion reached;
  ``hop_accuracy`` = share of matched connections whose path is right: same reason, the
  expected entity (by name) when one is given, the expected number of hops when given.

A ratio whose denominator is 0 is undefined for that document (precision with nothing
extracted, recall with nothing expected) and left out of the means, never scored 0 or 1.
A document the output lacks counts as nothing extracted (as trec_eval ``-c``). A ground
truth that annotates no events (no entities) anywhere does not say the documents have none:
event (entity) precision and F1 are then undefined, not 0, since every extracted item would
count as wrong against an annotation that was never made (LoCoMo lists no entities).

Aggregates: ``macro`` is the mean over the documents (seeds) where the measure is defined
-- the headline, because long documents should not outweigh short ones -- and ``micro``
pools the counts over documents (``sum matched / sum extracted``), reported beside it.
Their intervals are cluster bootstraps over the top-level unit (:func:`cluster_of`: the
conversation of a LoCoMo session, the document of a corpus of separate documents; BCa for
macro, percentile for micro; Davison & Hinkley 1997, sec. 3.8; Efron 1987): the sessions of
one conversation share speakers and topics, so resampling them as independent draws gives
intervals too narrow (by 1.47x for LoCoMo's observation coverage). With 10 clusters a
nominal 95% interval covers about 90% (benchmarks/cluster_bootstrap_coverage.py). A ground
truth of one conversation resamples its documents: the interval is then about that
conversation, not about conversations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from typing import Final, Literal

import numpy as np
from numpy.typing import NDArray

from recallbench.core._model import Record
from recallbench.extraction._counting import (
    aliases_of,
    entity_counts,
    event_counts,
    observation_counts,
    seed_counts,
)
from recallbench.extraction._formats import (
    ExtractedDocument,
    ExtractionGroundTruth,
    ExtractionOutput,
    GoldDocument,
)
from recallbench.extraction._matching import (
    DEFAULT_NAME_RULE,
    DEFAULT_RULE,
    Embed,
    MatchRule,
    NameRule,
)
from recallbench.stats._cluster import cluster_interval
from recallbench.stats._resampling import IntervalMethod

SCORES_FORMAT: Final = "recallbench.extraction-scores/v1"
Array = NDArray[np.float64]
Counts = Mapping[str, Array]


def _ratio(numerator: Array, denominator: Array) -> Array:
    """numerator / denominator, NaN (undefined) where the denominator is 0."""
    num, den = np.asarray(numerator, dtype=np.float64), np.asarray(denominator, np.float64)
    out: Array = np.divide(
        num, den, out=np.full(np.broadcast(num, den).shape, np.nan), where=den > 0
    )
    return out


def _f1(p: Array, r: Array) -> Array:
    """Harmonic mean of P and R; 0 when both are 0, NaN when either is undefined."""
    total = p + r
    return np.where(total > 0, _ratio(2 * p * r, total), np.where(np.isnan(total), np.nan, 0.0))


def _pair_f1(matched: Array, expected: Array, extracted: Array) -> Array:
    return _ratio(2 * matched, expected + extracted)


MEASURES: dict[str, tuple[Literal["document", "seed"], Callable[[Counts], Array]]] = {
    "event_precision": ("document", lambda c: _ratio(c["events_matched"], c["events_extracted"])),
    "event_recall": ("document", lambda c: _ratio(c["events_matched"], c["events_expected"])),
    "event_f1": (
        "document",
        lambda c: _pair_f1(c["events_matched"], c["events_expected"], c["events_extracted"]),
    ),
    "category_accuracy": (
        "document",
        lambda c: _ratio(c["categories_correct"], c["categories_judged"]),
    ),
    "actor_accuracy": ("document", lambda c: _ratio(c["actors_correct"], c["actors_judged"])),
    "entity_precision": (
        "document",
        lambda c: _ratio(c["entities_matched"], c["entities_extracted"]),
    ),
    "entity_recall": ("document", lambda c: _ratio(c["entities_matched"], c["entities_expected"])),
    "entity_f1": (
        "document",
        lambda c: _pair_f1(c["entities_matched"], c["entities_expected"], c["entities_extracted"]),
    ),
    "type_accuracy": ("document", lambda c: _ratio(c["types_correct"], c["types_judged"])),
    "dedup_bcubed_precision": (
        "document",
        lambda c: _ratio(c["bcubed_precision_sum"], c["bcubed_items"]),
    ),
    "dedup_bcubed_recall": (
        "document",
        lambda c: _ratio(c["bcubed_recall_sum"], c["bcubed_items"]),
    ),
    "dedup_bcubed_f1": (
        "document",
        lambda c: _f1(
            _ratio(c["bcubed_precision_sum"], c["bcubed_items"]),
            _ratio(c["bcubed_recall_sum"], c["bcubed_items"]),
        ),
    ),
    "observation_precision": (
        "document",
        lambda c: _ratio(c["observations_covered"], c["observations_stored"]),
    ),
    "observation_coverage": (
        "document",
        lambda c: _ratio(c["observations_covered"], c["observations_expected"]),
    ),
    "observation_f1": (
        "document",
        lambda c: _pair_f1(
            c["observations_covered"], c["observations_expected"], c["observations_stored"]
        ),
    ),
    "connection_precision": (
        "seed",
        lambda c: _ratio(c["connections_matched"], c["connections_extracted"]),
    ),
    "connection_recall": (
        "seed",
        lambda c: _ratio(c["connections_matched"], c["connections_expected"]),
    ),
    "connection_fpr": (
        "seed",
        lambda c: _ratio(c["not_connected_reached"], c["not_connected_expected"]),
    ),
    "hop_accuracy": ("seed", lambda c: _ratio(c["hops_correct"], c["connections_matched"])),
}
"""Every measure: whether its unit is a document or a graph seed, and its value as a
function of the unit's counts (applied to one unit's counts, or to counts pooled over
units for the micro aggregate)."""


class UnitScores(Record):
    """One document's (or graph seed's) counts and measure values (None: undefined)."""

    id: str
    counts: dict[str, float]
    values: dict[str, float | None]
    cluster: str | None = None
    """The top-level unit it is resampled with (``conversation:conv-26``,
    ``document:d1``): see :func:`cluster_of`."""


class Aggregate(Record):
    """One measure over all units: macro (the headline) and micro, with intervals."""

    measure: str
    units: int
    """Units (documents or seeds) where the measure is defined: the macro mean's n."""
    macro: float | None
    macro_interval: tuple[float, float] | None
    micro: float | None
    micro_interval: tuple[float, float] | None


class ExtractionScores(Record):
    """A system's extraction scored against ground truth under one matching rule."""

    format: Literal["recallbench.extraction-scores/v1"] = SCORES_FORMAT
    ground_truth: str
    system: str
    rule: str
    """The matching rule's canonical string (``jaccard>=0.5``): part of every number."""
    gameable: str | None = None
    """How an extractor games the rule, for a rule kept only for published numbers."""
    name_rule: str = DEFAULT_NAME_RULE.label
    headline: Literal["macro"] = "macro"
    interval: dict[str, str | float | int]
    documents: tuple[UnitScores, ...]
    seeds: tuple[UnitScores, ...]
    aggregates: tuple[Aggregate, ...]
    missing_documents: tuple[str, ...] = ()
    """Ground-truth documents the output lacks (scored as nothing extracted)."""
    unknown_documents: tuple[str, ...] = ()
    """Output documents the ground truth lacks (ignored)."""

    def aggregate(self, measure: str) -> Aggregate:
        """The aggregate of ``measure`` (a KeyError names the measures there are)."""
        for item in self.aggregates:
            if item.measure == measure:
                return item
        raise KeyError(f"no measure {measure!r}; have {[a.measure for a in self.aggregates]}")


UNANNOTATED: Final[dict[str, frozenset[str]]] = {
    "events": frozenset({"event_precision", "event_f1", "category_accuracy", "actor_accuracy"}),
    "entities": frozenset({"entity_precision", "entity_f1"}),
    "observations": frozenset({"observation_precision", "observation_f1"}),
}
"""Measures left undefined when the ground truth annotates none of the component's items."""


def unannotated(truth: ExtractionGroundTruth) -> dict[str, frozenset[str]]:
    """Component -> its measures that are undefined because ``truth`` annotates no item of
    the component in any document (events, entities)."""
    present = {
        "events": any(document.events for document in truth.documents),
        "entities": any(document.entities for document in truth.documents),
        "observations": any(document.observations for document in truth.documents),
    }
    return {part: names for part, names in UNANNOTATED.items() if not present[part]}


def _unit(
    identifier: str,
    counts: dict[str, float],
    scope: str,
    cluster: str,
    skip: Set[str] = frozenset(),
) -> UnitScores:
    arrays = {key: np.asarray(value) for key, value in counts.items()}
    values: dict[str, float | None] = {}
    for name, (unit, function) in MEASURES.items():
        if unit == scope:
            if name in skip:
                values[name] = None
                continue
            value = float(function(arrays))
            values[name] = None if np.isnan(value) else value
    return UnitScores(id=identifier, counts=counts, values=values, cluster=cluster)


def cluster_of(document: GoldDocument) -> str:
    """The top-level unit a document belongs to: ``metadata["cluster"]``, else
    ``metadata["conversation"]`` (a LoCoMo session's conversation), else the document."""
    for key in ("cluster", "conversation"):
        value = document.metadata.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return f"{key}:{value}"
    return f"document:{document.id}"


def resampled_unit(labels: Sequence[str]) -> str:
    """What the intervals resample, in words: ``conversation`` when any label is one."""
    kinds = {label.split(":", 1)[0] for label in labels}
    return (
        "conversation"
        if "conversation" in kinds
        else "cluster"
        if "cluster" in kinds
        else "document"
    )


def _aggregates(
    units: Sequence[UnitScores],
    labels: Sequence[str],
    scope: str,
    resamples: int,
    level: float,
    method: IntervalMethod,
    seed: int,
    skip: Set[str] = frozenset(),
) -> list[Aggregate]:
    """Every measure of ``scope`` over ``units``: the macro mean over the units that define
    it and the micro (pooled) value, each with a cluster bootstrap interval that draws the
    ``labels``' clusters with replacement (:func:`~recallbench.stats._cluster.cluster_interval`).
    Under a resample a unit counts as often as its cluster was drawn: the macro mean is
    ``sum_u w_u v_u / sum_u w_u`` over defined units, the micro value the measure of the
    weighted sums of counts."""
    names = [name for name, (unit, _) in MEASURES.items() if unit == scope]
    keys = sorted(units[0].counts) if units else []
    table = np.array([[u.counts[k] for k in keys] for u in units], dtype=np.float64)
    out = []
    for name in names:
        function = MEASURES[name][1]
        raw = [u.values[name] for u in units]
        defined = np.array([value is not None for value in raw], dtype=np.float64)
        values = np.array([0.0 if value is None else value for value in raw])

        def macro_of(weights: Array, values: Array = values, defined: Array = defined) -> Array:
            return _ratio(weights @ values, weights @ defined)

        def micro_of(weights: Array, function: Callable[[Counts], Array] = function) -> Array:
            sums = weights @ table
            return function({key: sums[:, index] for index, key in enumerate(keys)})

        n = int(defined.sum())
        macro = float(values @ defined / n) if n else None
        micro: float | None = None
        if units and name not in skip:
            value = float(micro_of(np.ones((1, len(units))))[0])
            micro = None if np.isnan(value) else value
        out.append(
            Aggregate(
                measure=name,
                units=n,
                macro=macro,
                macro_interval=cluster_interval(macro_of, labels, resamples, level, method, seed)
                if n >= 2
                else None,
                micro=micro,
                micro_interval=cluster_interval(
                    micro_of, labels, resamples, level, "percentile", seed
                )
                if micro is not None and len(units) >= 2
                else None,
            )
        )
    return out


def score_extraction(
    truth: ExtractionGroundTruth,
    output: ExtractionOutput,
    rule: MatchRule = DEFAULT_RULE,
    *,
    resamples: int = 1000,
    level: float = 0.95,
    method: IntervalMethod = "bca",
    seed: int = 0,
    embed: Embed | None = None,
    names: NameRule = DEFAULT_NAME_RULE,
) -> ExtractionScores:
    """Score ``output`` against ``truth`` under ``rule`` (sentences) and ``names`` (names):
    every document and graph seed, and every measure aggregated (see the module's
    docstring for the definitions)."""
    extracted = {document.id: document for document in output.documents}
    everywhere = aliases_of(truth.documents)
    expansions = {expansion.seed_document: expansion for expansion in output.expansions}
    gold_ids = {document.id for document in truth.documents}
    skip = frozenset().union(*unannotated(truth).values())
    cluster = {gold.id: cluster_of(gold) for gold in truth.documents}
    if len(set(cluster.values())) < 2:  # one conversation: what varies is its documents
        cluster = {gold.id: f"document:{gold.id}" for gold in truth.documents}
    documents = []
    for gold in truth.documents:
        out = extracted.get(gold.id, ExtractedDocument(id=gold.id))
        counts = (
            event_counts(gold, out, rule, embed, names, aliases_of([gold]))
            | entity_counts(gold, out, names)
            | observation_counts(gold, out, rule, embed)
        )
        documents.append(_unit(gold.id, counts, "document", cluster[gold.id], skip))
    seeds = []
    for case in truth.graph:
        found = expansions.get(case.seed_document)
        connections = found.connections if found is not None else ()
        counts = seed_counts(case, connections, rule, embed, names, everywhere)
        label = cluster.get(case.seed_document, f"document:{case.seed_document}")
        seeds.append(_unit(case.seed_document, counts, "seed", label))
    labels = [unit.cluster or "" for unit in documents]
    seed_labels = [unit.cluster or "" for unit in seeds]
    aggregates = _aggregates(
        documents, labels, "document", resamples, level, method, seed, skip
    ) + _aggregates(seeds, seed_labels, "seed", resamples, level, method, seed)
    unit = resampled_unit(labels)
    return ExtractionScores(
        ground_truth=truth.name,
        system=output.system,
        rule=rule.label,
        gameable=rule.gameable,
        name_rule=names.label,
        interval={
            "method": method,
            "level": level,
            "resamples": resamples,
            "seed": seed,
            "resampled": unit,
            "clusters": len(set(labels)),
        },
        documents=tuple(documents),
        seeds=tuple(seeds),
        aggregates=tuple(aggregates),
        missing_documents=tuple(sorted(gold_ids - set(extracted))),
        unknown_documents=tuple(sorted(set(extracted) - gold_ids)),
    )
