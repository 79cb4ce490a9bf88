"""The annotation queue: (query, memory) pairs to grade 0-3 one at a time, and pairs of
rankings of one query to compare blind.

Graded pairs come from the query log (every logged result, in logging order, then rank)
and, with ``--dataset``, from the dataset (per query in its order: the pairs the LLM judge
labelled in the store first, so that every human label also measures the judge, then the
pairs the dataset's authors judged). A pair leaves the queue once it has a ``manual``
judgment, whoever gave it; a skipped pair leaves it for this annotator until the dashboard
restarts. Labels are written at once to the store's ``judgments`` table (source
``manual``, with the annotator's name); a label written over one its author was not shown
is refused (:mod:`._labels`); undo takes back this annotator's last action, and a label
only while it is still the pair's label.

Pairwise items are two different rankings of the same query: a shadow test's control and
treatment (``shadow_runs``), or two logged searches of the same text that returned
different lists (two modes or systems). Which one is shown on the left is drawn at random
on each showing, and the annotator is not told which is which.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from sqlalchemy import select

from recallbench.core import ConfigError
from recallbench.serve import _preferences
from recallbench.serve._labels import LabelConflict, Undone, label_version
from recallbench.serve._preferences import Preference, Preferred
from recallbench.store import Judgment
from recallbench.store._engine import transaction
from recallbench.store._tables import shadow_runs
from recallbench.store._telemetry import JudgmentSource

if TYPE_CHECKING:
    from recallbench.core import Dataset
    from recallbench.store import QueryLogEntry, Store

MANUAL: JudgmentSource = "manual"
GRADE_KEYS = ("0", "1", "2", "3")
REFRESH_SECONDS = 30.0
"""How long the candidates read from the store are reused before they are read again
(each label reloads the page: re-reading a large query log every time would be slow)."""
TEXT_MAX = 6_000
"""Memory texts longer than this are cut for display."""


@dataclass(frozen=True, slots=True)
class Pair:
    """A (query, memory) pair to grade."""

    query_id: str
    doc_id: str
    query_text: str
    doc_text: str | None
    origin: str
    """Where the pair came from: ``query log`` or ``dataset NAME``."""
    rank: int | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.query_id, self.doc_id)


@dataclass(frozen=True, slots=True)
class Ranking:
    label: str
    results: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PairwiseItem:
    """Two rankings of one query to compare."""

    item: str
    """Stable id: ``shadow:ID`` or ``log:QUERY_ID:QUERY_ID``."""
    query_text: str
    first: Ranking
    second: Ranking
    texts: dict[str, str]
    """Memory id -> text, where known."""


@dataclass(frozen=True, slots=True)
class Action:
    kind: Literal["grade", "skip", "prefer", "skip-pairwise"]
    key: tuple[str, ...]
    previous: Judgment | None = None
    """For a grade: the manual label it replaced (its author chose to replace it)."""
    written: Judgment | None = None
    """For a grade: the label written, as the store holds it."""


@dataclass
class _Annotator:
    skipped: set[tuple[str, ...]] = field(default_factory=set)
    history: list[Action] = field(default_factory=list)


class Queue:
    """The dashboard's queue over one store (and optionally a dataset); thread-safe."""

    def __init__(
        self,
        store: Store,
        dataset: Dataset | None = None,
        sources: Sequence[Callable[[], Iterable[Pair]]] = (),
    ) -> None:
        self.store = store
        self.dataset = dataset
        self.sources = list(sources)
        """More pairs to grade, read again with the rest (the judging pool of runs)."""
        self._lock = threading.Lock()
        self._annotators: dict[str, _Annotator] = {}
        self._pairs: list[Pair] = []
        self._by_key: dict[tuple[str, str], Pair] = {}
        self._items: list[PairwiseItem] = []
        self._read_at = -REFRESH_SECONDS
        self.random = random.Random()

    # -- candidates -------------------------------------------------------------------

    def refresh(self, force: bool = False) -> None:
        """Read the candidates from the store again (at most every REFRESH_SECONDS)."""
        if not force and time.monotonic() - self._read_at < REFRESH_SECONDS:
            return
        log = self.store.query_log()
        pairs = list(_log_pairs(log))
        if self.dataset is not None:
            pairs.extend(_dataset_pairs(self.dataset, self.store))
        for source in self.sources:
            pairs.extend(source())
        by_key: dict[tuple[str, str], Pair] = {}
        for pair in pairs:
            by_key.setdefault(pair.key, pair)
        items = _shadow_items(self.store, log) + _log_items(log)
        with self._lock:
            self._pairs = list(by_key.values())
            self._by_key = by_key
            self._items = items
            self._read_at = time.monotonic()

    def _manual(self) -> dict[tuple[str, str], Judgment]:
        return {(j.query_id, j.doc_id): j for j in self.store.judgments(source=MANUAL)}

    def label(self, query_id: str, doc_id: str) -> Judgment | None:
        """The pair's manual label, if it has one."""
        found = self.store.judgments(query_ids=[query_id], source=MANUAL)
        return next((j for j in found if j.doc_id == doc_id), None)

    def _state(self, annotator: str) -> _Annotator:
        return self._annotators.setdefault(annotator, _Annotator())

    def pending(self, annotator: str) -> tuple[Pair | None, int, int]:
        """The next pair for ``annotator``, how many are left (it included) and how many
        pairs the queue holds in all."""
        self.refresh()
        manual = self._manual()
        with self._lock:
            skipped = self._state(annotator).skipped
            left = [p for p in self._pairs if p.key not in manual and p.key not in skipped]
            return (left[0] if left else None), len(left), len(self._pairs)

    def pair(self, query_id: str, doc_id: str) -> Pair:
        self.refresh()
        found = self._by_key.get((query_id, doc_id))
        if found is None:
            raise ConfigError(f"({query_id}, {doc_id}) is not in the annotation queue")
        return found

    # -- graded labels ----------------------------------------------------------------

    def grade(
        self, annotator: str, query_id: str, doc_id: str, grade: int, replaces: str = ""
    ) -> Judgment:
        """Write the annotator's grade of the pair as a ``manual`` judgment, over the label
        whose :func:`label_version` is ``replaces`` ("": over none). Raises
        :class:`LabelConflict` (nothing written) when the pair's label is another one: a
        label is never replaced by someone who was not shown it."""
        annotator = _name(annotator)
        if grade not in (0, 1, 2, 3):
            raise ConfigError(f"a grade is 0, 1, 2 or 3, not {grade}")
        self.pair(query_id, doc_id)
        label = Judgment(
            query_id=query_id,
            doc_id=doc_id,
            grade=grade,
            source=MANUAL,
            created_at=datetime.now(UTC),
            annotator=annotator,
        )
        with self._lock:
            previous = self.label(query_id, doc_id)
            if label_version(previous) != replaces:
                raise LabelConflict((query_id, doc_id), grade, previous)
            self.store.log(judgments=[label])
            written = self.label(query_id, doc_id)
            self._state(annotator).history.append(
                Action("grade", (query_id, doc_id), previous, written)
            )
        return label

    def skip(self, annotator: str, key: tuple[str, ...], pairwise: bool = False) -> None:
        with self._lock:
            state = self._state(_name(annotator))
            state.skipped.add(key)
            state.history.append(Action("skip-pairwise" if pairwise else "skip", key))

    def undo(self, annotator: str) -> Undone | None:
        """Take back the annotator's last action and say what was done: a grade's row is
        deleted while it is still the pair's label (the label it replaced, if any, is put
        back), a preference's row too, a skip is forgotten. A grade someone replaced since
        is not undone: their label stays. None when there is nothing to undo."""
        annotator = _name(annotator)
        with self._lock:
            state = self._state(annotator)
            if not state.history:
                return None
            action = state.history.pop()
            if action.kind in ("skip", "skip-pairwise"):
                state.skipped.discard(action.key)
                return Undone(action.kind, action.key, True)
            if action.kind == "grade":
                return self._undo_grade(action, annotator)
            removed = _preferences.remove(
                self.store._engine, self.store.workspace, action.key[0], annotator
            )
            return Undone(action.kind, action.key, removed)

    def _undo_grade(self, action: Action, annotator: str) -> Undone:
        query_id, doc_id = action.key
        current = self.label(query_id, doc_id)
        written = label_version(action.written)
        if current is None or label_version(current) != written:
            # someone's label replaced it since (or it is gone): theirs stays, and their
            # undo must not put back the one withdrawn here
            self._forget(action.key, written)
            return Undone("grade", action.key, False, action.written, current)
        if not self.store.delete_judgment(query_id, doc_id, MANUAL, annotator):
            return Undone("grade", action.key, False, action.written, self.label(*action.key))
        if action.previous is not None:
            self.store.log(judgments=[action.previous])
        return Undone("grade", action.key, True, action.written, restored=action.previous)

    def _forget(self, key: tuple[str, ...], version: str) -> None:
        """No later undo puts back the label of ``version``: its author withdrew it."""
        for state in self._annotators.values():
            state.history = [
                replace(action, previous=None)
                if action.kind == "grade"
                and action.key == key
                and action.previous is not None
                and label_version(action.previous) == version
                else action
                for action in state.history
            ]

    # -- pairwise ---------------------------------------------------------------------

    def pending_pairwise(self, annotator: str) -> tuple[PairwiseItem | None, int, int]:
        """The next item ``annotator`` has not compared (nor skipped), how many are left
        and how many there are."""
        self.refresh()
        done = {
            p.item
            for p in _preferences.preferences(self.store._engine, self.store.workspace)
            if p.annotator == annotator
        }
        with self._lock:
            skipped = self._state(annotator).skipped
            left = [i for i in self._items if i.item not in done and (i.item,) not in skipped]
            return (left[0] if left else None), len(left), len(self._items)

    def item(self, name: str) -> PairwiseItem:
        self.refresh()
        for item in self._items:
            if item.item == name:
                return item
        raise ConfigError(f"{name!r} is not a pairwise item of this store")

    def shown_first(self) -> Literal["first", "second"]:
        """Which ranking goes on the left this time: drawn at random, so that neither
        position nor source tells the annotator which is which."""
        return "first" if self.random.random() < 0.5 else "second"

    def prefer(self, annotator: str, name: str, choice: str, shown: str) -> Preference:
        """Record the choice made on screen (``1``: the left ranking, ``2``: the right
        one, ``=``: neither is better) as a preference between the item's rankings."""
        annotator = _name(annotator)
        item = self.item(name)
        if shown not in ("first", "second"):
            raise ConfigError(f"shown is first or second, not {shown!r}")
        left: Literal["first", "second"] = "first" if shown == "first" else "second"
        other: Preferred = "second" if left == "first" else "first"
        chosen: dict[str, Preferred] = {"1": left, "2": other, "=": "tie"}
        if choice not in chosen:
            raise ConfigError(f"a choice is 1, 2 or =, not {choice!r}")
        preference = Preference(
            item=item.item,
            query_text=item.query_text,
            first_label=item.first.label,
            first_results=item.first.results,
            second_label=item.second.label,
            second_results=item.second.results,
            preferred=chosen[choice],
            shown=left,
            annotator=annotator,
            created_at=datetime.now(UTC),
        )
        with self._lock:
            _preferences.save(self.store._engine, self.store.workspace, preference)
            self._state(annotator).history.append(Action("prefer", (item.item,)))
        return preference


