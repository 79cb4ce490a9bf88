"""LoCoMo (snap-research, ``locomo10.json``): long conversations and questions about them.

Rules (recorded in the dataset's ``metadata["loader"]``):

- The file is a list of conversations or one conversation (an object); a folder holds
  ``locomo10.json`` or one such file per conversation (``*.json``, in name order).
- Each conversation is a unit: its questions are asked against a store holding only that
  conversation. Documents are its dialogue turns (``<sample_id>:<dia_id>``; text
  ``Speaker: text`` plus the caption of a shared image), or, at session granularity, its
  sessions (``<sample_id>:S<n>``, the session's turns one per line). A turn's text is its
  ``text``, or ``clean_text`` in the variant that has no ``text``; a turn with neither is a
  located error.
- Relevant (grade 1) = the question's evidence turns, or the sessions holding them.
- Categories follow upstream ``evaluation.py`` (confirmed in upstream issue #29):
  1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial. The paper lists them
  in another order, and some tools number them differently; the mapping is written into
  the dataset's metadata so a report never depends on the order.
- Adversarial (category 5) questions are kept, tagged ``adversarial`` and flagged, so a
  report can show results with and without them, with their evidence as relevant; they are
  marked ``answerable: false`` (the answer memory gives is "not mentioned"), so
  ``false_surface`` counts them, and only them. Their trap (the wrong answer they invite) is
  ``adversarial_answer``, kept as metadata apart from ``answer``: two questions carry both,
  and there ``answer`` is the correct one.
- Ids must be unique: a repeated ``sample_id`` or ``dia_id`` is a located error.
- Evidence ids are read leniently: every ``D<session>:<turn>`` in an evidence string
  counts (so ``"D8:6; D9:17"`` and space-joined lists give several ids), a stray colon
  (``D:11:26``) and leading zeros (``D30:05``) are repaired, a range (``D12:3-D12:5``,
  ``D12:3-5``) stands for every turn from one end to the other in conversation order, and
  evidence given as one string is read as a list of one. A range whose end (or start)
  is not in the conversation (``D18:6-D18:8`` where session 18 ends at ``D18:7``) keeps
  the turns between its ends that exist, and says which end was missing. Each repair is
  recorded as an altered judgment; an id that names no turn of the conversation
  (``D10:19`` past the end of session 10, a bare ``D``) is dropped and recorded. A
  question left with no evidence stays, with no relevant memory: counted as "no relevant
  judgments", apart from every mean (it is not an abstention).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import JsonValue

from recallbench.core import Dataset, DatasetError, Document, Problem, Query
from recallbench.core._validation import read_json
from recallbench.datasets._building import Building
from recallbench.datasets._default_measures import CONVERSATION_MEASURES, DEFAULT_MEASURES_KEY
from recallbench.datasets._provenance import Provenance

LOADER_VERSION = "3"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_ID = r"D\s*:?\s*(\d+)\s*:\s*(\d+)"
EVIDENCE = re.compile(rf"{_ID}(?:\s*-\s*(?:D\s*:?\s*(\d+)\s*:\s*)?(\d+))?")
"""A dia_id, or a range of them (``D12:3-D12:5``, ``D12:3-5``)."""
SESSION_KEY = re.compile(r"session_(\d+)")
Granularity = Literal["turn", "session"]


def _when(text: Any) -> str | None:
    """``1:56 pm on 8 May, 2023`` as ISO 8601, or None when it does not parse."""
    try:
        return datetime.strptime(str(text), "%I:%M %p on %d %B, %Y").isoformat()
    except ValueError:
        return None


def _turn_text(turn: dict[str, Any]) -> str | None:
    """``Speaker: text`` (``clean_text`` when there is no ``text``), or None without text."""
    said = turn.get("text")
    if not isinstance(said, str):
        said = turn.get("clean_text")
    caption = turn.get("blip_caption")
    if not isinstance(said, str) or not (said.strip() or caption):
        return None
    text = f"{turn.get('speaker', '')}: {said}"
    return f"{text} [shares an image: {caption}]" if caption else text


def _sessions(conversation: dict[str, Any]) -> list[tuple[int, Any, Any]]:
    """(number, turns, date text) of each session, in order."""
    found = []
    for key, turns in conversation.items():
        match = SESSION_KEY.fullmatch(key)
        if match:
            number = int(match.group(1))
            found.append((number, turns, conversation.get(f"session_{number}_date_time")))
    return sorted(found, key=lambda item: item[0])


def _samples(path: Path) -> list[tuple[Path, str, Any]]:
    """(file, location prefix, sample) of every conversation under ``path``."""
    if path.is_dir():
        files = [path / "locomo10.json"] if (path / "locomo10.json").is_file() else []
        files = files or sorted(path.glob("*.json"))
        if not files:
            raise DatasetError(str(path), [Problem(str(path), "no LoCoMo .json file in folder")])
    else:
        files = [path]
    found: list[tuple[Path, str, Any]] = []
    for file in files:
        data = read_json(file)
        shown = f"{file.name}: " if path.is_dir() else ""
        if isinstance(data, dict):
            found.append((file, shown, data))
        elif isinstance(data, list):
            found.extend((file, f"{shown}[{index}]", item) for index, item in enumerate(data))
        else:
            where = f"{shown}$"
            raise DatasetError(str(path), [Problem(where, "expected a conversation or a list")])
    return found


def _at(prefix: str, suffix: str) -> str:
    """A location: ``[3]`` + ``.conversation`` -> ``[3].conversation``."""
    if not prefix or prefix.endswith(": "):
        return prefix + suffix.removeprefix(".")
    return prefix + suffix


@dataclass
class _Conversation:
    """One conversation's turns, in order, while it is read."""

    sample_id: str
    where: str
    order: list[str] = field(default_factory=list)
    """dia_ids in conversation order (ranges of evidence follow it)."""
    first_at: dict[str, str] = field(default_factory=dict)
    session_of: dict[str, str] = field(default_factory=dict)


