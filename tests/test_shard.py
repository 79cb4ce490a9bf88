"""The split of `run --shard I/N`: every query in exactly one shard, each unit (conversation,
session) whole in one, the same split every time, balanced; and bad --shard values."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from recallbench.cli import main
from recallbench.core import Dataset, Document, Query
from recallbench.runner._shard import Shard, shard_queries, split, units


@st.composite
def datasets(draw: st.DrawFn) -> Dataset:
    """Datasets with units (a query's unit drawn), with sessions, or with neither."""
    kind = draw(st.sampled_from(["units", "sessions", "plain"]))
    n_docs = draw(st.integers(1, 12))
    documents = tuple(Document(id=f"d{i}", text=f"text {i}") for i in range(n_docs))
    n_units = draw(st.integers(1, 6))
    unit_docs = {
        f"u{u}": tuple(
            f"d{i}"
            for i in sorted(draw(st.sets(st.integers(0, n_docs - 1), min_size=1, max_size=n_docs)))
        )
        for u in range(n_units)
    }
    placed = draw(st.lists(st.integers(0, n_units - 1), min_size=1, max_size=30))
    queries = tuple(
        Query(
            id=f"q{i}",
            text=f"question {i}",
            unit=f"u{group}" if kind == "units" else None,
            session_id=f"s{group}" if kind == "sessions" and group % 2 else None,
        )
        for i, group in enumerate(placed)
    )
    used = {q.unit for q in queries}
    return Dataset(
        name="drawn",
        documents=documents,
        queries=queries,
        qrels={q.id: {"d0": 1} for q in queries},
        units={u: docs for u, docs in unit_docs.items() if u in used} if kind == "units" else {},
    )


@settings(max_examples=200, deadline=None)
@given(datasets(), st.integers(1, 7))
def test_the_shards_partition_the_dataset_by_unit(dataset: Dataset, count: int) -> None:
    parts = [shard_queries(dataset, Shard(i, count)) for i in range(1, count + 1)]
    ids = [q.id for part in parts for q in part]
    # the union is the dataset, no query twice, and each part keeps the dataset's order
    assert sorted(ids) == sorted(q.id for q in dataset.queries)
    assert len(ids) == len(set(ids))
    order = {q.id: n for n, q in enumerate(dataset.queries)}
    for part in parts:
        assert [order[q.id] for q in part] == sorted(order[q.id] for q in part)
    # a unit (or a session) never straddles two shards
    shard_of = {q.id: n for n, part in enumerate(parts) for q in part}
    for key in {q.unit for q in dataset.queries} | {q.session_id for q in dataset.queries}:
        if key is None:
            continue
        members = [q for q in dataset.queries if key in (q.unit, q.session_id)]
        assert len({shard_of[q.id] for q in members}) == 1, key
    # deterministic: computed again (a fresh copy, as on another machine), the same shards
    again = Dataset.model_validate(dataset.model_dump())
    assert [shard_queries(again, Shard(i, count)) for i in range(1, count + 1)] == parts
    # balanced: greedy to the lightest shard, so no shard is heavier than the lightest by
    # more than the heaviest unit
    loads = [sum(unit.weight for unit in shard) for shard in split(dataset, count)]
    assert max(loads) - min(loads) <= max(unit.weight for unit in units(dataset))


def test_a_unit_is_a_conversation_session_or_query() -> None:
    documents = (Document(id="d0", text="x"), Document(id="d1", text="y"))
    plain = Dataset(
        name="plain",
        documents=documents,
        queries=(
            Query(id="a", text="a", session_id="s"),
            Query(id="b", text="b"),
            Query(id="c", text="c", session_id="s"),
        ),
        qrels={"a": {"d0": 1}, "b": {"d1": 1}, "c": {"d0": 1}},
    )
    # a session is asked together; a query alone is its own unit; every unit ingests all
    assert [(u.key, [q.id for q in u.queries], u.weight) for u in units(plain)] == [
        ("session:s", ["a", "c"], 4),
        ("query:b", ["b"], 3),
    ]
    assert [q.id for q in shard_queries(plain, Shard(1, 2))] == ["a", "c"]
    assert [q.id for q in shard_queries(plain, Shard(2, 2))] == ["b"]
    # more shards than units: the rest are empty, not an error
    assert shard_queries(plain, Shard(3, 3)) == ()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0/4", "--shard '0/4': the shard must be between 1 and 4"),
        ("5/4", "--shard '5/4': the shard must be between 1 and 4"),
        ("1/0", "--shard '1/0': the number of shards must be at least 1"),
        ("two/4", "--shard 'two/4': expected I/N"),
        ("2", "--shard '2': expected I/N"),
    ],
)
@pytest.mark.parametrize("command", ["run", "bench"])
def test_a_bad_shard_is_refused_before_anything_runs(
    tmp_path: Path, command: str, value: str, message: str
) -> None:
    out = tmp_path / "out"
    arguments = [command, "--shard", value, "--out", str(out), "--system", "builtin-lexical"]
    if command == "bench":
        arguments += ["--dataset", "agent-memory-sample"]
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


def test_session_lift_is_not_sharded(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["run", "--shard", "1/2", "--session-lift", "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 2
    assert "--session-lift is not sharded" in result.output
