"""Trivial extractors an adversary would try on the write-path benchmark: a gaming suite.

Each adversary is a function ``(truth, baseline) -> ExtractionOutput`` (the system's name
is the adversary's name) that fills a document's events, entities (name = the item's text)
and observations with the same trick: names or stop words repeated, the whole document
once or k times, every sentence, every n-gram window, one item holding every word, the
baseline's own output duplicated, nothing at all. None of them reads the document the way
an extractor should, so none should score above the baseline under a matching rule that
needs both sides to agree (``DEFAULT_RULES``); the gameable rules (``jaccard``,
``containment``, ``fuzzy-set``) hand some of them high scores, which is what the suite
demonstrates. :data:`ADVERSARIES` lists them in order, name -> (one-line description,
function).

Two adversaries read the gold (``gold-shuffled``, ``gold-first-word``): they are probes of
a rule (is it order-blind? does a fragment match the whole?), not attacks a system could
mount. An item their transformation leaves unchanged (one distinct token to shuffle, a
one-word item's first word) or turns into one of the document's expected items or declared
aliases is left out: that would be the answer, not an attack.

Everything is deterministic: the random choices use a :class:`random.Random` seeded with
the adversary's name and the document's id.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Final, TypeVar

from recallbench.extraction._baseline import _sentences
from recallbench.extraction._formats import (
    ExtractedDocument,
    ExtractedEntity,
    ExtractedEvent,
    ExtractedObservation,
    ExtractionGroundTruth,
    ExtractionOutput,
    GoldDocument,
)
from recallbench.extraction._normalise import normalise, tokens

Adversary = Callable[[ExtractionGroundTruth, ExtractionOutput], ExtractionOutput]
"""The ground truth and the baseline's output -> the adversary's output."""
Trick = Callable[[GoldDocument, ExtractedDocument], ExtractedDocument]
"""One document and the baseline's extraction of it -> the adversary's extraction."""

T = TypeVar("T")
K: Final = 3
"""How many times the repeating adversaries repeat an item."""
MANY: Final = 50
"""The large repeat count (``document-x50``: more copies than any LoCoMo session has
observations, so that every expected item can be matched by a copy of its own)."""
RANDOM_SENTENCES: Final = 5
NGRAM: Final = 10
"""Window length (tokens) of ``ngrams-10``: about the length of an expected event."""
STOPWORDS: Final = ("the", "and", "a", "to", "of", "in", "is", "it", "that", "for", "i", "you")
_CAPITALISED_WORD = re.compile(r"\b[A-Z][\w'’-]*")
_PRONOUNS: Final = frozenset({"I", "I'm", "I've", "I'll", "I'd", "I’m", "I’ve", "I’ll", "I’d"})

ADVERSARIES: dict[str, tuple[str, Adversary]] = {}
"""Every adversary in order: name -> (one-line description, function)."""


def _adversary(name: str, description: str) -> Callable[[Trick], Adversary]:
    """Register a per-document trick as the corpus-level adversary ``name``."""

    def register(trick: Trick) -> Adversary:
        @functools.wraps(trick)
        def adversary(truth: ExtractionGroundTruth, baseline: ExtractionOutput) -> ExtractionOutput:
            done = {document.id: document for document in baseline.documents}
            return ExtractionOutput(
                system=name,
                documents=tuple(
                    trick(gold, done.get(gold.id, ExtractedDocument(id=gold.id)))
                    for gold in truth.documents
                ),
                metadata={"extractor": "adversary", "adversary": name, "trick": description},
            )

        ADVERSARIES[name] = (description, adversary)
        return adversary

    return register


def _items(
    identifier: str,
    events: Iterable[str],
    entities: Iterable[str],
    observations: Iterable[str],
) -> ExtractedDocument:
    """A document's extraction from plain texts (an entity's name is its text)."""
    return ExtractedDocument(
        id=identifier,
        events=tuple(ExtractedEvent(description=text) for text in events),
        entities=tuple(ExtractedEntity(name=text) for text in entities),
        observations=tuple(ExtractedObservation(text=text) for text in observations),
    )


def _same(identifier: str, texts: Sequence[str]) -> ExtractedDocument:
    """The same texts as events, entities and observations."""
    return _items(identifier, texts, texts, texts)


def _repeat(items: Iterable[T], times: int) -> list[T]:
    """Every item ``times`` times in a row."""
    return [item for item in items for _ in range(times)]


def _rng(name: str, document: GoldDocument) -> random.Random:
    return random.Random(f"{name}:{document.id}")


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` as the baseline splits them (a ``Speaker:`` prefix
    dropped)."""
    return [sentence for _, sentence in _sentences(text)]


