"""Harvest: turn what agents really asked, and what they did with the answers, into a
golden dataset.

Rules, in order:

1. **De-duplicate**: logged queries with the same normalised text (lower-cased, words only)
   are one query; their feedback is pooled. The earliest wording is kept.
2. **Sample by intent**: at most ``sample_per_intent`` queries per intent (queries without
   an intent form the group ``unknown``), drawn with a seeded generator, so a burst of one
   kind of question does not dominate the dataset.
3. **Bootstrapped grades** for every memory a query was shown, strongest evidence first: a
   manual judgment in the store wins; then validated useful -> 3 and validated not useful ->
   0 (source ``validated``); read after search -> 2 (``implicit``); shown but never read -> 1,
   a pooled unknown (``bootstrapped``). The dataset's relevance threshold is 2, so a result
   the agent only saw never counts as relevant.
4. Queries without any memory graded 2 or more carry no evidence of what was useful and are
   left out (counted in the metadata).
5. **Documents** are the memories the queries were shown, with the text the system returned
   (logged by the proxy through the profile's result mapping, or by the SDK caller) with
   the newest search that showed them; a memory whose text was never logged with a search
   that showed it is left out with its judgments (counted).

Every judgment's provenance (source and the events behind it) is kept in the query's
``metadata.provenance``.

A query logged with its texts withheld (the proxy's ``--no-texts``, the SDK's
``store_texts=False``) is stored as a fingerprint, with no memory texts: there is nothing
to ask a system under test, so it is left out before sampling and counted apart from the
queries without evidence. A harvest that yields no query writes nothing and says why
(:func:`nothing_harvested`).
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from operator import itemgetter
from typing import Any

from recallbench.core import ConfigError, Dataset, Document, Query
from recallbench.core._query_key import WITHHELD
from recallbench.core._query_key import words as normalise
from recallbench.store._query_log_store import logged_moment
from recallbench.store._telemetry import FeedbackEvent, Judgment, QueryLogEntry

RELEVANCE_THRESHOLD = 2
UNKNOWN_INTENT = "unknown"


class NothingHarvestedError(ConfigError):
    """No logged query could become a harvested query; nothing was written."""


GRADE_RULES = {
    "manual": "a manual judgment in the store, as given",
    "validated_useful": "3 (validated useful)",
    "validated_not_useful": "0 (validated not useful)",
    "read_after_search": "2 (read after search)",
    "shown": "1 (shown but not read: a pooled unknown)",
}


@dataclass(slots=True)
class _Pooled:
    """One de-duplicated query and all the evidence about it."""

    entry: QueryLogEntry
    """The earliest logged wording."""
    query_ids: list[str] = field(default_factory=list)
    shown: dict[str, int] = field(default_factory=dict)
    """Memory id -> best (smallest) rank at which it was shown."""
    events: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    """Memory id -> kinds of feedback about it."""
    texts: dict[str, str] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)
    """The results (JSON) already pooled -> their index in ``result_sets``."""
    result_sets: list[frozenset[str]] = field(default_factory=list)
    row_results: list[int] = field(default_factory=list)
    """Each row's results (JSON logged), by index in ``result_sets``, as ``query_ids``."""
    last_texts: tuple[int | None, str] | None = None
    """The results (index) and texts (JSON) pooled last."""


@dataclass(frozen=True)
class HarvestStats:
    logged: int
    unique: int
    sampled: int
    without_evidence: int
    documents_without_text: int
    logged_ids: tuple[str, ...] = ()
    """The logged query ids behind the harvested queries (to mark them golden)."""
    withheld: int = 0
    """Unique queries logged with their texts withheld, left out before sampling."""
    withheld_feedback: int = 0
    """Feedback events about those queries (still in the store, unused here)."""


LoggedSearch = tuple[str, str, str | None, str | None, datetime, str, str]
"""What harvest reads of a logged query: (query_id, text, intent, category, created_at,
results, texts), the last two as the store keeps them (JSON)."""

