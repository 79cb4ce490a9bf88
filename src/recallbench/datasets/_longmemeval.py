"""LongMemEval (Wu et al., ICLR 2025): chat histories and questions about them.

Rules (recorded in the dataset's ``metadata["loader"]``):

- Every question is a unit with its own haystack: it is asked against a fresh store
  holding only its haystack sessions. A session found in several haystacks is one
  document (its content is the same wherever it appears).
- Session granularity (default): documents are sessions (``user: ...`` / ``assistant: ...``
  lines), relevant (grade 1) = ``answer_session_ids``. Turn granularity: documents are
  turns (``<session id>:<n>``), relevant = the turns marked ``has_answer`` in that
  question's haystack.
- Abstention questions (``_abs``, the answer is not in the history) are kept, tagged
  ``abstention``, with no relevant memory, even though upstream lists answer sessions for
  them (the sessions the false premise was built from); LongMemEval's own retrieval
  evaluation skips them, recallbench scores them with the abstention measure instead.
- Categories are the question types.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import JsonValue

from recallbench.core import Dataset, DatasetError, Document, Problem, Query
from recallbench.datasets._provenance import Provenance, read_json_list

LOADER_VERSION = "1"
Granularity = Literal["session", "turn"]


def _when(text: Any) -> str | None:
    """``2023/05/20 (Sat) 02:21`` as ISO 8601, or None when it does not parse."""
    try:
        day, _, clock = str(text).partition(" (")
        return datetime.strptime(f"{day} {clock.partition(') ')[2]}", "%Y/%m/%d %H:%M").isoformat()
    except ValueError:
        return None


def load_longmemeval(path: Path, granularity: Granularity = "session") -> Dataset:
    """Read a LongMemEval file (oracle, S or M: the same layout) at session or turn
    granularity."""
    items = read_json_list(path, "questions")
    provenance = Provenance(
        "longmemeval",
        LOADER_VERSION,
        path,
        rules={
            "granularity": granularity,
            "units": "one per question (fresh store with its haystack)",
            "relevant": "answer_session_ids" if granularity == "session" else "has_answer turns",
            "abstention": "_abs questions kept with no relevant memory, tagged 'abstention'",
            "categories": "question_type",
        },
    )
    documents: dict[str, Document] = {}
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    units: dict[str, tuple[str, ...]] = {}
    problems: list[Problem] = []
    for index, item in enumerate(items):
        where = f"$[{index}]"
        try:
            question_id = str(item["question_id"])
            session_ids = [str(s) for s in item["haystack_session_ids"]]
            sessions = item["haystack_sessions"]
            dates = item.get("haystack_dates") or [None] * len(sessions)
            if len(sessions) != len(session_ids) or not isinstance(item["question"], str):
                raise ValueError
        except (KeyError, TypeError, ValueError):
            problems.append(
                Problem(where, "expected question_id, question and matching haystack lists")
            )
            continue
        abstention = question_id.endswith("_abs")
        unit: list[str] = []
        relevant: list[str] = []
        for session_id, turns, date in zip(session_ids, sessions, dates, strict=False):
            metadata: dict[str, JsonValue] = {"session_id": session_id, "session_date": date}
            when = _when(date)
            if when:
                metadata["created_at"] = when
            if granularity == "session":
                text = "\n".join(f"{t.get('role')}: {t.get('content')}" for t in turns)
                documents.setdefault(
                    session_id,
                    Document.model_construct(
                        id=session_id, text=text, title=None, metadata=metadata
                    ),
                )
                unit.append(session_id)
                continue
            for number, turn in enumerate(turns):
                doc_id = f"{session_id}:{number}"
                documents.setdefault(
                    doc_id,
                    Document.model_construct(
                        id=doc_id,
                        text=str(turn.get("content", "")),
                        title=None,
                        metadata={**metadata, "role": turn.get("role")},
                    ),
                )
                unit.append(doc_id)
                if turn.get("has_answer") is True:
                    relevant.append(doc_id)
        if granularity == "session":
            relevant = [str(s) for s in item.get("answer_session_ids") or [] if str(s) in unit]
        units[question_id] = tuple(unit)
        if abstention:
            relevant = []
            provenance.change(question_id, "flagged", "abstention: no relevant memory")
        elif not relevant:
            provenance.change(question_id, "flagged", "no evidence at this granularity")
        qrels[question_id] = dict.fromkeys(relevant, 1)
        answer = item.get("answer")
        queries.append(
            Query.model_construct(
                id=question_id,
                text=item["question"],
                intent=None,
                category=str(item.get("question_type")),
                session_id=None,
                tags=("abstention",) if abstention else (),
                unit=question_id,
                metadata={
                    "answer": answer if isinstance(answer, str | int | float) else None,
                    "question_date": item.get("question_date"),
                },
            )
        )
    if problems:
        raise DatasetError(str(path), problems)
    return Dataset.model_construct(
        format="recallbench.dataset/v1",
        name=f"longmemeval-{path.stem.removeprefix('longmemeval_')}-{granularity}",
        version=LOADER_VERSION,
        description="LongMemEval: one chat history (haystack) per question",
        license="MIT",
        relevance_threshold=1,
        metadata={"loader": provenance.metadata()},
        documents=tuple(documents.values()),
        queries=tuple(queries),
        qrels=qrels,
        units=units,
    )
