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
from recallbench.extraction._formats import (
    ExpectedConnection,
    ExtractedConnection,
    ExtractedDocument,
    ExtractionGroundTruth,
    ExtractionOutput,
    GoldDocument,
    GraphCase,
)
from recallbench.extraction._matching import (
    DEFAULT_NAME_RULE,
    DEFAULT_RULE,
    Embed,
    MatchRule,
    NameRule,
    assign,
    match,
    name_forms,
    similarity,
)
from recallbench.extraction._normalise import normalise
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


def bcubed(gold: Sequence[Set[str]], system: Sequence[Set[str]]) -> tuple[float, float, int]:
    """B-cubed (B³) precision and recall sums over mention clusters, and the item count.

    Bagga, A. & Baldwin, B. (1998). Algorithms for scoring coreference chains. LREC
    workshop on linguistic coreference. For each item (mention) i with gold cluster G(i)
    and system cluster S(i):

        P_i = |S(i) ∩ G(i)| / |S(i)|        R_i = |S(i) ∩ G(i)| / |G(i)|

    and B³ precision and recall are the means of P_i and R_i over the items (equal item
    weights), F = 2PR / (P + R). Amigó et al. (2009, Information Retrieval 12(4)) show it is
    the one clustering measure of those they compare that satisfies all four of their
    formal constraints.

    Gold and system need not cover the same mentions: only the mentions both contain are
    items (detection is what entity precision and recall measure; B³ here measures merging
    alone), and clusters are restricted to them. A mention in two gold clusters is
    ambiguous and left out; a mention in two system clusters belongs to the first.
    Returns ``(sum of P_i, sum of R_i, number of items)``.
    """
    gold_of: dict[str, int] = {}
    ambiguous: set[str] = set()
    for index, cluster in enumerate(gold):
        for mention in cluster:
            if mention in gold_of and gold_of[mention] != index:
                ambiguous.add(mention)
            gold_of.setdefault(mention, index)
    system_of: dict[str, int] = {}
    for index, cluster in enumerate(system):
        for mention in cluster:
            system_of.setdefault(mention, index)
    items = sorted((set(gold_of) - ambiguous) & set(system_of))
    gold_clusters: dict[int, set[str]] = {}
    system_clusters: dict[int, set[str]] = {}
    for item in items:
        gold_clusters.setdefault(gold_of[item], set()).add(item)
        system_clusters.setdefault(system_of[item], set()).add(item)
    precision = recall = 0.0
    for item in items:
        g, s = gold_clusters[gold_of[item]], system_clusters[system_of[item]]
        common = len(g & s)
        precision += common / len(s)
        recall += common / len(g)
    return precision, recall, len(items)