ScannedSearch = tuple[str, str, str | None, str | datetime, str]
"""A logged query without its category and texts: (query_id, text, intent, created_at,
results JSON) (``Store.query_log_scan``), created_at as the database returns it (text on
SQLite)."""

Details = Callable[[Sequence[str]], Mapping[str, tuple[str | None, str]]]
"""Query ids -> (category, texts JSON) of those logged queries (``Store.query_log_details``)."""

Evidence = Callable[
    [Sequence["_Pooled"], Sequence["_Pooled"]], tuple[dict[tuple[int, str], int], int]
]
"""(pooled queries with texts, withheld ones) -> (manual grade by (id of the pooled query,
memory id), feedback events about the withheld ones), the pooled queries given their
feedback events (:func:`_evidence`)."""


def _pool(entries: Sequence[QueryLogEntry]) -> list[_Pooled]:
    rows = sorted(entries, key=lambda e: (e.created_at, e.query_id))
    return _pool_rows(
        (e.query_id, e.text, e.intent, e.category, e.created_at, e.results, e.texts) for e in rows
    )


def _pool_rows(
    rows: Iterable[tuple[str, str, str | None, str | None, datetime, Any, Any]],
) -> list[_Pooled]:
    """Rows in (created_at, query_id) order pooled by query key. ``results`` and ``texts``
    are the entry's own or, as a stream from the store holds them, their JSON; the JSON of
    a repeated search is parsed once per pooled query (a query is asked again and again)."""
    pooled: dict[str, _Pooled] = {}
    keys: dict[str, str] = {}
    for query_id, text, intent, category, created_at, results, texts in rows:
        key = keys.get(text)
        if key is None:
            withheld = WITHHELD.fullmatch(text)
            key = keys[text] = f"[{withheld.group(1)}]" if withheld else normalise(text)
        if not key:  # never a word
            continue
        item = pooled.get(key)
        if item is None:
            first = QueryLogEntry(
                query_id=query_id, text=text, created_at=created_at, intent=intent,
                category=category,
            )  # fmt: skip
            item = pooled[key] = _Pooled(first)
        item.query_ids.append(query_id)
        index: int | None = None
        if isinstance(results, str):
            index = item.seen.get(results)
            if index is not None:  # the best ranks of these results are in already
                results = ()
            else:
                index = item.seen[results] = len(item.result_sets)
                results = json.loads(results)
                item.result_sets.append(frozenset(results))
            item.row_results.append(index)
        shown = item.shown
        for rank, doc in enumerate(results, start=1):
            if shown.get(doc, rank) >= rank:
                shown[doc] = rank
        if texts is None:  # a scan without texts: _fill_texts reads the few it needs
            continue
        if isinstance(texts, str):
            if (index, texts) == item.last_texts:  # the same update again changes nothing
                continue
            item.last_texts = (index, texts)
            texts = json.loads(texts)
        now = item.result_sets[index] if index is not None else set(results)
        # only the texts of memories this search showed: what _fill_texts can find again
        # in the rows that showed a memory, without reading every row's texts
        item.texts.update((doc, text) for doc, text in texts.items() if doc in now)
    return list(pooled.values())


def _sample(pooled: Sequence[_Pooled], per_intent: int | None, seed: int) -> list[_Pooled]:
    if per_intent is None:
        return list(pooled)
    by_intent: dict[str, list[_Pooled]] = defaultdict(list)
    for item in pooled:
        by_intent[item.entry.intent or UNKNOWN_INTENT].append(item)
    rng = random.Random(seed)
    chosen: list[_Pooled] = []
    for intent in sorted(by_intent):
        group = by_intent[intent]
        chosen += group if len(group) <= per_intent else rng.sample(group, per_intent)
    order = {id(item): index for index, item in enumerate(pooled)}
    return sorted(chosen, key=lambda item: order[id(item)])


