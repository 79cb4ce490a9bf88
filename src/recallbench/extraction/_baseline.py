"""A deterministic extractor with no model, so the extraction pipeline runs anywhere.

It exists to exercise the pipeline and to give a floor, not to be good. Rules:

- Lines of the form ``Speaker: text`` (a LoCoMo session, a chat log) give the speaker as
  the actor of what follows; other lines have no actor.
- Sentences are split at ``.``, ``!`` or ``?`` followed by white space.
- Observations: every sentence in the first person (``I``, ``we``, ``my``, ``our``, ...),
  rewritten in the third person by putting the speaker's name for ``I``/``me``/``we``/
  ``us`` and ``Name's`` for ``my``/``our`` (``I went hiking`` -> ``Caroline went hiking``).
- Events: every sentence that states something done or planned, in whatever person: a
  past-tense verb (a word ending in ``ed`` or a common irregular past form) or a future
  marker (``will``, ``'ll``, ``going to``, ``gonna``, ``plan``); in the third person as
  above when it is in the first; category ``past`` or ``plan``; no due date. (Events in
  the first person only would leave the baseline below copying every sentence on notes
  and e-mails, where events are mostly stated in the third person.)
- Entities: the speakers (type ``PERSON``) and capitalised words not at the start of a
  sentence (type ``UNKNOWN``), each surface form its own entity, mentions = the form.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from recallbench.extraction._formats import (
    ExtractedDocument,
    ExtractedEntity,
    ExtractedEvent,
    ExtractedObservation,
    ExtractionOutput,
    GoldDocument,
)

NAME = "baseline"
_SPEAKER = re.compile(r"^\s*([A-Z][\w .'-]{0,40}?):\s+(.*)$")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'll|I'd|(?i:me|my|we|we're|we've|we'll|us|our))\b")
_SUBJECT = re.compile(r"\b(?:I|(?i:me|we|us))\b")  # "I" only in capitals: "i" is a typo
_POSSESSIVE = re.compile(r"\b(my|our)\b", re.IGNORECASE)
_FUTURE = re.compile(r"\b(will|going to|gonna|plan(?:ning)?)\b|'ll\b", re.IGNORECASE)
_IRREGULAR = frozenset(
    [
        "went",
        "got",
        "had",
        "made",
        "took",
        "saw",
        "came",
        "began",
        "bought",
        "found",
        "gave",
        "left",
        "met",
        "ran",
        "read",
        "said",
        "sent",
        "spent",
        "told",
        "thought",
        "felt",
        "kept",
        "won",
        "wrote",
        "became",
        "brought",
        "built",
        "caught",
        "chose",
        "drew",
        "drove",
        "ate",
        "fell",
        "flew",
        "forgot",
        "grew",
        "heard",
        "held",
        "knew",
        "led",
        "lost",
        "paid",
        "rode",
        "sang",
        "sat",
        "slept",
        "spoke",
        "stood",
        "swam",
        "taught",
        "threw",
        "understood",
        "woke",
        "wore",
    ]
)
_WORD = re.compile(r"[A-Za-z']+")
_CAPITALISED = re.compile(r"(?<!^)(?<![.!?]\s)\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)")
_NOT_NAMES = frozenset({"I", "I'm", "I've", "I'll", "I'd", "Oh", "Hey", "Hi", "Yes", "No"})


def _sentences(text: str) -> Iterable[tuple[str | None, str]]:
    """(speaker or None, sentence) of every sentence of ``text``."""
    for line in text.splitlines():
        found = _SPEAKER.match(line)
        speaker, said = (found[1].strip(), found[2]) if found else (None, line)
        for sentence in _SENTENCE.split(said.strip()):
            if sentence.strip():
                yield speaker, sentence.strip()


def _third_person(sentence: str, speaker: str | None) -> str:
    """The sentence with the speaker's name for the first person (unchanged without one)."""
    if speaker is None:
        return sentence
    sentence = re.sub(r"\bI'm\b", f"{speaker} is", sentence)
    sentence = re.sub(r"\bI've\b", f"{speaker} has", sentence)
    sentence = re.sub(r"\bI'll\b", f"{speaker} will", sentence)
    sentence = re.sub(r"\bI'd\b", f"{speaker} would", sentence)
    sentence = _POSSESSIVE.sub(f"{speaker}'s", sentence)
    return _SUBJECT.sub(speaker, sentence)


def _is_past(sentence: str) -> bool:
    words = [w.casefold() for w in _WORD.findall(sentence)]
    return any((len(w) > 4 and w.endswith("ed")) or w in _IRREGULAR for w in words)


def extract_document(document: GoldDocument) -> ExtractedDocument:
    """The baseline's extraction of one document (see the module's rules)."""
    events: list[ExtractedEvent] = []
    observations: list[ExtractedObservation] = []
    forms: dict[str, str] = {}
    for speaker, sentence in _sentences(document.text):
        if speaker is not None:
            forms.setdefault(speaker, "PERSON")
        for name in _CAPITALISED.findall(sentence):
            if name not in _NOT_NAMES:
                forms.setdefault(name, "UNKNOWN")
        first_person = _FIRST_PERSON.search(sentence) is not None
        text = _third_person(sentence, speaker) if first_person else sentence
        if first_person:
            observations.append(ExtractedObservation(text=text, actor=speaker))
        if _FUTURE.search(sentence):
            events.append(ExtractedEvent(description=text, category="plan", actor=speaker))
        elif _is_past(sentence):
            events.append(ExtractedEvent(description=text, category="past", actor=speaker))
    entities = [ExtractedEntity(name=n, type=t, mentions=(n,)) for n, t in forms.items()]
    return ExtractedDocument(
        id=document.id,
        events=tuple(events),
        entities=tuple(entities),
        observations=tuple(observations),
    )


class BaselineExtractor:
    """The built-in deterministic extractor (``baseline``): no model, no state."""

    name = NAME

    def extract(self, documents: Iterable[GoldDocument]) -> ExtractionOutput:
        """Every document's extraction, as a ``recallbench.extraction-output/v1`` value."""
        return ExtractionOutput(
            system=self.name,
            documents=tuple(extract_document(document) for document in documents),
            metadata={"extractor": NAME, "model": None},
        )
