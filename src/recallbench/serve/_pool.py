"""The judging pool of stored runs: the unjudged results runs really returned, for people
to label in the dashboard (``recallbench serve --pool RUN_ID``).

Depth pooling as TREC does it (Voorhees & Harman 2005, *TREC: Experiment and Evaluation
in Information Retrieval*, MIT Press, ch. 2-3): for each query of the dataset, the union of
the first ``depth`` results of every pooled run, less the pairs the dataset already judges.
A result a run returns twice counts at its first rank; a failed query adds nothing; an
unanswerable query is left out (no memory can be relevant to it), and so is a result naming
a memory the dataset does not hold (there is no text to judge; run files record ids, not
texts): both are counted. A memory's text is the dataset's (title, then text).

Two orders, both deterministic (ties: the dataset's query order, then memory id):

- ``depth``: the best (smallest) rank any run gave the pair, then how many runs returned
  it, more first. All first results come before any second one, so that every run is
  fully judged to depth d before any pair deeper than d is asked.
- ``disagreement``: the pairs whose label can move the difference between runs most first
  (the document weights of Carterette, Allan & Sitaraman 2006, "Minimal test collections
  for retrieval evaluation", SIGIR, for DCG). Grading a pair ``g`` changes the difference
  DCG@depth(i) - DCG@depth(j) of runs i and j by ``g * (D(r_i) - D(r_j))`` with
  ``D(r) = 1 / log2(r + 1)`` at the rank the run gave it and 0 when it did not return it
  within the depth; the pair's weight is ``sum over i < j of |D(r_i) - D(r_j)|``. A memory
  one run returns first and another not at all weighs 1 for that pair of runs; one every
  run returns at the same rank weighs 0: its label moves all runs alike. Equal weights
  fall back to the depth order. With one run every weight is 0, and the order is depth's.

The pool hands the queue every pooled pair (:meth:`Pool.__call__`); the queue leaves out
those with a ``manual`` label, so the pairs offered are the unjudged ones. Progress
(:meth:`Pool.progress`) counts the pooled pairs people labelled since.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from recallbench.core import ConfigError, Dataset, RecallbenchError
from recallbench.report import output_file
from recallbench.serve._queue import Pair
from recallbench.serve._rankings import recorded_rankings

if TYPE_CHECKING:
    from recallbench.store import Store

PoolOrder = Literal["depth", "disagreement"]
ORDERS: tuple[PoolOrder, ...] = ("depth", "disagreement")
DEFAULT_DEPTH = 10


@dataclass(frozen=True, slots=True)
class PooledRun:
    """One stored run's rankings, as its output folder holds them."""

    run_id: int
    system: str
    rankings: Mapping[str, tuple[str, ...]]
    """Query id -> returned memory ids, best first (failed queries absent)."""


@dataclass(frozen=True, slots=True)
class PoolEntry:
    """One unjudged (query, memory) pair some pooled run returned within the depth."""

    query_id: str
    doc_id: str
    ranks: Mapping[int, int]
    """Run id -> the rank that run gave the memory (runs that returned it within the
    depth, in the order the runs were given)."""
    weight: float
    """How much its label can move the differences between runs (module docstring)."""

    @property
    def rank(self) -> int:
        """The best rank any run gave it."""
        return min(self.ranks.values())

    @property
    def key(self) -> tuple[str, str]:
        return (self.query_id, self.doc_id)

    @property
    def origin(self) -> str:
        runs = ", ".join(f"#{run_id}" for run_id in self.ranks)
        return f"pool of run{'s' if len(self.ranks) > 1 else ''} {runs} (rank {self.rank})"


def discount(rank: int | None) -> float:
    """DCG's discount at a 1-based rank; 0 for a memory not returned within the depth."""
    return 0.0 if rank is None else 1.0 / math.log2(rank + 1)


def disagreement(ranks: Mapping[int, int], runs: Sequence[int]) -> float:
    """``sum over pairs of runs i < j of |D(r_i) - D(r_j)|`` (module docstring)."""
    discounts = [discount(ranks.get(run)) for run in runs]
    return sum(
        abs(discounts[i] - discounts[j])
        for i in range(len(discounts))
        for j in range(i + 1, len(discounts))
    )