def names(text: str) -> list[str]:
    """Every distinct capitalised word and speaker name of ``text``, in order of first
    appearance (the pronoun ``I`` left out)."""
    found: dict[str, None] = {}
    for speaker, sentence in _sentences(text):
        if speaker is not None:
            found.setdefault(speaker, None)
        for word in _CAPITALISED_WORD.findall(sentence):
            if word not in _PRONOUNS:
                found.setdefault(word, None)
    return list(found)


@_adversary("empty", "nothing extracted")
def empty(document: GoldDocument, baseline: ExtractedDocument) -> ExtractedDocument:
    """Nothing at all. Probes the treatment of an empty output: recall and F1 are 0 where
    something is expected, precision undefined (not 1). Fools a measure that scores an
    undefined precision as perfect."""
    return ExtractedDocument(id=document.id)


@_adversary("stopwords-x3", f"each of {len(STOPWORDS)} stop words ('the', 'and', ...) x{K}")
def stopwords_x3(document: GoldDocument, baseline: ExtractedDocument) -> ExtractedDocument:
    """Stop words (``the``, ``and``, ...), each repeated three times. Probes one-sided
    subset credit: ``the`` is a subset of almost every expected item's words, so
    ``fuzzy-set`` (token_set_ratio 100 on a subset) matches it with almost anything."""
    return _same(document.id, _repeat(STOPWORDS, K))


@_adversary("names-x3", f"every capitalised word and speaker name x{K}")
def names_x3(document: GoldDocument, baseline: ExtractedDocument) -> ExtractedDocument:
    """Every capitalised word and speaker name of the document, each repeated three times.
    Probes subset credit for a name: ``Caroline`` is a subset of the words of every event
    about Caroline, so ``fuzzy-set`` matches one copy per event naming her; the copies
    also probe that a duplicate is a false positive (one-to-one matching)."""
    return _same(document.id, _repeat(names(document.text), K))


@_adversary("first-sentence", "the document's first sentence, once")
def first_sentence(document: GoldDocument, baseline: ExtractedDocument) -> ExtractedDocument:
    """The first sentence of the document. Probes a rule that matches on shared small talk
    or headers (a greeting, a title); no rule should credit it more than by chance."""
    return _same(document.id, sentences(document.text)[:1])


@_adversary("random-sentences-5", f"{RANDOM_SENTENCES} random sentences (seeded)")
def random_sentences_5(document: GoldDocument, baseline: ExtractedDocument) -> ExtractedDocument:
    """Five sentences of the document drawn at random (seeded by the document's id), in
    document order. Probes how much credit verbatim text earns by luck: with ``fuzzy-set``
    or ``containment`` a long sentence sharing the expected item's words matches it."""
    found = sentences(document.text)
    rng = _rng("random-sentences-5", document)
    chosen = sorted(rng.sample(range(len(found)), min(RANDOM_SENTENCES, len(found))))
    return _same(document.id, [found[i] for i in chosen])


@_adversary("sentences", "every sentence of the document, one item each")
def every_sentence(document: GoldDocument, baseline: ExtractedDocument) -> ExtractedDocument:
    """Every sentence of the document as an item (the speaker prefix dropped). Probes
    recall bought with volume: under a one-sided rule every expected item finds a sentence
    that contains its words; a rule with precision in its F1 charges every extra item."""
    return _same(document.id, sentences(document.text))


@_adversary("lines", "every line (utterance) verbatim, one item each")
def every_line(document: GoldDocument, baseline: ExtractedDocument) -> ExtractedDocument:
    """Every non-empty line (a LoCoMo utterance with its ``Speaker:``) as an item. Probes
    the same as ``sentences`` with longer items: ``containment`` and ``fuzzy-set`` credit a
    line that holds the expected item's words among many others."""
    return _same(document.id, [line.strip() for line in document.text.splitlines() if line.strip()])


@_adversary("ngrams-10", f"every {NGRAM}-token window of the document (stride 1)")
def ngrams_10(document: GoldDocument, baseline: ExtractedDocument) -> ExtractedDocument:
    """Every window of ten consecutive tokens of the document, one item each. Probes recall
    and coverage bought with volume at about the length of an expected item (which a
    length-bounded rule would accept): the extra windows must cost precision."""
    words = tokens(document.text)
    count = max(len(words) - NGRAM + 1, 1 if words else 0)
    return _same(document.id, [" ".join(words[i : i + NGRAM]) for i in range(count)])


