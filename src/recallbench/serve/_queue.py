"""The annotation queue: (query, memory) pairs to grade 0-3 one at a time, conflicts to
adjudicate, and pairs of rankings of one query to compare blind.

Graded pairs come first from more ``sources`` (the judging pool of runs, in the pool's
order: what someone asked to have judged), then from the query log (every result of its
newest ``QUEUE_SEARCHES`` searches, in logging order, then rank: a log of millions of
searches is more than anyone labels, and reading it all would stall every page), then
with ``--dataset`` from the dataset (per query in its order: the pairs the LLM judge
labelled in the store first, so that every human label also measures the judge, then the
pairs the dataset's authors judged).

Each annotator labels a pair once (their label is kept apart from the others', see
:mod:`recallbench.store._annotations_store`): a pair leaves *their* queue once they labelled
it, and everyone's once ``labels_per_pair`` annotators labelled it (default 1: once anyone
did; ``recallbench serve --labels-per-pair 2`` gives a team overlap to measure agreement)
or someone adjudicated it. A skipped pair leaves it for this annotator until the dashboard
restarts. A pair whose annotators disagree is a conflict, offered for adjudication.

Undo takes back exactly the annotator's own last action, kept in memory per annotator: a
label or relabel (their previous label of the pair comes back; the store's history shows a
``withdraw``), a skip, a pairwise choice, an adjudication. Never another annotator's label.

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

from recallbench.core import ConfigError
from recallbench.serve import _preferences
from recallbench.serve._labels import (
    AdjudicationConflict,
    Kind,
    LabelConflict,
    PairState,
    Undone,
    pair_version,
    parse_version,
)
from recallbench.serve._pairwise_items import PairwiseItem, cut, log_items, shadow_items
from recallbench.serve._preferences import Preference, Preferred
from recallbench.store._annotations_store import UNKNOWN, Label, StaleWrite

if TYPE_CHECKING:
    from recallbench.core import Dataset
    from recallbench.store import QueryLogEntry, Store

GRADE_KEYS = ("0", "1", "2", "3")
QUEUE_SEARCHES = 10_000
"""The newest searches (and shadow pairs) whose results the queue offers."""
REFRESH_SECONDS = 30.0
"""How long the candidates read from the store are reused before they are read again
(each label reloads the page: re-reading a large query log every time would be slow)."""


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
class Action:
    kind: Kind
    key: tuple[str, ...]
    before: Label | None = None
    """For a grade: the annotator's label row before; an adjudication: the pair's."""
    written: Label | None = None
    """For a grade or an adjudication: the row written."""
    replaced: Preference | None = None
    """For a pairwise choice: the annotator's earlier choice on the item."""


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
        labels_per_pair: int = 1,
    ) -> None:
        self.store = store
        self.dataset = dataset
        self.sources = list(sources)
        """More pairs to grade, read again with the rest (the judging pool of runs)."""
        self.labels_per_pair = labels_per_pair
        """How many annotators label a pair before it leaves everyone's queue."""
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
        log = self.store.query_log_page(0, QUEUE_SEARCHES)[::-1]  # in logging order
        # the sources first: pairs someone asked to have judged (--pool) come before the
        # query log's and the dataset's, which are there to check labels already given
        pairs = [pair for source in self.sources for pair in source()]
        pairs.extend(_log_pairs(log))
        if self.dataset is not None:
            pairs.extend(_dataset_pairs(self.dataset, self.store))
        by_key: dict[tuple[str, str], Pair] = {}
        for pair in pairs:
            by_key.setdefault(pair.key, pair)
        items = shadow_items(self.store, log, QUEUE_SEARCHES) + log_items(log)
        with self._lock:
            self._pairs = list(by_key.values())
            self._by_key = by_key
            self._items = items
            self._read_at = time.monotonic()

    def labellers(self) -> dict[tuple[str, str], set[str]]:
        """Who labelled each pair: the annotators with a current label, or, for a pair
        labelled by other means (a ``manual`` judgment and no label here), its annotator."""
        found: dict[tuple[str, str], set[str]] = {}
        for label in self.store.labels():
            found.setdefault(label.key, set()).add(label.annotator)
        for judgment in self.store.judgments(source="manual"):
            key = (judgment.query_id, judgment.doc_id)
            if key not in found:
                found[key] = {judgment.annotator or UNKNOWN}
        return found

    def _state(self, annotator: str) -> _Annotator:
        return self._annotators.setdefault(annotator, _Annotator())

    def pending(self, annotator: str) -> tuple[Pair | None, int, int]:
        """The next pair for ``annotator``, how many are left for them (it included) and
        how many pairs the queue holds in all."""
        self.refresh()
        labellers = self.labellers()
        adjudicated = {label.key for label in self.store.adjudications()}
        with self._lock:
            skipped = self._state(annotator).skipped
            left = [
                p
                for p in self._pairs
                if p.key not in skipped
                and p.key not in adjudicated
                and annotator not in labellers.get(p.key, ())
                and len(labellers.get(p.key, ())) < self.labels_per_pair
            ]
            return (left[0] if left else None), len(left), len(self._pairs)

    def pair(self, query_id: str, doc_id: str) -> Pair:
        self.refresh()
        found = self._by_key.get((query_id, doc_id))
        if found is None:
            raise ConfigError(f"({query_id}, {doc_id}) is not in the annotation queue")
        return found

    def shown(self, query_id: str, doc_id: str) -> Pair:
        """The pair as the queue has it, or with its ids only (labelled from elsewhere)."""
        try:
            return self.pair(query_id, doc_id)
        except ConfigError:
            return Pair(query_id, doc_id, query_id, None, "store")

    def state(self, query_id: str, doc_id: str) -> PairState:
        """Every label of the pair and its adjudication, as the store has them now."""
        key = (query_id, doc_id)
        found = self.store.adjudications(withdrawn=True, pair=key)
        return _pair_state(
            key, self.store.labels(withdrawn=True, pair=key), found[0] if found else None
        )

    def own(self, annotator: str, query_id: str, doc_id: str) -> Label | None:
        """The annotator's label row of the pair (grade None: withdrawn), if any."""
        rows = self.store.labels(withdrawn=True, pair=(query_id, doc_id))
        return next((row for row in rows if row.annotator == annotator), None)

    def last_labelled(self, annotator: str) -> PairState | None:
        """The pair the annotator labelled last, while it is their last action."""
        with self._lock:
            history = self._state(annotator).history
            last = history[-1] if history else None
        if last is None or last.kind != "grade":
            return None
        return self.state(last.key[0], last.key[1])

    # -- graded labels ----------------------------------------------------------------

    def grade(
        self, annotator: str, query_id: str, doc_id: str, grade: int, replaces: str = ""
    ) -> Label:
        """Write the annotator's own label of the pair over their label of version
        ``replaces`` ("": over none). Raises :class:`LabelConflict` (nothing written)
        when their label is another one (they changed it in another tab)."""
        annotator = _name(annotator)
        _check_grade(grade)
        self.pair(query_id, doc_id)
        with self._lock:
            before = self.own(annotator, query_id, doc_id)
            try:
                written = self.store.write_label(
                    query_id, doc_id, annotator, grade, parse_version(replaces)
                )
            except StaleWrite:
                current = self.own(annotator, query_id, doc_id)
                raise LabelConflict((query_id, doc_id), grade, current) from None
            self._state(annotator).history.append(
                Action("grade", (query_id, doc_id), before, written)
            )
        return written

    def skip(self, annotator: str, key: tuple[str, ...], kind: Kind = "skip") -> None:
        with self._lock:
            state = self._state(_name(annotator))
            state.skipped.add(key)
            state.history.append(Action(kind, key))

    # -- adjudication -----------------------------------------------------------------

    def conflicts(self) -> list[PairState]:
        """The pairs whose annotators disagree and no one adjudicated, in queue order."""
        self.refresh()
        rows: dict[tuple[str, str], list[Label]] = {}
        for label in self.store.labels(withdrawn=True):
            rows.setdefault(label.key, []).append(label)
        adjudications = {a.key: a for a in self.store.adjudications(withdrawn=True)}
        states = [_pair_state(key, found, adjudications.get(key)) for key, found in rows.items()]
        order = {key: index for index, key in enumerate(self._by_key)}
        found = [state for state in states if state.conflict]
        return sorted(found, key=lambda state: (order.get(state.key, len(order)), state.key))

    def pending_adjudication(self, annotator: str) -> tuple[PairState | None, int]:
        """The next conflict ``annotator`` has not skipped, and how many conflicts remain
        for them."""
        with self._lock:
            skipped = set(self._state(annotator).skipped)
        left = [c for c in self.conflicts() if ("adjudicate", *c.key) not in skipped]
        return (left[0] if left else None), len(left)

    def adjudicate(
        self, annotator: str, query_id: str, doc_id: str, grade: int, replaces: str
    ) -> Label:
        """Resolve the pair to ``grade``, by ``annotator``, over the pair as
        :func:`pair_version` ``replaces`` names it. :class:`AdjudicationConflict`
        (nothing written) when a label or the adjudication changed since."""
        annotator = _name(annotator)
        _check_grade(grade)
        with self._lock:
            state = self.state(query_id, doc_id)
            if not state.labels and state.adjudicated is None:
                raise ConfigError(f"({query_id}, {doc_id}) has no label to adjudicate")
            if state.version != replaces:
                raise AdjudicationConflict(state, grade)
            before = state.adjudication
            try:
                written = self.store.write_adjudication(
                    query_id, doc_id, annotator, grade, before.version if before else None
                )
            except StaleWrite:
                raise AdjudicationConflict(self.state(query_id, doc_id), grade) from None
            self._state(annotator).history.append(
                Action("adjudicate", (query_id, doc_id), before, written)
            )
        return written

    # -- undo -------------------------------------------------------------------------

    def undo(self, annotator: str) -> Undone | None:
        """Take back the annotator's own last action and say what was done; None when
        there is nothing to undo. A label or adjudication changed since (another tab or
        process) is left as it is, and the undo says so."""
        annotator = _name(annotator)
        with self._lock:
            state = self._state(annotator)
            if not state.history:
                return None
            action = state.history.pop()
            if action.kind in ("skip", "skip-pairwise", "skip-adjudicate"):
                state.skipped.discard(action.key)
                return Undone(action.kind, action.key, True)
            if action.kind == "grade":
                return self._undo_grade(annotator, action)
            if action.kind == "adjudicate":
                return self._undo_adjudication(annotator, action)
            return self._undo_choice(annotator, action)

    def _undo_grade(self, annotator: str, action: Action) -> Undone:
        query_id, doc_id = action.key
        written = action.written
        current = self.own(annotator, query_id, doc_id)
        if written is None or current is None or current.version != written.version:
            return Undone("grade", action.key, False, action.before, written, current)
        before = action.before.grade if action.before is not None else None
        try:
            restored = self.store.write_label(
                query_id, doc_id, annotator, before, written.version, withdraw=True
            )
        except StaleWrite:
            current = self.own(annotator, query_id, doc_id)
            return Undone("grade", action.key, False, action.before, written, current)
        self._renumber(action, restored)
        return Undone("grade", action.key, True, action.before, written)

    def _undo_adjudication(self, annotator: str, action: Action) -> Undone:
        query_id, doc_id = action.key
        written, before = action.written, action.before
        found = self.store.adjudications(withdrawn=True, pair=(query_id, doc_id))
        current = found[0] if found else None
        if written is None or current is None or current.version != written.version:
            return Undone("adjudicate", action.key, False, before, written, current)
        restored = before if before is not None and before.grade is not None else None
        try:
            back = self.store.write_adjudication(
                query_id,
                doc_id,
                annotator,
                restored.grade if restored else None,
                written.version,
                withdraw=True,
                adjudicator=restored.annotator if restored else annotator,
            )
        except StaleWrite:
            return Undone("adjudicate", action.key, False, before, written, current)
        self._renumber(action, back)
        after = self.state(query_id, doc_id)
        return Undone("adjudicate", action.key, True, restored, written, after=after)

    def _renumber(self, undone: Action, restored: Label) -> None:
        """The row an undo put back has a new version: the earlier action that wrote the
        row as it was (the annotator's previous label, or an earlier adjudication, maybe
        someone else's) now names that version, so that its own undo still finds it."""
        if undone.before is None:
            return
        old = undone.before.version
        for state in self._annotators.values():
            state.history = [
                replace(action, written=restored)
                if action.kind == undone.kind
                and action.key == undone.key
                and action.written is not None
                and action.written.annotator == restored.annotator
                and action.written.version == old
                else action
                for action in state.history
            ]

    def _undo_choice(self, annotator: str, action: Action) -> Undone:
        engine, workspace = self.store._engine, self.store.workspace
        if action.replaced is not None:
            _preferences.save(engine, workspace, action.replaced)
            return Undone("prefer", action.key, True, restored_choice=True)
        removed = _preferences.remove(engine, workspace, action.key[0], annotator)
        return Undone("prefer", action.key, removed)

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
        engine, workspace = self.store._engine, self.store.workspace
        with self._lock:
            earlier = [
                p
                for p in _preferences.preferences(engine, workspace, [item.item])
                if p.annotator == annotator
            ]
            _preferences.save(engine, workspace, preference)
            self._state(annotator).history.append(
                Action("prefer", (item.item,), replaced=earlier[0] if earlier else None)
            )
        return preference


def _pair_state(key: tuple[str, str], rows: list[Label], adjudication: Label | None) -> PairState:
    current = tuple(row for row in rows if row.grade is not None)
    return PairState(key, current, adjudication, pair_version(rows, adjudication))


def _check_grade(grade: int) -> None:
    if grade not in (0, 1, 2, 3):
        raise ConfigError(f"a grade is 0, 1, 2 or 3, not {grade}")


def _name(annotator: str) -> str:
    name = annotator.strip()
    if not name:
        raise ConfigError("give the annotator's name (the field at the top, or --annotator)")
    return name


def _log_pairs(log: Iterable[QueryLogEntry]) -> Iterable[Pair]:
    for entry in log:
        for rank, doc in enumerate(entry.results, 1):
            yield Pair(
                entry.query_id, doc, entry.text, cut(entry.texts.get(doc)), "query log", rank
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
            yield Pair(query.id, doc, query.text, cut(text), origin)