def _same(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and normalise(a) == normalise(b)


Aliases = Mapping[str, frozenset[str]]
"""A normalised name -> every normalised form of the entities that have it (name and
declared mentions): who an actor or a connection's entity may be called."""


def aliases_of(documents: Sequence[GoldDocument]) -> dict[str, frozenset[str]]:
    """The aliases the ground truth declares in ``documents`` (see :data:`Aliases`)."""
    out: dict[str, frozenset[str]] = {}
    for document in documents:
        for entity in document.entities:
            forms = name_forms(entity.name, entity.mentions)
            for form in forms:
                out[form] = out.get(form, frozenset()) | forms
    return out


def _named(names: NameRule, aliases: Aliases, expected: str | None, extracted: str | None) -> bool:
    """Whether ``extracted`` names whom ``expected`` names (declared aliases included)."""
    forms = name_forms(expected)
    for form in tuple(forms):
        forms |= aliases.get(form, frozenset())
    return bool(forms) and names.same(forms, extracted)


def _events(
    gold: GoldDocument,
    out: ExtractedDocument,
    rule: MatchRule,
    embed: Embed | None,
    names: NameRule,
    aliases: Aliases,
) -> dict[str, float]:
    pairs = match(
        rule, [e.description for e in gold.events], [e.description for e in out.events], embed
    )
    counts = {
        "events_expected": len(gold.events),
        "events_extracted": len(out.events),
        "events_matched": len(pairs),
        "categories_judged": 0,
        "categories_correct": 0,
        "actors_judged": 0,
        "actors_correct": 0,
    }
    for i, j, _ in pairs:
        expected, extracted = gold.events[i], out.events[j]
        if expected.category is not None:
            counts["categories_judged"] += 1
            counts["categories_correct"] += _same(expected.category, extracted.category)
        if expected.actor is not None:
            counts["actors_judged"] += 1
            counts["actors_correct"] += _named(names, aliases, expected.actor, extracted.actor)
    return {key: float(value) for key, value in counts.items()}


def _forms(name: str, mentions: Sequence[str]) -> set[str]:
    return {form for form in (normalise(m) for m in (name, *mentions)) if form}


def _entities(gold: GoldDocument, out: ExtractedDocument, names: NameRule) -> dict[str, float]:
    gold_forms = [_forms(e.name, e.mentions) for e in gold.entities]
    out_forms = [_forms(e.name, e.mentions) for e in out.entities]
    scores = np.zeros((len(gold.entities), len(out.entities)))
    for i, expected in enumerate(gold.entities):
        canonical = normalise(expected.name)
        for j, extracted in enumerate(out.entities):
            if names.same(gold_forms[i], extracted.name):
                # the expected name itself is preferred to an alias in the assignment
                scores[i, j] = 2.0 if normalise(extracted.name) == canonical else 1.5
    pairs = assign(scores, 1.0)
    judged = correct = 0
    for i, j, _ in pairs:
        judged += 1
        correct += _same(gold.entities[i].type, out.entities[j].type)
    p_sum, r_sum, items = bcubed(gold_forms, out_forms)
    return {
        "entities_expected": float(len(gold.entities)),
        "entities_extracted": float(len(out.entities)),
        "entities_matched": float(len(pairs)),
        "types_judged": float(judged),
        "types_correct": float(correct),
        "bcubed_items": float(items),
        "bcubed_precision_sum": p_sum,
        "bcubed_recall_sum": r_sum,
    }


def stored_facts(out: ExtractedDocument) -> list[str]:
    """What a system stored from a document, as facts: its observations, then its event
    descriptions, one per distinct normalised text (an event also kept as an observation
    is one memory, not two)."""
    seen: set[str] = set()
    stored = []
    for text in [o.text for o in out.observations] + [e.description for e in out.events]:
        key = normalise(text)
        if key not in seen:
            seen.add(key)
            stored.append(text)
    return stored


def _observations(
    gold: GoldDocument, out: ExtractedDocument, rule: MatchRule, embed: Embed | None
) -> dict[str, float]:
    stored = stored_facts(out)
    pairs = match(rule, [o.text for o in gold.observations], stored, embed)
    return {
        "observations_expected": float(len(gold.observations)),
        "observations_stored": float(len(stored)),
        "observations_covered": float(len(pairs)),
    }


def _hop_right(
    expected: ExpectedConnection,
    extracted: ExtractedConnection,
    names: NameRule,
    aliases: Aliases,
) -> bool:
    if not _same(expected.reason, extracted.reason):
        return False
    if expected.entity is not None and not _named(
        names, aliases, expected.entity, extracted.entity
    ):
        return False
    return expected.hops is None or expected.hops == extracted.hops


def _seed(
    case: GraphCase,
    connections: Sequence[ExtractedConnection],
    rule: MatchRule,
    embed: Embed | None,
    names: NameRule,
    aliases: Aliases,
) -> dict[str, float]:
    expected = case.expected_connections
    scores = np.zeros((len(expected), len(connections)))
    for i, want in enumerate(expected):
        if want.document_id is not None:
            for j, got in enumerate(connections):
                scores[i, j] = float(got.document_id == want.document_id)
        elif want.event is not None:
            events = [got.event or "" for got in connections]
            row = similarity(rule, [want.event], events, embed)[0]
            scores[i] = np.where(row >= rule.threshold, 1.0, 0.0)
    pairs = assign(scores, 1.0)
    reached = {got.document_id for got in connections if got.document_id is not None}
    excluded = set(case.expected_not_connected)
    hops = sum(_hop_right(expected[i], connections[j], names, aliases) for i, j, _ in pairs)
    return {
        "connections_expected": float(len(expected)),
        "connections_extracted": float(len(connections)),
        "connections_matched": float(len(pairs)),
        "hops_correct": float(hops),
        "not_connected_expected": float(len(excluded)),
        "not_connected_reached": float(len(excluded & reached)),
    }


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
            _events(gold, out, rule, embed, names, aliases_of([gold]))
            | _entities(gold, out, names)
            | _observations(gold, out, rule, embed)
        )
        documents.append(_unit(gold.id, counts, "document", cluster[gold.id], skip))
    seeds = []
    for case in truth.graph:
        found = expansions.get(case.seed_document)
        connections = found.connections if found is not None else ()
        counts = _seed(case, connections, rule, embed, names, everywhere)
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