@_adversary("document", "the whole document, once")
def whole_document(document: GoldDocument, baseline: ExtractedDocument) -> ExtractedDocument:
    """The whole document as one item. Probes one-sided rules: the document contains every
    expected item's words, so ``containment`` and ``fuzzy-set`` match it with one expected
    item (one-to-one matching stops it at one)."""
    return _same(document.id, [document.text])


@_adversary("document-x3", f"the whole document x{K}")
def document_x3(document: GoldDocument, baseline: ExtractedDocument) -> ExtractedDocument:
    """The whole document copied three times. Probes one-sided rules past one-to-one
    matching: under ``containment`` each copy matches another expected item, so three
    copies match three (the meeting notes' events all)."""
    return _same(document.id, [document.text] * K)


@_adversary("document-x50", f"the whole document x{MANY}")
def document_x50(document: GoldDocument, baseline: ExtractedDocument) -> ExtractedDocument:
    """The whole document copied fifty times: more copies than a LoCoMo session has
    observations. Probes ``containment`` and ``fuzzy-set`` on observation coverage: every
    expected fact is matched by a copy of its own."""
    return _same(document.id, [document.text] * MANY)


@_adversary("all-words", "every distinct word of the document in one enormous item")
def all_words(document: GoldDocument, baseline: ExtractedDocument) -> ExtractedDocument:
    """Every distinct word of the document once, in order of first appearance, as one
    item: a bag holding every expected item's words with no sentence in it. Probes
    ``containment`` and ``fuzzy-set`` (a superset scores 1 and 100)."""
    return _same(document.id, [" ".join(dict.fromkeys(tokens(document.text)))])


def _answers(document: GoldDocument) -> tuple[set[str], set[str], set[str]]:
    """The normalised expected events, entity forms (names and aliases) and
    observations of a document: what a gold-reading probe must not hand back verbatim."""
    events = {normalise(event.description) for event in document.events}
    forms = {normalise(form) for e in document.entities for form in (e.name, *e.mentions)}
    observations = {normalise(o.text) for o in document.observations}
    return events, forms, observations


def _transformed(
    document: GoldDocument, change: Callable[[tuple[str, ...]], tuple[str, ...] | None]
) -> ExtractedDocument:
    """Every expected event, entity name and observation with ``change`` applied to its
    tokens; an item the change leaves out (None) or turns into an answer is dropped."""
    events, forms, observations = _answers(document)

    def changed(texts: Iterable[str], answers: set[str]) -> list[str]:
        out = []
        for text in texts:
            result = change(tokens(text))
            if result is not None and " ".join(result) not in answers:
                out.append(" ".join(result))
        return out

    return _items(
        document.id,
        changed((e.description for e in document.events), events),
        changed((e.name for e in document.entities), forms),
        changed((o.text for o in document.observations), observations),
    )


@_adversary("gold-shuffled", "the expected items' words in a random order (reads the gold)")
def gold_shuffled(document: GoldDocument, baseline: ExtractedDocument) -> ExtractedDocument:
    """Each expected event, entity name and observation with its tokens permuted by a
    seeded RNG (never the identity; an item with one distinct token is left out). Probes
    order-blindness: ``jaccard`` (token sets) scores every one 1.0 and ``fuzzy-set`` 100;
    an order-aware rule (``lcs``, ``fuzzy``) should credit few (a 4-token item with one
    word moved keeps an LCS of 3/4)."""
    rng = _rng("gold-shuffled", document)

    def shuffle(words: tuple[str, ...]) -> tuple[str, ...] | None:
        if len(set(words)) < 2:
            return None
        order = list(words)
        while tuple(order) == words:
            rng.shuffle(order)
        return tuple(order)

    return _transformed(document, shuffle)


@_adversary("gold-first-word", "the first word of each expected item (reads the gold)")
def gold_first_word(document: GoldDocument, baseline: ExtractedDocument) -> ExtractedDocument:
    """The first token of each expected event, entity name and observation (a one-token
    item, or one whose first word is an expected item or alias, is left out). Probes
    fragment credit: ``fuzzy-set`` scores a one-word subset 100."""
    return _transformed(document, lambda words: words[:1] if len(words) > 1 else None)


@_adversary("baseline-x3", f"the baseline's own items, each x{K}")
def baseline_x3(document: GoldDocument, baseline: ExtractedDocument) -> ExtractedDocument:
    """The baseline's extraction with every event, entity and observation repeated three
    times. Probes duplicate credit: one-to-one matching makes the copies false positives,
    so precision and F1 must fall below the baseline's under every rule."""
    return ExtractedDocument(
        id=document.id,
        events=tuple(_repeat(baseline.events, K)),
        entities=tuple(_repeat(baseline.entities, K)),
        observations=tuple(_repeat(baseline.observations, K)),
    )