def _turn_key(dia_id: str) -> tuple[int, int] | None:
    """(session, turn) of a dia_id such as ``D12:3``, or None for another shape."""
    match = re.fullmatch(r"D(\d+):(\d+)", dia_id.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def _range(start: str, end: str, order: list[str], position: dict[str, int]) -> list[str]:
    """The conversation's turns from ``start`` to ``end``, in conversation order.

    Both ends in the conversation: every turn between them in its order. An end that is
    not (``D1:2-D1:4`` where session 1 ends at ``D1:3``): the turns that exist between the
    two ids by session and turn number, so a range running past a session's end keeps the
    turns it does name. A range that runs backwards names no turns.
    """
    if start in position and end in position:
        return (
            order[position[start] : position[end] + 1] if position[end] >= position[start] else []
        )
    low, high = _turn_key(start), _turn_key(end)
    if low is None or high is None or high < low:
        return []
    return [d for d in order if (key := _turn_key(d)) is not None and low <= key <= high]


def _evidence(
    raw: Any, conversation: _Conversation, subject: str, provenance: Provenance
) -> list[str]:
    """The conversation's dia_ids that ``raw`` (a question's evidence) names."""
    position = {dia_id: index for index, dia_id in enumerate(conversation.order)}
    kept: list[str] = []
    for text in [raw] if isinstance(raw, str) else raw:
        found: list[str] = []
        for session, turn, end_session, end_turn in EVIDENCE.findall(str(text)):
            start = f"D{int(session)}:{int(turn)}"
            if not end_turn:
                found.append(start)
                continue
            end = f"D{int(end_session or session)}:{int(end_turn)}"
            turns = _range(start, end, conversation.order, position)
            if not turns:
                provenance.change(subject, "dropped", f"evidence range names no turns: {text!r}")
                continue
            missing = [
                f"range {side} {dia_id}"
                for side, dia_id in (("start", start), ("end", end))
                if dia_id not in position
            ]
            if missing:
                kept_range = turns[0] if len(turns) == 1 else f"{turns[0]}-{turns[-1]}"
                provenance.change(
                    subject,
                    "altered",
                    f"evidence {text!r}: {' and '.join(missing)} not in the conversation; "
                    f"kept {kept_range}",
                )
            found.extend(turns)
        if not found:
            provenance.change(subject, "dropped", f"evidence names no turn: {text!r}")
            continue
        if found != [text]:
            provenance.change(
                subject, "altered", f"evidence id repaired: {text!r} read as {', '.join(found)}"
            )
        for dia_id in found:
            if dia_id not in position:
                provenance.change(
                    subject, "dropped", f"dangling evidence id: {dia_id} is not in the conversation"
                )
            elif dia_id not in kept:
                kept.append(dia_id)
    return kept


def _dataset_name(path: Path) -> str:
    """The dataset's name from its file: ``locomo10`` for ``locomo10.json`` (or a folder
    holding it), ``conv-26`` for ``conv-26.json``, the folder's name for a folder of
    conversation files, so two LoCoMo-format files never share a name by default."""
    if path.is_dir():
        return "locomo10" if (path / "locomo10.json").is_file() else path.resolve().name
    return path.stem or "locomo"


def load_locomo(path: Path, granularity: Granularity = "turn") -> Dataset:
    """Read ``locomo10.json``, a one-conversation file or a folder of either, at turn or
    session granularity."""
    file = path / "locomo10.json" if (path / "locomo10.json").is_file() else path
    provenance = Provenance(
        "locomo",
        LOADER_VERSION,
        file,
        rules={
            "granularity": granularity,
            "units": "one per conversation (fresh store)",
            "relevant": "evidence turns" if granularity == "turn" else "sessions holding them",
            "categories": {str(number): name for number, name in CATEGORIES.items()},
            "adversarial": "kept with their evidence, tagged 'adversarial', answerable: false",
            "evidence": "every D<session>:<turn> in the string, ranges expanded; repairs and "
            "dangling ids listed",
            "text": "a turn's text, else its clean_text",
        },
    )
    build = _Build(provenance, granularity=granularity)
    for source, where, sample in _samples(path):
        build.sample(source, where, sample)
    suffix = "" if granularity == "turn" else "-sessions"
    return build.dataset(
        str(path),
        {
            "categories": {str(number): name for number, name in CATEGORIES.items()},
            DEFAULT_MEASURES_KEY: list(CONVERSATION_MEASURES),
        },
        name=f"{_dataset_name(path)}{suffix}",
        version=LOADER_VERSION,
        description="LoCoMo: long conversations, questions with evidence turns",
        license="CC BY-NC 4.0",
    )


@dataclass
class _Build(Building):
    """The dataset being built from one or more files' conversations."""

    granularity: Granularity = "turn"
    sample_at: dict[str, str] = field(default_factory=dict)

    def sample(self, source: Path, where: str, sample: Any) -> None:
        if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
            message = "expected an object with a conversation"
            self.problems.append(Problem(where.removesuffix(": ") or "$", message))
            return
        sample_id = sample.get("sample_id", f"conv-{len(self.units) + 1}")
        if not isinstance(sample_id, str | int) or str(sample_id) in self.sample_at:
            first = self.sample_at.get(str(sample_id), "")
            message = f"duplicate sample_id {str(sample_id)!r} (first at {first or '$'})"
            self.problems.append(
                Problem(_at(where, ".sample_id"), message if first else "expected a string")
            )
            return
        self.sample_at[str(sample_id)] = where.removesuffix(": ") or "$"
        conversation = _Conversation(str(sample_id), where)
        unit_docs = self._turns(conversation, sample["conversation"])
        self.units[conversation.sample_id] = tuple(unit_docs)
        qa = sample.get("qa") or []
        if not isinstance(qa, list):
            self.problems.append(Problem(_at(where, ".qa"), "expected a list of questions"))
            return
        for number, item in enumerate(qa):
            self._question(conversation, number, item)

    def _turns(self, conversation: _Conversation, raw: dict[str, Any]) -> list[str]:
        """Add the conversation's turn (or session) documents; return the unit's ids."""
        unit_docs: list[str] = []
        sample_id, where = conversation.sample_id, conversation.where
        for number, turns, date in _sessions(raw):
            at = _at(where, f".conversation.session_{number}")
            if not isinstance(turns, list):
                self.problems.append(Problem(at, "expected a list of turns"))
                continue
            when = _when(date)
            session_doc = f"{sample_id}:S{number}"
            lines = []
            for index, turn in enumerate(turns):
                if not isinstance(turn, dict) or not isinstance(turn.get("dia_id"), str):
                    self.problems.append(Problem(f"{at}[{index}]", "expected a turn with a dia_id"))
                    continue
                dia_id = turn["dia_id"]
                if dia_id in conversation.first_at:
                    first = conversation.first_at[dia_id]
                    message = f"duplicate dia_id {dia_id!r} (first at {first})"
                    self.problems.append(Problem(f"{at}[{index}].dia_id", message))
                    continue
                conversation.first_at[dia_id] = f"{at}[{index}]"
                text = _turn_text(turn)
                if text is None:
                    message = 'turn has no text (expected "text" or "clean_text")'
                    self.problems.append(Problem(f"{at}[{index}]", message))
                    continue
                conversation.order.append(dia_id)
                conversation.session_of[dia_id] = session_doc
                lines.append(text)
                if self.granularity == "turn":
                    doc_id = f"{sample_id}:{dia_id}"
                    metadata: dict[str, JsonValue] = {
                        "session_id": session_doc,
                        "speaker": turn.get("speaker"),
                        "session_date": date,
                    }
                    if when:
                        metadata["created_at"] = when
                    self.documents[doc_id] = Document.model_construct(
                        id=doc_id, text=text, metadata=metadata
                    )
                    self.origins[doc_id] = f"{at}[{index}]"
                    unit_docs.append(doc_id)
            if self.granularity == "session" and lines:
                metadata = {"session_id": session_doc, "session_date": date}
                if when:
                    metadata["created_at"] = when
                self.documents[session_doc] = Document.model_construct(
                    id=session_doc,
                    text="\n".join(lines),
                    title=f"{date}" if date else None,
                    metadata=metadata,
                )
                self.origins[session_doc] = at
                unit_docs.append(session_doc)
        return unit_docs

    def _question(self, conversation: _Conversation, number: int, qa: Any) -> None:
        sample_id = conversation.sample_id
        at = _at(conversation.where, f".qa[{number}]")
        query_id = f"{sample_id}:q{number}"
        category = qa.get("category") if isinstance(qa, dict) else None
        name = CATEGORIES.get(category) if isinstance(category, int) else None
        if not isinstance(qa, dict) or name is None or not isinstance(qa.get("question"), str):
            self.problems.append(Problem(at, "expected a question and a category 1-5"))
            return
        raw = qa.get("evidence")
        if raw is not None and not isinstance(raw, str | list):
            message = "evidence must be a list of dia_ids or a string"
            self.problems.append(Problem(f"{at}.evidence", message))
            return
        provenance = self.provenance
        evidence = _evidence(raw or [], conversation, query_id, provenance)
        if not evidence:
            provenance.change(query_id, "flagged", "no evidence: no relevant memory")
        if category == 5:
            provenance.change(query_id, "flagged", "adversarial (category 5)")
        relevant = (
            [f"{sample_id}:{dia_id}" for dia_id in evidence]
            if self.granularity == "turn"
            else list(dict.fromkeys(conversation.session_of[dia_id] for dia_id in evidence))
        )
        self.qrels[query_id] = dict.fromkeys(relevant, 1)
        answer = qa.get("answer", qa.get("adversarial_answer"))
        trap = qa.get("adversarial_answer") if category == 5 else None
        self.queries.append(
            Query.model_construct(
                id=query_id,
                text=qa["question"],
                category=name,
                tags=("adversarial",) if category == 5 else (),
                answerable=category != 5,
                unit=sample_id,
                metadata={
                    "category_id": category,
                    "answer": answer if isinstance(answer, str | int | float) else None,
                    # the trap an adversarial question invites: adversarial_answer, never the
                    # correct answer that two questions also carry (conv-26 q167, q178)
                    "adversarial_answer": trap if isinstance(trap, str) else None,
                    "evidence": raw,
                },
            )
        )
        self.origins[query_id] = at