@dataclass(frozen=True, slots=True)
class RunProgress:
    run_id: int
    system: str
    pooled: int
    """Pooled pairs this run returned within the depth."""
    labelled: int
    """Of those, the pairs people labelled."""
    judged_at_depth: float | None
    """The share of the run's first ``depth`` results (of answerable queries, memories the
    dataset holds) with a label, the dataset's or a person's: Judged@depth."""


@dataclass(frozen=True, slots=True)
class DepthProgress:
    rank: int
    pooled: int
    """Pooled pairs whose best rank is this one."""
    labelled: int
    queries_complete: int
    """Queries whose pooled pairs down to this rank are all labelled."""


@dataclass(frozen=True, slots=True)
class PoolProgress:
    pooled: int
    labelled: int
    queries: int
    """Answerable queries of the dataset."""
    runs: tuple[RunProgress, ...]
    depths: tuple[DepthProgress, ...]


class Pool:
    """The judging pool of ``runs`` on ``dataset`` (module docstring); a source of pairs
    for the annotation queue: calling it yields the pooled pairs in their order."""

    def __init__(
        self,
        dataset: Dataset,
        runs: Sequence[PooledRun],
        depth: int = DEFAULT_DEPTH,
        order: PoolOrder = "depth",
    ) -> None:
        if depth < 1:
            raise ConfigError(f"--pool-depth must be at least 1, not {depth}")
        if order not in ORDERS:
            raise ConfigError(f"--pool-order must be one of {', '.join(ORDERS)}, not {order!r}")
        if len({run.run_id for run in runs}) != len(runs):
            raise ConfigError("a run is pooled twice")
        self.dataset = dataset
        self.runs = tuple(runs)
        self.depth = depth
        self.order = order
        self.unknown = 0
        """Results naming a memory the dataset does not hold: left out."""
        self.unanswerable = 0
        """Unanswerable queries: left out."""
        self._tops: dict[tuple[int, str], tuple[str, ...]] = {}
        self.entries: tuple[PoolEntry, ...] = self._pool()

    def _pool(self) -> tuple[PoolEntry, ...]:
        documents = self.dataset.documents_by_id
        run_ids = [run.run_id for run in self.runs]
        entries: list[PoolEntry] = []
        position: dict[str, int] = {}
        for index, query in enumerate(self.dataset.queries):
            position[query.id] = index
            if query.unanswerable:
                self.unanswerable += 1
                continue
            judged = self.dataset.qrels.get(query.id, {})
            ranks: dict[str, dict[int, int]] = {}
            for run in self.runs:
                top = tuple(dict.fromkeys(run.rankings.get(query.id, ())))[: self.depth]
                known = tuple(doc for doc in top if doc in documents)
                self.unknown += sum(1 for doc in top if doc not in judged and doc not in known)
                self._tops[(run.run_id, query.id)] = known
                for rank, doc in enumerate(top, 1):
                    if doc in documents and doc not in judged:
                        ranks.setdefault(doc, {})[run.run_id] = rank
            for doc, by_run in ranks.items():
                entries.append(PoolEntry(query.id, doc, by_run, disagreement(by_run, run_ids)))

        def by_depth(entry: PoolEntry) -> tuple[int, int, int, str]:
            return (entry.rank, -len(entry.ranks), position[entry.query_id], entry.doc_id)

        entries.sort(key=by_depth)
        if self.order == "disagreement":
            entries.sort(key=lambda entry: -entry.weight)  # stable: depth order breaks ties
        return tuple(entries)

    def __call__(self) -> Iterator[Pair]:
        """The pooled pairs as the queue's pairs, in the pool's order."""
        queries = {query.id: query for query in self.dataset.queries}
        documents = self.dataset.documents_by_id
        for entry in self.entries:
            document = documents[entry.doc_id]
            text = f"{document.title}\n{document.text}" if document.title else document.text
            yield Pair(
                entry.query_id, entry.doc_id, queries[entry.query_id].text, text, entry.origin
            )

    def progress(self, labelled: Iterable[tuple[str, str]]) -> PoolProgress:
        """How far people have labelled the pool, given the (query, memory) pairs that
        have a person's label."""
        done = set(labelled)
        in_pool = [entry for entry in self.entries if entry.key in done]
        runs = tuple(self._run_progress(run, done) for run in self.runs)
        depths = []
        for rank in range(1, self.depth + 1):
            at = [entry for entry in self.entries if entry.rank == rank]
            open_queries = {
                entry.query_id
                for entry in self.entries
                if entry.rank <= rank and entry.key not in done
            }
            depths.append(
                DepthProgress(
                    rank,
                    len(at),
                    sum(1 for entry in at if entry.key in done),
                    self._answerable() - len(open_queries),
                )
            )
        return PoolProgress(
            len(self.entries), len(in_pool), self._answerable(), runs, tuple(depths)
        )

    def _answerable(self) -> int:
        return len(self.dataset.queries) - self.unanswerable

    def _run_progress(self, run: PooledRun, done: set[tuple[str, str]]) -> RunProgress:
        mine = [entry for entry in self.entries if run.run_id in entry.ranks]
        results = judged = 0
        for query in self.dataset.queries:
            if query.unanswerable:
                continue
            qrels = self.dataset.qrels.get(query.id, {})
            for doc in self._tops.get((run.run_id, query.id), ()):
                results += 1
                judged += doc in qrels or (query.id, doc) in done
        return RunProgress(
            run.run_id,
            run.system,
            len(mine),
            sum(1 for entry in mine if entry.key in done),
            judged / results if results else None,
        )