def _name(annotator: str) -> str:
    name = annotator.strip()
    if not name:
        raise ConfigError("give the annotator's name (the field at the top, or --annotator)")
    return name


def _cut(text: str | None) -> str | None:
    if text is None or len(text) <= TEXT_MAX:
        return text
    return text[:TEXT_MAX] + " …"


def _log_pairs(log: Iterable[QueryLogEntry]) -> Iterable[Pair]:
    for entry in log:
        for rank, doc in enumerate(entry.results, 1):
            yield Pair(
                entry.query_id, doc, entry.text, _cut(entry.texts.get(doc)), "query log", rank
            )


def _dataset_pairs(dataset: Dataset, store: Store) -> Iterable[Pair]:
    documents = dataset.documents_by_id
    judged: dict[str, list[str]] = {}
    for label in store.judgments(source="llm"):
        judged.setdefault(label.query_id, []).append(label.doc_id)
    origin = f"dataset {dataset.name}"
    for query in dataset.queries:
        docs = dict.fromkeys([*judged.get(query.id, []), *dataset.qrels.get(query.id, {})])
        for doc in docs:
            document = documents.get(doc)
            if document is None:
                continue
            text = f"{document.title}\n{document.text}" if document.title else document.text
            yield Pair(query.id, doc, query.text, _cut(text), origin)


