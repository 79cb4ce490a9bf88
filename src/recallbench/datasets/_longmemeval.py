"""LongMemEval (Wu et al., ICLR 2025): chat histories and questions about them.

Rules (recorded in the dataset's ``metadata["loader"]``):

- Every question is a unit with its own haystack: it is asked against a fresh store
  holding only its haystack sessions. A session found in several haystacks is one
  document (its content is the same wherever it appears).
- Session granularity (default): documents are sessions (``user: ...`` / ``assistant: ...``
  lines), relevant (grade 1) = ``answer_session_ids``. Turn granularity: documents are
  turns (``<session id>:<n>``, ``n`` the turn's place in its session), relevant = the
  turns marked ``has_answer`` in that question's haystack. Which turns: the user's only
  by default (``longmemeval-turns``), upstream's retrieval protocol
  (``src/retrieval/run_retrieval.py`` indexes ``role == "user"`` turns), so a question
  answered only in an assistant turn has no relevant memory under it; user and assistant
  turns with ``longmemeval-all-turns``. The protocol is in the dataset's name
  (``longmemeval-oracle-user-turns`` / ``-all-turns``) and its loader rules.
- Abstention questions (``_abs``, the answer is not in the history) are kept, tagged
  ``abstention``, with no relevant memory, even though upstream lists answer sessions for
  them (the sessions the false premise was built from); LongMemEval's own retrieval
  evaluation skips them, recallbench scores them with the abstention measure instead.
- Abstention questions are marked ``answerable: false``: ``false_surface`` counts them,
  and only them.
- Categories are the question types.
- Input is checked before anything is built: a repeated ``question_id``, a session that is
  not a list of ``{role, content}`` turns, ``haystack_dates`` or ``haystack_session_ids``
  whose length differs from the sessions', or a session id whose content differs between
  haystacks is a located error (``file: [i].haystack_sessions[j][k]``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import JsonValue

from recallbench.core import Dataset, Document, Problem, Query
from recallbench.datasets._building import Building
from recallbench.datasets._default_measures import CONVERSATION_MEASURES, DEFAULT_MEASURES_KEY
from recallbench.datasets._provenance import Provenance, read_json_list

LOADER_VERSION = "3"
Granularity = Literal["session", "turn"]
Turns = Literal["user", "all"]
"""Which turns are documents at turn granularity: the user's only, as upstream's retrieval
protocol (``src/retrieval/run_retrieval.py``) indexes them, or user and assistant turns."""


def _when(text: Any) -> str | None:
    """``2023/05/20 (Sat) 02:21`` as ISO 8601, or None when it does not parse."""
    try:
        day, _, clock = str(text).partition(" (")
        return datetime.strptime(f"{day} {clock.partition(') ')[2]}", "%Y/%m/%d %H:%M").isoformat()
    except ValueError:
        return None


def _turns(session: Any, where: str, problems: list[Problem]) -> list[dict[str, Any]] | None:
    """A session's turns, or None (and its problems) when it is not a list of turns."""
    if not isinstance(session, list):
        problems.append(Problem(where, f"expected a list of turns, got {_kind(session)}"))
        return None
    bad = [
        Problem(f"{where}[{index}]", f'expected a turn {{"role", "content"}}, got {_kind(turn)}')
        for index, turn in enumerate(session)
        if not isinstance(turn, dict)
        or not isinstance(turn.get("content"), str)
        or not isinstance(turn.get("role"), str)
    ]
    problems.extend(bad)
    return None if bad else session


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object without a string role and content"
    return f"a {type(value).__name__}"


def _lists(item: dict[str, Any], where: str, problems: list[Problem]) -> tuple[list[Any], ...]:
    """An item's (session ids, sessions, dates), all of one length, or () with problems."""
    ids, sessions = item.get("haystack_session_ids"), item.get("haystack_sessions")
    dates = item.get("haystack_dates")
    found = len(problems)
    if not isinstance(sessions, list):
        problems.append(Problem(f"{where}.haystack_sessions", "expected a list of sessions"))
        return ()
    for name, values in (("haystack_session_ids", ids), ("haystack_dates", dates)):
        if values is None and name == "haystack_dates":
            continue
        if not isinstance(values, list) or len(values) != len(sessions):
            count = len(values) if isinstance(values, list) else _kind(values)
            message = f"expected a list of {len(sessions)} (one per session), got {count}"
            problems.append(Problem(f"{where}.{name}", message))
    if len(problems) > found:
        return ()
    assert isinstance(ids, list)
    return ids, sessions, dates if isinstance(dates, list) else [None] * len(sessions)


