"""MADial-Bench (hejunqing/MADial-Bench, NAACL 2025): memory recall in dialogue, en and zh.

Files (JSON Lines): ``MADial-Bench-<lang>-memory.json``, one ``{"<id>": {time, scene,
emotion, event}}`` per line (zh adds ``id`` and ``user-id``), and
``MADial-Bench-<lang>-dialogue.json``, one ``{dialogue, test-turn, relevant-id, user-id}``
per line (zh adds ``id``). The folder may also be upstream's ``data`` folder (``en/``, ``ch/``).

Rules (recorded in the dataset's ``metadata["loader"]``):

- Documents are the memories: id = the memory's key, text = ``event``; ``time``, ``scene``,
  ``emotion`` (and zh's ``user-id``) go into metadata, ``created_at`` = ``time``. Keys are
  unique within each file (en 1..160, zh 1..171, across both users), so they need no user
  prefix; a repeated key is an error rather than silently renamed.
- Queries are the dialogues, asked at their first test turn, as upstream's recall code
  does (``Embedding.py``: ``''.join(dialogue[:test_turn[0]])``): the text is what the
  assistant has seen when it must recall, the turns before ``test-turn[0]``, with the
  ``<BOD>``/``<EOD>`` markers removed, each turn stripped, one turn per line. Later test
  turns are kept in metadata. The id is ``<lang>-<n>``, n = the dialogue's ``id`` (zh) or
  its 0-based line position (en, where the zh ``id`` equals the position too), so en-n and
  zh-n are the same dialogue in two languages (though their relevant ids differ in 8 of
  the 160 dialogues and their test turns in 2).
- Units: one per user (``user-<id>``), holding only that user's memories; each dialogue is
  asked in its user's unit, as upstream ranks only the memories of the dialogue's user
  (``embedding_top_20_new.py``: ``summary_embeddings[dd['user-id']]``). A memory's user is
  its ``user-id`` (zh); en memories carry none, so it is the user its event names (Bart =
  1, Lisa = 2, upstream's mapping), which on the released en file is exactly upstream's
  own en rule, "the first 76 memory lines are Bart's" (that line rule fails for zh). A
  dialogue's user is its ``user-id``, else the one user who speaks in its turns.
- Relevant (grade 1) = the dialogue's ``relevant-id`` memories. An id naming no memory, or
  naming another user's memory (which no system could return from the dialogue's unit),
  is dropped and recorded; a dialogue left without relevant memories, or with no context
  before its test turn, is dropped and recorded.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from recallbench.core import Dataset, DatasetError, Document, Problem, Query
from recallbench.datasets._json_v1 import checked_dataset
from recallbench.datasets._provenance import Provenance, read_jsonl

LANGUAGES = {"en": "en", "zh": "ch"}
"""Language -> upstream's folder name for it (``data/ch`` holds the Chinese files)."""

MARKERS = ("<BOD>", "<EOD>")
"""Begin/end-of-dialogue markers: turns of their own in the source, not dialogue."""

USERS = {1: "Bart", 2: "Lisa"}
"""User id -> name (upstream's ``Embedding.py``: ``'Bart' if user-id == 1 else 'Lisa'``)."""

SPEAKER = re.compile(r"\s*<([^<>]+)>\s*:")
"""A turn's speaker tag: ``<Bart>: "..."`` (en), ``<Bart>:"..."`` (zh)."""


def unit_of(user: int | str) -> str:
    """The id of a user's unit."""
    return f"user-{user}"


def _named_user(text: str) -> int | None:
    """The one user whose name ``text`` contains, if exactly one."""
    named = [user for user, name in USERS.items() if name in text]
    return named[0] if len(named) == 1 else None


def _files(path: Path, language: str) -> tuple[Path, Path]:
    """The memory and dialogue files: in the folder itself or in upstream's subfolder."""
    names = (f"MADial-Bench-{language}-memory.json", f"MADial-Bench-{language}-dialogue.json")
    for folder in (path, path / language, path / LANGUAGES[language]):
        if (folder / names[0]).is_file() or (folder / names[1]).is_file():
            return folder / names[0], folder / names[1]
    return path / names[0], path / names[1]