def _grade(events: Iterable[str], manual: int | None) -> tuple[int, str]:
    """(grade, source) from the strongest evidence."""
    kinds = set(events)
    if manual is not None:
        return manual, "manual"
    if "validated_useful" in kinds:
        return 3, "validated"
    if "validated_not_useful" in kinds:
        return 0, "validated"
    if "read_after_search" in kinds or "reference" in kinds:
        return 2, "implicit"
    return 1, "bootstrapped"


def harvest(
    entries: Sequence[QueryLogEntry],
    feedback: Sequence[FeedbackEvent],
    judgments: Sequence[Judgment],
    *,
    name: str = "harvested",
    sample_per_intent: int | None = None,
    seed: int = 0,
    metadata: Mapping[str, object] | None = None,
) -> tuple[Dataset, HarvestStats]:
    """A dataset from logged queries, feedback and judgments (rules in the module docstring)."""
    _check_sample(sample_per_intent)
    events = ((event.query_id, event.kind, event.doc_id) for event in feedback)
    return _harvest(
        _pool(entries),
        len(entries),
        lambda texts, withheld: _evidence(texts, withheld, events, judgments),
        name=name,
        sample_per_intent=sample_per_intent,
        seed=seed,
        metadata=metadata,
    )


def harvest_log(
    rows: Iterable[LoggedSearch],
    feedback: Iterable[tuple[str, str, str | None]],
    judgments: Sequence[Judgment],
    *,
    name: str = "harvested",
    sample_per_intent: int | None = None,
    seed: int = 0,
    metadata: Mapping[str, object] | None = None,
) -> tuple[Dataset, HarvestStats]:
    """:func:`harvest` of a log streamed as the store keeps it (``Store.query_log_stream``,
    in its order), its feedback as (query_id, kind, doc_id) (``Store.feedback_stream``)
    and its judgments: the same dataset, without holding the log as entries."""
    _check_sample(sample_per_intent)
    logged = 0

    def counted() -> Iterator[LoggedSearch]:
        nonlocal logged
        for logged, row in enumerate(rows, start=1):  # noqa: B007 - the count is the point
            yield row

    pooled = _pool_rows(counted())
    return _harvest(
        pooled,
        logged,
        lambda texts, withheld: _evidence(texts, withheld, feedback, judgments),
        name=name,
        sample_per_intent=sample_per_intent,
        seed=seed,
        metadata=metadata,
    )


def harvest_scan(
    rows: Iterable[ScannedSearch],
    details: Details,
    feedback: Iterable[tuple[str, str, str | None]],
    judgments: Sequence[Judgment],
    *,
    name: str = "harvested",
    sample_per_intent: int | None = None,
    seed: int = 0,
    metadata: Mapping[str, object] | None = None,
) -> tuple[Dataset, HarvestStats]:
    """:func:`harvest_log` in two passes, the same dataset: the log scanned without its
    texts (most of its bytes: each row repeats the text of every memory it showed), then
    the texts and categories read for the sampled queries only (:func:`_fill_texts`)."""
    _check_sample(sample_per_intent)
    # the feedback and manual judgments first (a few next to the millions of logged ids):
    # the scan picks the rows they are about, instead of a map of every logged id to its
    # pooled query being built after it
    events: dict[str, list[tuple[str, str, str | None]]] = defaultdict(list)
    for event in feedback:
        events[event[0]].append(event)
    judged: dict[str, list[tuple[int, Judgment]]] = defaultdict(list)
    for position, judgment in enumerate(judgments):
        if judgment.source == "manual":
            judged[judgment.query_id].append((position, judgment))
    pooled, logged, noted = _pool_scan(rows, {*events, *judged})

    def evidence(
        with_texts: Sequence[_Pooled], withheld: Sequence[_Pooled]
    ) -> tuple[dict[tuple[int, str], int], int]:
        """:func:`_evidence` of the rows the scan picked (each query id is in one row)."""
        withheld_ids = {id(item) for item in withheld}
        withheld_feedback = 0
        grades: list[tuple[int, tuple[int, str], int]] = []
        for item, query_id in noted:
            if id(item) in withheld_ids:
                withheld_feedback += len(events.get(query_id, ()))
                continue
            for _about, kind, doc_id in events.get(query_id, ()):
                if doc_id is not None:
                    item.events[doc_id].append(kind)
            for position, judgment in judged.get(query_id, ()):
                grades.append((position, (id(item), judgment.doc_id), judgment.grade))
        grades.sort(key=itemgetter(0))  # in the judgments' order: the last one wins
        return {key: grade for _, key, grade in grades}, withheld_feedback

    return _harvest(
        pooled,
        logged,
        evidence,
        name=name,
        sample_per_intent=sample_per_intent,
        seed=seed,
        metadata=metadata,
        details=details,
    )


