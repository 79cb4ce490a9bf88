"""LoCoMo (snap-research, ``locomo10.json``): long conversations and questions about them.

Rules (recorded in the dataset's ``metadata["loader"]``):

- Each conversation is a unit: its questions are asked against a store holding only that
  conversation. Documents are its dialogue turns (``<sample_id>:<dia_id>``; text
  ``Speaker: text``, plus the caption of a shared image), or, at session granularity, its
  sessions (``<sample_id>:S<n>``, the session's turns one per line).
- Relevant (grade 1) = the question's evidence turns, or the sessions holding them.
- Categories follow upstream ``evaluation.py`` (confirmed in upstream issue #29):
  1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial. The paper lists them
  in another order, and some tools number them differently; the mapping is written into
  the dataset's metadata so a report never depends on the order.
- Adversarial (category 5) questions are kept, tagged ``adversarial`` and flagged, so a
  report can show results with and without them.
- Evidence ids are read leniently: every ``D<session>:<turn>`` in an evidence string
  counts (so ``"D8:6; D9:17"`` and space-joined lists give several ids), a stray colon
  (``D:11:26``) and leading zeros (``D30:05``) are repaired. Each repair is recorded as an
  altered judgment; an id that names no turn of the conversation (``D10:19`` past the end
  of session 10, a bare ``D``) is dropped and recorded. A question left with no evidence
  stays, with no relevant memory (it is counted apart from the means).
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import JsonValue

from recallbench.core import Dataset, DatasetError, Document, Problem, Query
from recallbench.datasets._provenance import Provenance, read_json_list

LOADER_VERSION = "1"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
SESSION_KEY = re.compile(r"session_(\d+)")
Granularity = Literal["turn", "session"]


def _when(text: Any) -> str | None:
    """``1:56 pm on 8 May, 2023`` as ISO 8601, or None when it does not parse."""
    try:
        return datetime.strptime(str(text), "%I:%M %p on %d %B, %Y").isoformat()
    except ValueError:
        return None


def _turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn.get('speaker', '')}: {turn.get('text', '')}"
    caption = turn.get("blip_caption")
    return f"{text} [shares an image: {caption}]" if caption else text


def _sessions(conversation: dict[str, Any]) -> list[tuple[int, list[dict[str, Any]], Any]]:
    """(number, turns, date text) of each session, in order."""
    found = []
    for key, turns in conversation.items():
        match = SESSION_KEY.fullmatch(key)
        if match and isinstance(turns, list):
            number = int(match.group(1))
            found.append((number, turns, conversation.get(f"session_{number}_date_time")))
    return sorted(found, key=lambda item: item[0])


def _evidence(raw: Any, turn_ids: set[str], subject: str, provenance: Provenance) -> list[str]:
    """The conversation's dia_ids that ``raw`` (a question's evidence list) names."""
    kept: list[str] = []
    for text in raw if isinstance(raw, list) else []:
        found = [f"D{int(s)}:{int(t)}" for s, t in EVIDENCE.findall(str(text))]
        if not found:
            provenance.change(subject, "dropped", f"evidence names no turn: {text!r}")
            continue
        if found != [text]:
            provenance.change(
                subject, "altered", f"evidence id repaired: {text!r} read as {', '.join(found)}"
            )
        for dia_id in found:
            if dia_id not in turn_ids:
                provenance.change(
                    subject, "dropped", f"dangling evidence id: {dia_id} is not in the conversation"
                )
            elif dia_id not in kept:
                kept.append(dia_id)
    return kept


def load_locomo(path: Path, granularity: Granularity = "turn") -> Dataset:
    """Read ``locomo10.json`` (or a folder holding it) at turn or session granularity."""
    file = path / "locomo10.json" if path.is_dir() else path
    samples = read_json_list(file, "conversations")
    provenance = Provenance(
        "locomo",
        LOADER_VERSION,
        file,
        rules={
            "granularity": granularity,
            "units": "one per conversation (fresh store)",
            "relevant": "evidence turns" if granularity == "turn" else "sessions holding them",
            "categories": {str(number): name for number, name in CATEGORIES.items()},
            "adversarial": "kept, tagged 'adversarial'",
            "evidence": "every D<session>:<turn> in the string; repairs and dangling ids listed",
        },
    )
    documents: list[Document] = []
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    units: dict[str, tuple[str, ...]] = {}
    problems: list[Problem] = []
    for index, sample in enumerate(samples):
        where = f"$[{index}]"
        if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
            problems.append(Problem(where, "expected an object with a conversation"))
            continue
        sample_id = str(sample.get("sample_id", f"conv-{index}"))
        session_of: dict[str, str] = {}
        unit_docs: list[str] = []
        for number, turns, date in _sessions(sample["conversation"]):
            when = _when(date)
            session_doc = f"{sample_id}:S{number}"
            lines = []
            for turn in turns:
                if not isinstance(turn, dict) or not isinstance(turn.get("dia_id"), str):
                    problems.append(Problem(f"{where}.conversation.session_{number}", "bad turn"))
                    continue
                session_of[turn["dia_id"]] = session_doc
                text = _turn_text(turn)
                lines.append(text)
                if granularity == "turn":
                    doc_id = f"{sample_id}:{turn['dia_id']}"
                    metadata: dict[str, JsonValue] = {
                        "session_id": session_doc,
                        "speaker": turn.get("speaker"),
                        "session_date": date,
                    }
                    if when:
                        metadata["created_at"] = when
                    documents.append(
                        Document.model_construct(
                            id=doc_id, text=text, title=None, metadata=metadata
                        )
                    )
                    unit_docs.append(doc_id)
            if granularity == "session":
                metadata = {"session_id": session_doc, "session_date": date}
                if when:
                    metadata["created_at"] = when
                documents.append(
                    Document.model_construct(
                        id=session_doc,
                        text="\n".join(lines),
                        title=f"{date}" if date else None,
                        metadata=metadata,
                    )
                )
                unit_docs.append(session_doc)
        units[sample_id] = tuple(unit_docs)
        for number, qa in enumerate(sample.get("qa") or []):
            query_id = f"{sample_id}:q{number}"
            category = qa.get("category")
            name = CATEGORIES.get(category) if isinstance(category, int) else None
            if name is None or not isinstance(qa.get("question"), str):
                problems.append(
                    Problem(f"{where}.qa[{number}]", "expected a question and a category 1-5")
                )
                continue
            evidence = _evidence(qa.get("evidence"), set(session_of), query_id, provenance)
            if not evidence:
                provenance.change(query_id, "flagged", "no evidence: no relevant memory")
            if category == 5:
                provenance.change(query_id, "flagged", "adversarial (category 5)")
            relevant = (
                [f"{sample_id}:{dia_id}" for dia_id in evidence]
                if granularity == "turn"
                else list(dict.fromkeys(session_of[dia_id] for dia_id in evidence))
            )
            qrels[query_id] = dict.fromkeys(relevant, 1)
            answer = qa.get("answer", qa.get("adversarial_answer"))
            queries.append(
                Query.model_construct(
                    id=query_id,
                    text=qa["question"],
                    intent=None,
                    category=name,
                    session_id=None,
                    tags=("adversarial",) if category == 5 else (),
                    unit=sample_id,
                    metadata={
                        "category_id": category,
                        "answer": answer if isinstance(answer, str | int | float) else None,
                        "evidence": qa.get("evidence"),
                    },
                )
            )
    if problems:
        raise DatasetError(str(file), problems)
    suffix = "" if granularity == "turn" else "-sessions"
    return Dataset.model_construct(
        format="recallbench.dataset/v1",
        name=f"locomo10{suffix}",
        version=LOADER_VERSION,
        description="LoCoMo: 10 long conversations, questions with evidence turns",
        license="CC BY-NC 4.0",
        relevance_threshold=1,
        metadata={
            "categories": {str(number): name for number, name in CATEGORIES.items()},
            "loader": provenance.metadata(),
        },
        documents=tuple(documents),
        queries=tuple(queries),
        qrels=qrels,
        units=units,
    )