def _texts(entries: Sequence[QueryLogEntry]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for entry in entries:
        for doc, text in entry.texts.items():
            texts.setdefault(doc, _cut(text) or "")
    return texts


def _shadow_items(store: Store, log: Sequence[QueryLogEntry]) -> list[PairwiseItem]:
    """A shadow test's control and treatment lists of each shadowed query."""
    import json

    by_id = {entry.query_id: entry for entry in log}
    with transaction(store._engine) as connection:
        rows = connection.execute(
            select(shadow_runs)
            .where(shadow_runs.c.workspace_id == store.workspace)
            .order_by(shadow_runs.c.created_at, shadow_runs.c.id)
        ).mappings()
        items = []
        for row in rows:
            control = tuple(json.loads(row["control_results"]))
            treatment = tuple(json.loads(row["treatment_results"]))
            if control == treatment:
                continue  # nothing to choose between
            entry = by_id.get(row["query_id"])
            items.append(
                PairwiseItem(
                    item=f"shadow:{row['id']}",
                    query_text=entry.text if entry else row["query_id"],
                    first=Ranking("control", control),
                    second=Ranking("treatment", treatment),
                    texts=_texts([entry] if entry else []),
                )
            )
    return items


def _log_items(log: Sequence[QueryLogEntry]) -> list[PairwiseItem]:
    """Logged searches of the same text (case and spaces aside) that returned different
    lists: the first two different lists of each text."""
    groups: dict[str, list[QueryLogEntry]] = {}
    for entry in log:
        groups.setdefault(" ".join(entry.text.casefold().split()), []).append(entry)
    items = []
    for entries in groups.values():
        first = entries[0]
        second = next((e for e in entries[1:] if e.results != first.results), None)
        if second is None:
            continue
        items.append(
            PairwiseItem(
                item=f"log:{first.query_id}:{second.query_id}",
                query_text=first.text,
                first=Ranking(_label(first), first.results),
                second=Ranking(_label(second), second.results),
                texts=_texts([first, second]),
            )
        )
    return items


def _label(entry: QueryLogEntry) -> str:
    how = entry.mode or entry.tool or "search"
    return f"{how} ({entry.query_id})"