def _pool_scan(
    rows: Iterable[ScannedSearch], noted: Collection[str]
) -> tuple[list[_Pooled], int, list[tuple[_Pooled, str]]]:
    """:func:`_pool_rows` of a scan (no texts, no categories), the number of rows, and
    (pooled query, query id) of the pooled rows whose ids are ``noted``, with the work
    per row cut to a few look-ups (a log holds millions of rows, a few thousand distinct
    texts, and each text's few distinct results): a row's text finds its pooled query
    directly, only the first row of a query has its created_at converted
    (:func:`~recallbench.store._query_log_store.logged_moment`) and only the first row
    with given results has them parsed."""
    pooled: dict[str, _Pooled] = {}
    of_text: dict[str, _Pooled | None] = {}  # None: a text without a word
    wordless = 0
    picked: list[tuple[_Pooled, str]] = []
    for query_id, text, intent, at, results in rows:
        item = of_text.get(text)
        if item is None:
            if text in of_text:  # never a word
                wordless += 1
                continue
            withheld = WITHHELD.fullmatch(text)
            key = f"[{withheld.group(1)}]" if withheld else normalise(text)
            if not key:
                of_text[text] = None
                wordless += 1
                continue
            item = pooled.get(key)
            if item is None:
                first = QueryLogEntry(
                    query_id=query_id, text=text, created_at=logged_moment(at), intent=intent
                )
                item = pooled[key] = _Pooled(first)
            of_text[text] = item
        item.query_ids.append(query_id)
        if query_id in noted:
            picked.append((item, query_id))
        index = item.seen.get(results)
        if index is None:  # results not pooled yet: their best ranks
            index = item.seen[results] = len(item.result_sets)
            docs = json.loads(results)
            item.result_sets.append(frozenset(docs))
            shown = item.shown
            for rank, doc in enumerate(docs, start=1):
                if shown.get(doc, rank) >= rank:
                    shown[doc] = rank
        item.row_results.append(index)
    logged = wordless + sum(len(item.query_ids) for item in pooled.values())
    return list(pooled.values()), logged, picked