def _memories(path: Path, problems: list[Problem]) -> tuple[list[Document], dict[str, str]]:
    """The memories, and memory id -> the id of its user's unit."""
    documents: list[Document] = []
    units: dict[str, str] = {}
    seen: dict[str, int] = {}
    for number, record in read_jsonl(path, problems):
        where = f"{path}:{number}"
        value = next(iter(record.values()), None) if len(record) == 1 else None
        if not isinstance(value, dict):
            problems.append(Problem(where, 'expected {"<memory id>": {...}}'))
            continue
        memory_id = next(iter(record))
        event = value.get("event")
        if not isinstance(event, str) or not event.strip():
            problems.append(Problem(where, f'memory {memory_id}: expected a non-empty "event"'))
            continue
        if "id" in value and str(value["id"]) != memory_id:
            problems.append(Problem(where, f'memory {memory_id}: "id" is {value["id"]!r}'))
            continue
        if memory_id in seen:
            problems.append(Problem(where, f"memory {memory_id} also at line {seen[memory_id]}"))
            continue
        seen[memory_id] = number
        user = value.get("user-id", _named_user(event))
        if isinstance(user, bool) or not isinstance(user, int | str):
            message = (
                f'memory {memory_id}: "user-id" must be an integer or a string'
                if "user-id" in value
                else f'memory {memory_id}: no "user-id" and its event names neither or both '
                f"of {' and '.join(USERS.values())}"
            )
            problems.append(Problem(where, message))
            continue
        units[memory_id] = unit_of(user)
        metadata: dict[str, JsonValue] = {
            key: value[key]
            for key in ("time", "scene", "emotion", "user-id")
            if isinstance(value.get(key), str | int)
        }
        if isinstance(value.get("time"), str):
            metadata["created_at"] = value["time"]
        documents.append(
            Document.model_construct(
                id=memory_id, text=event.strip(), title=None, metadata=metadata
            )
        )
    return documents, units


def context(turns: list[str], test_turn: int) -> str:
    """What the assistant has seen before ``test_turn``: one turn per line, no markers."""
    lines = []
    for turn in turns[:test_turn]:
        for marker in MARKERS:
            turn = turn.replace(marker, "")
        if turn.strip():
            lines.append(turn.strip())
    return "\n".join(lines)


def _dialogue_problem(record: dict[str, Any]) -> str | None:
    """What is wrong with a dialogue record's shape, if anything."""
    turns, tests = record.get("dialogue"), record.get("test-turn")
    if not isinstance(turns, list) or not all(isinstance(turn, str) for turn in turns):
        return '"dialogue" must be a list of strings'
    if not isinstance(tests, list) or not tests or not all(type(t) is int for t in tests):
        return '"test-turn" must be a non-empty list of integers'
    if not 0 <= tests[0] < len(turns):
        return f'"test-turn" {tests[0]} is outside the dialogue\'s {len(turns)} turns'
    relevant = record.get("relevant-id")
    if not isinstance(relevant, list) or not all(type(r) in (int, str) for r in relevant):
        return '"relevant-id" must be a list of memory ids'
    if "id" in record and type(record["id"]) not in (int, str):
        return '"id" must be an integer or a string'
    if "user-id" in record and type(record["user-id"]) not in (int, str):
        return '"user-id" must be an integer or a string'
    return None


def _dialogue_user(record: dict[str, Any]) -> int | str | None:
    """The dialogue's ``user-id``, else the one known user who speaks in its turns."""
    if "user-id" in record:
        user: int | str = record["user-id"]
        return user
    speakers = {match.group(1) for turn in record["dialogue"] if (match := SPEAKER.match(turn))}
    named = [user for user, name in USERS.items() if name in speakers]
    return named[0] if len(named) == 1 else None


