"""What one document's output and its ground truth have in common: the counts every
extraction measure is computed from (:data:`recallbench.extraction._measures.MEASURES`),
per document and per graph seed, with items matched one to one under the selected rule
and names under the name rule (see :mod:`recallbench.extraction._measures` for the
definitions)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set

import numpy as np

from recallbench.extraction._formats import (
    ExpectedConnection,
    ExtractedConnection,
    ExtractedDocument,
    GoldDocument,
    GraphCase,
)
from recallbench.extraction._matching import (
    Embed,
    MatchRule,
    NameRule,
    assign,
    match,
    name_forms,
    similarity,
)
from recallbench.extraction._normalise import normalise


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


def event_counts(
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


def entity_counts(gold: GoldDocument, out: ExtractedDocument, names: NameRule) -> dict[str, float]:
    gold_forms = [name_forms(e.name, e.mentions) for e in gold.entities]
    out_forms = [name_forms(e.name, e.mentions) for e in out.entities]
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


def observation_counts(
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


def seed_counts(
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