def _fill_texts(chosen: Sequence[_Pooled], details: Details) -> None:
    """Each chosen query's category (its earliest row's) and, for every memory it was
    shown, the text a pass over all its rows keeps (:func:`_pool_rows`): the one in the
    newest row that showed the memory with a text. The rows that showed a memory still
    wanted are read newest first, a few more per round (1, 4, 16, ...), so a query asked
    thousands of times is usually settled by its last row or two."""
    need = {id(item): set(item.shown) for item in chosen}
    left = {id(item): len(item.query_ids) for item in chosen}
    first = details([item.query_ids[0] for item in chosen])
    for item in chosen:
        row = first.get(item.query_ids[0])  # None: pruned since the scan
        item.entry = replace(item.entry, category=row[0] if row else None)
    pending = [item for item in chosen if need[id(item)]]
    step = 1
    while pending:
        batches: list[tuple[_Pooled, list[tuple[str, frozenset[str]]]]] = []
        for item in pending:
            wanted, sets, rows = need[id(item)], item.result_sets, item.row_results
            ids: list[tuple[str, frozenset[str]]] = []
            at = left[id(item)]
            while at and len(ids) < step:
                at -= 1
                if not wanted.isdisjoint(sets[rows[at]]):
                    ids.append((item.query_ids[at], sets[rows[at]]))
            left[id(item)] = at
            batches.append((item, ids))
        found = details([qid for _, ids in batches for qid, _ in ids])
        for item, ids in batches:
            wanted = need[id(item)]
            parsed: dict[str, dict[str, str]] = {}
            for qid, showed in ids:
                if qid not in found:  # pruned since the scan
                    continue
                raw = found[qid][1]
                texts = parsed.get(raw)
                if texts is None:
                    texts = parsed[raw] = json.loads(raw)
                for doc in wanted.intersection(texts).intersection(showed):
                    item.texts[doc] = texts[doc]
                    wanted.discard(doc)
                if not wanted:
                    break
        pending = [item for item in pending if need[id(item)] and left[id(item)]]
        step *= 4


def _check_sample(sample_per_intent: int | None) -> None:
    if sample_per_intent is not None and sample_per_intent < 1:
        raise ConfigError(f"--sample-per-intent must be at least 1, got {sample_per_intent}")


def _harvest(
    pooled: list[_Pooled],
    logged: int,
    evidence: Evidence,
    *,
    name: str,
    sample_per_intent: int | None,
    seed: int,
    metadata: Mapping[str, object] | None,
    details: Details | None = None,
) -> tuple[Dataset, HarvestStats]:
    """The dataset of ``pooled`` (:func:`_pool_rows`), its feedback and manual grades
    given by ``evidence`` (:func:`_evidence`)."""
    withheld = [item for item in pooled if WITHHELD.fullmatch(item.entry.text)]
    withheld_ids = {id(item) for item in withheld}
    pooled_with_texts = [item for item in pooled if id(item) not in withheld_ids]
    manual, withheld_feedback = evidence(pooled_with_texts, withheld)
    chosen = _sample(pooled_with_texts, sample_per_intent, seed)
    if details is not None:
        _fill_texts(chosen, details)
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    texts: dict[str, str] = {}
    without_evidence = 0
    missing_text: set[str] = set()
    harvested_ids: list[str] = []
    for item in chosen:
        graded: dict[str, int] = {}
        provenance: dict[str, dict[str, object]] = {}
        for doc in sorted({*item.shown, *item.events}):
            text = item.texts.get(doc)
            if text is None:
                missing_text.add(doc)
                continue
            grade, source = _grade(item.events.get(doc, ()), manual.get((id(item), doc)))
            graded[doc] = grade
            provenance[doc] = {"source": source, "events": sorted(item.events.get(doc, []))}
            texts.setdefault(doc, text)
        if not any(grade >= RELEVANCE_THRESHOLD for grade in graded.values()):
            without_evidence += 1
            continue
        query_id = f"h{len(queries) + 1:05d}"
        query = Query(
            id=query_id,
            text=item.entry.text,
            intent=item.entry.intent,
            category=item.entry.category,
            metadata={
                "logged_query_ids": [],
                "first_logged": item.entry.created_at.isoformat(),
                "provenance": provenance,
            },
        )
        # the logged ids (millions of strings on a large log) are given to the query
        # checked without them: checked one by one as JSON values, they cost seconds
        logged_ids = {**query.metadata, "logged_query_ids": list(item.query_ids)}
        queries.append(query.model_copy(update={"metadata": logged_ids}))
        qrels[query_id] = dict(sorted(graded.items()))
        harvested_ids += item.query_ids
    used = {doc for judged in qrels.values() for doc in judged}
    documents = tuple(Document(id=doc, text=texts[doc]) for doc in sorted(used))
    stats = HarvestStats(
        logged=logged,
        unique=len(pooled),
        sampled=len(chosen),
        without_evidence=without_evidence,
        documents_without_text=len(missing_text - used),
        logged_ids=tuple(harvested_ids),
        withheld=len(withheld),
        withheld_feedback=withheld_feedback,
    )
    dataset = Dataset(
        name=name,
        description="Harvested from logged agent queries and their implicit feedback.",
        relevance_threshold=RELEVANCE_THRESHOLD,
        metadata={
            "harvest": {
                **dict(metadata or {}),
                "rules": GRADE_RULES,
                "sample_per_intent": sample_per_intent,
                "seed": seed,
                "logged_queries": stats.logged,
                "unique_queries": stats.unique,
                "sampled": stats.sampled,
                "left_out_without_evidence": stats.without_evidence,
                "left_out_texts_withheld": stats.withheld,
                "memories_without_text": stats.documents_without_text,
            }
        },
        documents=documents,
        queries=tuple(queries),
        qrels=qrels,
    )
    return dataset, stats