def _dialogues(
    path: Path,
    language: str,
    memories: dict[str, Document],
    memory_units: dict[str, str],
    provenance: Provenance,
    problems: list[Problem],
) -> tuple[list[Query], dict[str, dict[str, int]]]:
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    seen: dict[str, int] = {}
    for position, (number, record) in enumerate(read_jsonl(path, problems)):
        where = f"{path}:{number}"
        if message := _dialogue_problem(record):
            problems.append(Problem(where, message))
            continue
        query_id = f"{language}-{record.get('id', position)}"
        if query_id in seen:
            problems.append(Problem(where, f"dialogue {query_id} also at line {seen[query_id]}"))
            continue
        user = _dialogue_user(record)
        if user is None:
            names = " or ".join(USERS.values())
            problems.append(Problem(where, f'no "user-id" and no single speaker {names}'))
            continue
        seen[query_id] = number
        unit = unit_of(user)
        relevant: dict[str, int] = {}
        for raw_id in record["relevant-id"]:
            memory = memories.get(str(raw_id))
            subject = f"{query_id}/{raw_id}"
            if memory is None:
                provenance.change(subject, "dropped", f"relevant-id {raw_id} names no memory")
                continue
            if memory_units[memory.id] != unit:
                reason = (
                    "relevant memory belongs to another user: "
                    f"memory {raw_id} is {memory_units[memory.id]}'s, the dialogue {unit}'s"
                )
                provenance.change(subject, "dropped", reason)
                continue
            relevant[memory.id] = 1
        text = context(record["dialogue"], record["test-turn"][0])
        if not text or not relevant:
            reason = "no relevant memory left" if text else "no dialogue before the test turn"
            provenance.change(query_id, "dropped", reason)
            continue
        metadata: dict[str, JsonValue] = {"test-turns": list(record["test-turn"]), "user-id": user}
        queries.append(Query(id=query_id, text=text, unit=unit, metadata=metadata))
        qrels[query_id] = relevant
    return queries, qrels


USER_RULES = {
    "en": "memory: en memories carry no user-id, so the user its event names (Bart = 1, "
    "Lisa = 2, upstream's mapping); on the released file this is exactly upstream's en "
    "rule 'the first 76 memory lines are Bart's, the rest Lisa's' (76 and 84, no "
    "disagreement), but the name does not depend on line order. dialogue: its user-id, "
    "else the one of Bart and Lisa who speaks in its turns",
    "zh": "memory: its user-id (on the released file it always agrees with the name its "
    "event gives, Bart = 1, Lisa = 2; upstream's 'first 76 lines are Bart's' en rule "
    "does not hold here). dialogue: its user-id, else the one of Bart and Lisa who "
    "speaks in its turns",
}
"""How each language's users are found, as recorded in the provenance rules."""


def load_madial(path: Path, language: str = "en") -> Dataset:
    """Read a MADial-Bench folder in ``language`` (``en`` or ``zh``); see the module
    docstring for the rules."""
    if language not in LANGUAGES:
        message = f"unknown language {language!r}: expected one of {', '.join(LANGUAGES)}"
        raise DatasetError(str(path), [Problem("", message)])
    memory_file, dialogue_file = _files(path, language)
    provenance = Provenance(
        loader="madial",
        version="1",
        source=path,
        rules={
            "language": language,
            "documents": "one per memory: id = the memory's key (unique in the file, so no "
            "user prefix), text = event; time, scene, emotion, user-id in metadata; "
            "created_at = time",
            "query_text": "the dialogue before its first test turn (dialogue[:test-turn[0]], "
            "as upstream's recall code), <BOD>/<EOD> removed, each turn stripped, one per line",
            "query_ids": f"{language}-<n>: n = the dialogue's id, else its 0-based line position",
            "grades": "every relevant-id is grade 1",
            "units": "one per user (user-<id>) holding only that user's memories; each "
            "dialogue is asked in its user's unit, as upstream ranks only the dialogue "
            "user's memories; a relevant-id naming another user's memory is dropped",
            "users": USER_RULES[language],
            "relevance_threshold": 1,
        },
    )
    problems: list[Problem] = []
    documents, memory_units = _memories(memory_file, problems)
    by_id = {document.id: document for document in documents}
    queries, qrels = _dialogues(dialogue_file, language, by_id, memory_units, provenance, problems)
    units: dict[str, tuple[str, ...]] = {}
    for document in documents:
        unit = memory_units[document.id]
        units[unit] = (*units.get(unit, ()), document.id)
    dataset = Dataset.model_construct(
        name=f"madial-bench-{language}",
        version="1",
        description="MADial-Bench: recall the memories a dialogue calls for "
        f"({'English' if language == 'en' else 'Chinese'})",
        license="MIT",
        relevance_threshold=1,
        metadata={"loader": provenance.metadata()},
        documents=tuple(documents),
        queries=tuple(queries),
        qrels=qrels,
        units=units,
    )
    return checked_dataset(dataset, str(path), problems)