def load_longmemeval(
    path: Path, granularity: Granularity = "session", turns: Turns = "user"
) -> Dataset:
    """Read a LongMemEval file (oracle, S or M: the same layout) at session or turn
    granularity (``turns``: which turns are documents at turn granularity)."""
    items = read_json_list(path, "questions")
    provenance = Provenance(
        "longmemeval",
        LOADER_VERSION,
        path,
        rules={
            "granularity": granularity,
            "units": "one per question (fresh store with its haystack)",
            "relevant": "answer_session_ids" if granularity == "session" else "has_answer turns",
            "abstention": "_abs questions kept with no relevant memory, tagged 'abstention', "
            "answerable: false",
            "categories": "question_type",
            **(
                {
                    "turns": "user turns only (upstream run_retrieval.py)"
                    if turns == "user"
                    else "user and assistant turns"
                }
                if granularity == "turn"
                else {}
            ),
        },
    )
    build = _Build(provenance, granularity=granularity, turns=turns)
    for index, item in enumerate(items):
        build.item(f"[{index}]", item)
    return build.dataset(
        str(path),
        {DEFAULT_MEASURES_KEY: list(CONVERSATION_MEASURES)},
        name=f"longmemeval-{path.stem.removeprefix('longmemeval_')}-"
        + ("session" if granularity == "session" else f"{turns}-turns"),
        version=LOADER_VERSION,
        description="LongMemEval: one chat history (haystack) per question",
        license="MIT",
    )


@dataclass
class _Build(Building):
    """The dataset being built, question by question."""

    granularity: Granularity = "session"
    turns: Turns = "user"
    asked_at: dict[str, str] = field(default_factory=dict)
    """Question id -> where it is."""
    sessions: dict[str, tuple[str, list[tuple[str, str]]]] = field(default_factory=dict)
    """Session id -> where first seen, its (role, content) turns: a session found in
    several haystacks is one document only if its content is the same everywhere."""

    def item(self, where: str, item: Any) -> None:
        if not isinstance(item, dict):
            self.problems.append(Problem(where, "expected an object (one question)"))
            return
        question_id, question = item.get("question_id"), item.get("question")
        if not isinstance(question_id, str | int) or not isinstance(question, str):
            message = "expected a question_id and a question (a string)"
            self.problems.append(Problem(where, message))
            return
        question_id = str(question_id)
        if question_id in self.asked_at:
            first = self.asked_at[question_id]
            message = f"duplicate question_id {question_id!r} (first at {first})"
            self.problems.append(Problem(f"{where}.question_id", message))
            return
        self.asked_at[question_id] = self.origins[question_id] = where
        lists = _lists(item, where, self.problems)
        if not lists:
            return
        unit, relevant = self._haystack(where, *lists)
        if self.granularity == "session":
            in_unit = set(unit)
            answers = item.get("answer_session_ids") or []
            relevant = [str(s) for s in answers if str(s) in in_unit]
        self.units[question_id] = tuple(unit)
        abstention = question_id.endswith("_abs")
        if abstention:
            relevant = []
            self.provenance.change(question_id, "flagged", "abstention: no relevant memory")
        elif not relevant:
            self.provenance.change(question_id, "flagged", "no evidence at this granularity")
        self.qrels[question_id] = dict.fromkeys(relevant, 1)
        answer = item.get("answer")
        self.queries.append(
            Query.model_construct(
                id=question_id,
                text=question,
                category=str(item.get("question_type")),
                tags=("abstention",) if abstention else (),
                answerable=not abstention,
                unit=question_id,
                metadata={
                    "answer": answer if isinstance(answer, str | int | float) else None,
                    "question_date": item.get("question_date"),
                },
            )
        )

    def _haystack(
        self, where: str, ids: list[Any], sessions: list[Any], dates: list[Any]
    ) -> tuple[list[str], list[str]]:
        """Add the haystack's documents; return the unit's ids and the has_answer turns."""
        unit: list[str] = []
        relevant: list[str] = []
        seen: set[str] = set()
        for number, (raw_id, session, date) in enumerate(zip(ids, sessions, dates, strict=True)):
            at = f"{where}.haystack_sessions[{number}]"
            turns = _turns(session, at, self.problems)
            if turns is None or not self._same(str(raw_id), at, turns):
                continue
            session_id = str(raw_id)
            if session_id in seen:
                self.provenance.change(session_id, "dropped", f"{at}: repeated in its haystack")
                continue
            seen.add(session_id)
            metadata: dict[str, JsonValue] = {"session_id": session_id, "session_date": date}
            if when := _when(date):
                metadata["created_at"] = when
            if self.granularity == "session":
                text = "\n".join(f"{t['role']}: {t['content']}" for t in turns)
                self._add(session_id, text, metadata, at)
                unit.append(session_id)
                continue
            for index, turn in enumerate(turns):
                if self.turns == "user" and turn["role"] != "user":
                    continue
                doc_id = f"{session_id}:{index}"
                self._add(
                    doc_id, turn["content"], {**metadata, "role": turn["role"]}, f"{at}[{index}]"
                )
                unit.append(doc_id)
                if turn.get("has_answer") is True:
                    relevant.append(doc_id)
        return unit, relevant

    def _same(self, session_id: str, at: str, turns: list[dict[str, Any]]) -> bool:
        """Whether the session's content is the same as where it was first seen."""
        content = [(turn["role"], turn["content"]) for turn in turns]
        first = self.sessions.setdefault(session_id, (at, content))
        if first[1] != content:
            message = f"session {session_id!r} differs from its copy at {first[0]}"
            self.problems.append(Problem(at, message))
            return False
        return True

    def _add(self, doc_id: str, text: str, metadata: dict[str, JsonValue], at: str) -> None:
        if doc_id not in self.documents:
            self.documents[doc_id] = Document.model_construct(
                id=doc_id, text=text, metadata=metadata
            )
            self.origins[doc_id] = at