def _evidence(
    pooled: Sequence[_Pooled],
    withheld: Sequence[_Pooled],
    feedback: Iterable[tuple[str, str, str | None]],
    judgments: Iterable[Judgment],
) -> tuple[dict[tuple[int, str], int], int]:
    """Each pooled query's feedback (its ``events``), the manual grades by (id of the
    pooled query, memory id), and how many events are about the ``withheld`` queries."""
    hidden = {qid for item in withheld for qid in item.query_ids}
    of_query = {qid: item for item in pooled for qid in item.query_ids}
    withheld_feedback = 0
    for query_id, kind, doc_id in feedback:
        item = of_query.get(query_id)
        if item is not None:
            if doc_id is not None:
                item.events[doc_id].append(kind)
        elif query_id in hidden:
            withheld_feedback += 1
    manual: dict[tuple[int, str], int] = {}
    for judgment in judgments:
        item = of_query.get(judgment.query_id)
        if item is not None and judgment.source == "manual":
            manual[(id(item), judgment.doc_id)] = judgment.grade
    return manual, withheld_feedback


def nothing_harvested(stats: HarvestStats, where: str) -> str:
    """Why a harvest from ``where`` (the store and workspace) yielded no query, and what
    would yield one."""
    if stats.logged == 0:
        return f"no logged queries in {where}: nothing to harvest"
    parts = []
    if stats.withheld:
        parts.append(
            f"{_of(stats.withheld, stats.unique)} logged with their texts withheld "
            "(the proxy's --no-texts or the SDK's store_texts=False: a fingerprint in place "
            "of the query, no memory texts), and a dataset needs both to ask a system under "
            f"test; their {stats.withheld_feedback} feedback events stay in the store "
            "(`recallbench serve` shows them by query and memory id)"
        )
    if stats.without_evidence:
        parts.append(
            f"{_of(stats.without_evidence, stats.sampled, 'sampled')} without evidence of "
            "a useful memory whose text was logged (read after search, referenced or "
            "validated useful)"
        )
    said = "; ".join(parts)
    hint = (
        "To harvest, log with texts: drop --no-texts (or store_texts=False); "
        "--redact PATTERN hides only the matches"
        if stats.withheld
        else "Harvest again once agents have read or validated what they were shown"
    )
    return f"no query could be harvested from {where}: {said}. {hint}"


def _of(count: int, total: int, kind: str = "unique") -> str:
    """``count`` of ``total`` queries, as the subject of a sentence (with its verb)."""
    noun = "query" if total == 1 else "queries"
    if count == total:
        return f"all {total} {kind} {noun} were" if total > 1 else f"the one {kind} {noun} was"
    return f"{count} of {total} {kind} {noun} {'was' if count == 1 else 'were'}"


def since_date(text: str | None) -> datetime | None:
    """``--since``: an ISO date or date-time (UTC when no zone is given)."""
    if text is None:
        return None
    from datetime import UTC

    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"--since {text!r}: not an ISO date such as 2026-11-01") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