# -- the runs, read from their output folders -----------------------------------------


def stored_pool(
    store: Store,
    run_ids: Sequence[int],
    dataset: Dataset | None,
    depth: int = DEFAULT_DEPTH,
    order: PoolOrder = "depth",
) -> Pool:
    """The pool of the stored runs ``run_ids`` on ``dataset`` (:func:`read_pooled_runs`
    says what is refused)."""
    runs = read_pooled_runs(store, run_ids, dataset)
    if dataset is None:  # refused above, for every run
        raise ConfigError("--pool needs --dataset")
    return Pool(dataset, runs, depth, order)


def read_pooled_runs(
    store: Store, run_ids: Sequence[int], dataset: Dataset | None
) -> list[PooledRun]:
    """The stored runs' rankings, read from the output folder each run recorded as its
    source (``run.json``, else ``report.json``: its first 20 results). Every problem is
    collected and raised as one :class:`ConfigError`: an unknown run, a source that is not
    a folder on disk, a run made on another dataset than ``dataset`` (or no dataset)."""
    problems: list[str] = []
    runs: list[PooledRun] = []
    for run_id in dict.fromkeys(run_ids):
        try:
            stored = store.get(run_id)
        except ConfigError as error:
            problems.append(f"--pool {run_id}: {error}")
            continue
        made_on = (
            f"{stored.dataset_name} {stored.dataset_version} (sha256 {stored.dataset_sha256[:12]})"
        )
        if dataset is None:
            problems.append(
                f"--pool {run_id}: give --dataset, the dataset run #{run_id} was made on "
                f"({made_on}): the pool takes its queries and memory texts from it"
            )
            continue
        if stored.dataset_sha256 != dataset.sha256:
            problems.append(
                f"--pool {run_id}: run #{run_id} was made on {made_on}, not on --dataset "
                f"{dataset.name} {dataset.version} (sha256 {dataset.sha256[:12]})"
            )
            continue
        source = Path(stored.source) if stored.source else None
        if source is None or not source.exists():
            where = f"its output folder {source} is gone" if source else "it has no source"
            problems.append(
                f"--pool {run_id}: run #{run_id} cannot be read: {where} (the folder "
                "`recallbench run --out` wrote; run it again to pool it)"
            )
            continue
        try:
            rankings = recorded_rankings(output_file(source, ("run.json", "report.json")))
        except RecallbenchError as error:  # a malformed file: its located problems
            problems.append(f"--pool {run_id}: {error}")
            continue
        runs.append(PooledRun(run_id, stored.system, rankings))
    if problems:
        raise ConfigError("\n".join(problems))
    return runs
