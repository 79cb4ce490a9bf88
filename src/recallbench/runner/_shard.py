"""Split a dataset into N shards that run apart (on N machines) and merge back into the run
one machine would have made.

The split is by *unit*: what must be asked together, on one store, in order.

- A dataset with units (LoCoMo conversations, LongMemEval haystacks): each unit, with all
  its queries (the runner ingests a unit once and asks its queries against it).
- A dataset without units: each session (the queries sharing a ``session_id``: a
  session-aware system expands a query with the session's earlier ones), else each query
  alone. Every shard of such a dataset ingests all its documents.

Units are taken in the order of their first query; each unit's weight is its queries plus
the documents it ingests (one call each). Greedy, heaviest first (ties: the earlier unit),
each unit goes to the shard holding the least weight so far (ties: the lower shard). The
split depends on the dataset and N only, so every machine computes the same one, and no
shard holds more than the lightest one plus the heaviest unit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

from pydantic import Field

from recallbench.core import ConfigError, Dataset, DatasetRef, Query
from recallbench.core._model import Record

SHARD_FORMAT: Final = "recallbench.shard/v1"
SHARD_FILE: Final = "shard.json"
"""The manifest a shard run writes beside its run files, read by `recallbench merge`."""

_SPEC = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based)."""

    index: int
    count: int

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    @classmethod
    def parse(cls, text: str, flag: str = "--shard") -> Shard:
        """``I/N`` with 1 <= I <= N; ConfigError (exit 2) saying what is wrong otherwise."""
        match = _SPEC.fullmatch(text)
        if match is None:
            raise ConfigError(f"{flag} {text!r}: expected I/N, such as 2/4 (shard I of N)")
        index, count = int(match[1]), int(match[2])
        if count < 1:
            raise ConfigError(f"{flag} {text!r}: the number of shards must be at least 1")
        if not 1 <= index <= count:
            raise ConfigError(f"{flag} {text!r}: the shard must be between 1 and {count}")
        return cls(index, count)


@dataclass(frozen=True, slots=True)
class Unit:
    """What one shard must run together: its key, queries (dataset order) and weight."""

    key: str
    queries: tuple[Query, ...]
    weight: int


def units(dataset: Dataset) -> list[Unit]:
    """The dataset's units in the order of their first query (see the module's rules)."""
    asked: dict[str, list[Query]] = {}
    for query in dataset.queries:
        asked.setdefault(_unit_key(dataset, query), []).append(query)
    shared = 0 if dataset.units else len(dataset.documents)
    return [
        Unit(
            key,
            tuple(queries),
            len(queries) + (len(dataset.units.get(key, ())) if dataset.units else shared),
        )
        for key, queries in asked.items()
    ]


def _unit_key(dataset: Dataset, query: Query) -> str:
    if dataset.units:
        return query.unit or ""
    if query.session_id is not None:
        return f"session:{query.session_id}"
    return f"query:{query.id}"


def split(dataset: Dataset, count: int) -> list[list[Unit]]:
    """The ``count`` shards' units, each shard's in dataset order (greedy, heaviest first)."""
    found = units(dataset)
    loads = [0] * count
    placed: list[list[int]] = [[] for _ in range(count)]
    heaviest_first = sorted(range(len(found)), key=lambda i: (-found[i].weight, i))
    for position in heaviest_first:
        target = min(range(count), key=lambda s: (loads[s], s))
        loads[target] += found[position].weight
        placed[target].append(position)
    return [[found[i] for i in sorted(positions)] for positions in placed]


def shard_queries(dataset: Dataset, shard: Shard) -> tuple[Query, ...]:
    """The queries of ``shard``, in dataset order."""
    chosen = {q.id for unit in split(dataset, shard.count)[shard.index - 1] for q in unit.queries}
    return tuple(q for q in dataset.queries if q.id in chosen)


class ShardIdentity(Record):
    index: int = Field(ge=1)
    count: int = Field(ge=1)


class ShardDataset(Record):
    """One dataset of a shard run: how it was given, what it is, and this shard's part."""

    spec: str
    """As given to --dataset (merge loads it again from there unless told otherwise)."""
    ref: DatasetRef
    folder: str
    """Where its runs are, relative to the shard folder ("" for `run`)."""
    queries: list[str]
    """Ids of the queries this shard asked, in dataset order."""


class ShardManifest(Record):
    """``shard.json``: which shard a folder holds and everything it must share with the
    others to be merged (`recallbench merge` refuses shards that differ in any of it)."""

    format: Literal["recallbench.shard/v1"] = SHARD_FORMAT
    command: Literal["run", "bench"]
    shard: ShardIdentity
    k: int
    measures: list[str]
    measures_source: str | None = None
    """How `run` chose its measures (the report's ``rules.measures``); None for `bench`."""
    equivalence: bool = False
    systems: list[str]
    """The systems' names as they ran (and as their runs are named)."""
    folders: dict[str, str]
    """System -> its folder under a dataset's folder ("" when there is one system)."""
    datasets: list[ShardDataset]
    arguments: list[str] = Field(default_factory=list)
    """`bench`: the options of the command line its leaderboard names (without --shard)."""

    def agreement(self) -> dict[str, object]:
        """What every shard of one run must share."""
        return {
            "command": self.command,
            "number of shards": self.shard.count,
            "k": self.k,
            "measures": self.measures,
            "measure choice": self.measures_source,
            "equivalence": self.equivalence,
            "systems": self.systems,
            "datasets": [(d.ref.name, d.ref.sha256) for d in self.datasets],
            "arguments": self.arguments,
        }


def identity(shard: Shard) -> ShardIdentity:
    return ShardIdentity(index=shard.index, count=shard.count)
