"""The judging pool of runs (serve/_pool.py): depth pooling on generated runs (ties,
duplicates across and within runs, odd ids, judged pairs, the depth cut), both orders, the
queue it feeds and its progress, checked against a brute-force pool; and `serve --pool`'s
refusals of bad input (exit 2, naming what), on runs recorded by `recallbench run`."""

from __future__ import annotations

import math
import re
import shutil
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from recallbench.cli import main
from recallbench.core import ConfigError, Dataset, Document, Query, Run
from recallbench.datasets import DEFAULT_DATASET, load_dataset
from recallbench.report import Report
from recallbench.serve._pool import Pool, PooledRun, discount, read_pooled_runs
from recallbench.serve._queue import Queue
from recallbench.serve._rankings import recorded_rankings
from recallbench.store import Judgment, Store, open_store

ODD = ("mem 1", "mém/2", 'a"b', "<x>", "3", "03", "Ω")
"""Memory ids with spaces, slashes, quotes, markup, leading zeros and non-ASCII letters."""


def _dataset(
    qrels: Mapping[str, Mapping[str, int]] | None = None,
    docs: Sequence[str] = ODD,
    queries: Sequence[str] = ("q1", "q2", "q3"),
    unanswerable: Sequence[str] = (),
) -> Dataset:
    return Dataset(
        name="generated",
        documents=tuple(Document(id=doc, text=f"text of {doc}") for doc in docs),
        queries=tuple(
            Query(id=q, text=f"question {q}", answerable=q not in unanswerable) for q in queries
        ),
        qrels={q: dict(judged) for q, judged in (qrels or {}).items()},
    )


def _run(run_id: int, rankings: Mapping[str, Sequence[str]]) -> PooledRun:
    return PooledRun(run_id, f"system-{run_id}", {q: tuple(r) for q, r in rankings.items()})


def _brute_force(dataset: Dataset, runs: Sequence[PooledRun], depth: int) -> set[tuple[str, str]]:
    pooled = set()
    for query in dataset.queries:
        if query.unanswerable:
            continue
        for run in runs:
            seen: list[str] = []
            for doc in run.rankings.get(query.id, ()):
                if doc not in seen:
                    seen.append(doc)
            for doc in seen[:depth]:
                if doc in dataset.documents_by_id and doc not in dataset.qrels.get(query.id, {}):
                    pooled.add((query.id, doc))
    return pooled


def test_the_pool_is_the_union_of_the_first_results_less_the_judged() -> None:
    dataset = _dataset({"q1": {"mem 1": 2}}, unanswerable=["q3"])
    first = _run(3, {"q1": ["mem 1", "mém/2", "mém/2", 'a"b', "<x>"], "q3": ["Ω"]})
    second = _run(5, {"q1": ["<x>", "unknown", "mém/2", "3"], "q2": ["03", "3"]})
    pool = Pool(dataset, [first, second], depth=3)
    keys = [entry.key for entry in pool.entries]
    assert len(keys) == len(set(keys))  # a memory two runs return is pooled once
    assert set(keys) == _brute_force(dataset, [first, second], 3)
    # the judged "mem 1" is out; the unknown id too; first's 'a"b' is its third distinct
    assert set(keys) == {
        ("q1", "mém/2"),
        ("q1", 'a"b'),
        ("q1", "<x>"),
        ("q2", "03"),
        ("q2", "3"),
    }
    assert pool.unknown == 1 and pool.unanswerable == 1
    by_key = {entry.key: entry for entry in pool.entries}
    assert by_key[("q1", "<x>")].ranks == {5: 1}  # first's 4th distinct result is past depth
    assert by_key[("q1", "mém/2")].ranks == {3: 2, 5: 3}  # its first rank, not its repeat


def test_the_depth_order_puts_best_ranks_first_then_most_runs() -> None:
    dataset = _dataset()
    runs = [
        _run(1, {"q1": ["Ω", "mem 1"], "q2": ["3", "<x>"]}),
        _run(2, {"q1": ["mem 1", "Ω"], "q2": ["<x>", "3"]}),
        _run(3, {"q1": ["03"], "q2": ["<x>"]}),
    ]
    pool = Pool(dataset, runs, depth=2)
    assert [(e.query_id, e.doc_id) for e in pool.entries] == [
        ("q2", "<x>"),  # rank 1, three runs
        ("q1", "mem 1"),  # rank 1, two runs (dataset order: q1 first)
        ("q1", "Ω"),
        ("q2", "3"),
        ("q1", "03"),  # rank 1, one run
    ]
    deeper = Pool(dataset, [*runs, _run(4, {"q1": ["03", "3"]})], depth=2)
    assert [(e.key, e.rank, len(e.ranks)) for e in deeper.entries] == [
        (("q2", "<x>"), 1, 3),
        (("q1", "03"), 1, 2),  # now two runs: ties broken by query, then memory id
        (("q1", "mem 1"), 1, 2),
        (("q1", "Ω"), 1, 2),
        (("q2", "3"), 1, 2),
        (("q1", "3"), 2, 1),  # every first result before any second one
    ]


def test_the_disagreement_order_puts_first_what_can_move_the_difference() -> None:
    dataset = _dataset()
    same = _run(1, {"q1": ["mem 1", "mém/2", "3"], "q2": ["Ω"]})
    other = _run(2, {"q1": ["mem 1", "<x>", "mém/2"], "q2": ["03"]})
    pool = Pool(dataset, [same, other], depth=3, order="disagreement")
    weights = {entry.key: entry.weight for entry in pool.entries}
    assert weights[("q1", "mem 1")] == 0.0  # first in both: its label moves both alike
    assert weights[("q2", "Ω")] == pytest.approx(1.0)  # first in one, absent from the other
    assert weights[("q1", "mém/2")] == pytest.approx(abs(discount(2) - discount(3)))
    assert weights[("q1", "<x>")] == pytest.approx(1 / math.log2(3))
    assert [e.key for e in pool.entries] == [
        ("q2", "03"),  # weight 1 both: the depth order breaks the tie (memory id)
        ("q2", "Ω"),
        ("q1", "<x>"),
        ("q1", "3"),
        ("q1", "mém/2"),
        ("q1", "mem 1"),
    ]
    depth = Pool(dataset, [same, other], depth=3)
    assert depth.entries[0].key == ("q1", "mem 1")  # the other order puts it first
    # one run: nothing to disagree with, the depth order
    alone = Pool(dataset, [same], depth=3, order="disagreement")
    assert [e.key for e in alone.entries] == [e.key for e in Pool(dataset, [same], 3).entries]


def test_a_three_run_weight_sums_over_every_pair_of_runs() -> None:
    dataset = _dataset()
    runs = [_run(1, {"q1": ["3"]}), _run(2, {"q1": ["mem 1", "3"]}), _run(3, {"q1": []})]
    pool = Pool(dataset, runs, depth=2, order="disagreement")
    weight = {e.key: e.weight for e in pool.entries}[("q1", "3")]
    d1, d2 = discount(1), discount(2)
    assert weight == pytest.approx(abs(d1 - d2) + d1 + d2)


def test_origin_names_the_runs_and_the_best_rank() -> None:
    dataset = _dataset()
    pool = Pool(dataset, [_run(3, {"q1": ["3", "Ω"]}), _run(5, {"q1": ["Ω"]})], depth=5)
    pairs = {pair.key: pair for pair in pool()}
    assert pairs[("q1", "Ω")].origin == "pool of runs #3, #5 (rank 1)"
    assert pairs[("q1", "3")].origin == "pool of run #3 (rank 1)"
    assert pairs[("q1", "Ω")].doc_text == "text of Ω"
    assert pairs[("q1", "Ω")].query_text == "question q1"


@settings(max_examples=60, deadline=None)
@given(
    rankings=st.lists(
        st.dictionaries(
            st.sampled_from(["q1", "q2", "q3"]),
            st.lists(st.sampled_from([*ODD, "ghost"]), max_size=9),
        ),
        min_size=1,
        max_size=4,
    ),
    depth=st.integers(1, 6),
    judged=st.sets(st.tuples(st.sampled_from(["q1", "q2"]), st.sampled_from(ODD)), max_size=6),
    order=st.sampled_from(["depth", "disagreement"]),
)
def test_any_pool_is_the_brute_force_pool(
    rankings: list[dict[str, list[str]]],
    depth: int,
    judged: set[tuple[str, str]],
    order: str,
) -> None:
    qrels: dict[str, dict[str, int]] = {}
    for query, doc in judged:
        qrels.setdefault(query, {})[doc] = 1
    dataset = _dataset(qrels, unanswerable=["q3"])
    runs = [_run(index + 10, ranked) for index, ranked in enumerate(rankings)]
    pool = Pool(dataset, runs, depth, order)  # type: ignore[arg-type]
    keys = [entry.key for entry in pool.entries]
    assert len(keys) == len(set(keys))
    assert set(keys) == _brute_force(dataset, runs, depth)
    assert all(1 <= entry.rank <= depth and entry.weight >= 0 for entry in pool.entries)
    if order == "depth":
        assert [e.rank for e in pool.entries] == sorted(e.rank for e in pool.entries)
    else:
        weights = [e.weight for e in pool.entries]
        assert weights == sorted(weights, reverse=True)


def test_bad_depth_or_order_or_a_run_twice_is_refused() -> None:
    dataset = _dataset()
    run = _run(1, {"q1": ["3"]})
    with pytest.raises(ConfigError, match="at least 1"):
        Pool(dataset, [run], depth=0)
    with pytest.raises(ConfigError, match="depth, disagreement"):
        Pool(dataset, [run], order="best")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="twice"):
        Pool(dataset, [run, run])


# -- the queue it feeds, and its progress ---------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(f"sqlite:///{tmp_path / 'store.db'}") as opened:
        yield opened


def _manual(query: str, doc: str, grade: int, annotator: str = "alice") -> Judgment:
    return Judgment(query, doc, grade, "manual", datetime.now(UTC), annotator=annotator)


def test_the_queue_offers_the_unjudged_pooled_pairs_in_the_pools_order(store: Store) -> None:
    dataset = _dataset({"q1": {"mem 1": 3}})
    runs = [_run(1, {"q1": ["mem 1", "Ω", "3"]}), _run(2, {"q1": ["3"], "q2": ["<x>"]})]
    pool = Pool(dataset, runs, depth=3)
    store.log(judgments=[_manual("q2", "<x>", 1, "bob")])  # labelled before: not offered
    queue = Queue(store, None, sources=[pool])
    offered = []
    while True:
        pair, _, total = queue.pending("alice")
        if pair is None:
            break
        assert total == len(pool.entries)
        offered.append(pair.key)
        queue.grade("alice", *pair.key, grade=len(offered) % 4)
    assert offered == [("q1", "3"), ("q1", "Ω")]

    labelled = {(j.query_id, j.doc_id) for j in store.judgments(source="manual")}
    progress = pool.progress(labelled)
    assert (progress.pooled, progress.labelled, progress.queries) == (3, 3, 3)
    assert [(r.run_id, r.pooled, r.labelled) for r in progress.runs] == [(1, 2, 2), (2, 2, 2)]
    assert progress.runs[0].judged_at_depth == 1.0  # "mem 1" by the authors, the rest people's


def test_progress_per_run_and_per_depth(store: Store) -> None:
    dataset = _dataset({"q1": {"mem 1": 3}}, unanswerable=["q3"])
    runs = [
        _run(1, {"q1": ["mem 1", "Ω", "3"], "q2": ["<x>", "03"]}),
        _run(2, {"q1": ["3", "Ω"], "q2": ["Ω"], "q3": ["3"]}),
    ]
    pool = Pool(dataset, runs, depth=3)
    empty = pool.progress(set())
    assert (empty.pooled, empty.labelled, empty.queries) == (5, 0, 2)
    assert [(d.rank, d.pooled, d.labelled, d.queries_complete) for d in empty.depths] == [
        (1, 3, 0, 0),  # q1 "3", q2 "<x>", q2 "Ω"
        (2, 2, 0, 0),  # q1 "Ω", q2 "03"
        (3, 0, 0, 0),
    ]
    # run 1: 5 results (q1 3, q2 2), "mem 1" judged by the dataset
    assert [r.judged_at_depth for r in empty.runs] == [pytest.approx(1 / 5), 0.0]
    some = pool.progress({("q2", "<x>"), ("q2", "Ω"), ("q1", "3"), ("q3", "3")})
    assert [(d.rank, d.labelled, d.queries_complete) for d in some.depths] == [
        (1, 3, 2),  # both queries judged to depth 1
        (2, 0, 0),
        (3, 0, 0),
    ]
    assert some.labelled == 3  # ("q3", "3") is not in the pool: q3 is unanswerable
    assert [(r.pooled, r.labelled) for r in some.runs] == [(4, 2), (3, 2)]
    assert some.runs[1].judged_at_depth == pytest.approx(2 / 3)


# -- runs recorded by `recallbench run`, and serve --pool's refusals ------------------


def _record(tmp_path: Path, store_url: str, system: str, name: str, *more: str) -> Path:
    out = tmp_path / name
    result = CliRunner().invoke(
        main, ["run", "--system", system, "--store", store_url, "--out", str(out), *more]
    )
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store with run 1 (builtin-lexical) and 2 (builtin-hybrid) on the bundled dataset,
    3 (builtin-lexical) on a small dataset of its own, 4 whose folder was removed."""
    tmp_path = tmp_path_factory.mktemp("recorded")
    store_url = f"sqlite:///{tmp_path / 'store.db'}"
    _record(tmp_path, store_url, "builtin-lexical", "a")
    _record(tmp_path, store_url, "builtin-hybrid", "b")
    small = tmp_path / "small.json"
    small.write_text(_dataset({"q1": {"3": 1}}).model_dump_json(), encoding="utf-8")
    _record(tmp_path, store_url, "builtin-lexical", "c", "--dataset", str(small))
    shutil.rmtree(_record(tmp_path, store_url, "builtin-lexical", "d"))
    return tmp_path, store_url


def _serve(store_url: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        main, ["serve", "--store", store_url, "--port", "0", "--token", "t", *args]
    )
    return result.exit_code, result.output


def test_serve_pool_refuses_bad_runs_naming_each(recorded: tuple[Path, str]) -> None:
    _, store_url = recorded
    code, output = _serve(
        store_url,
        *["--dataset", DEFAULT_DATASET, "--pool", "1", "--pool", "99"],
        *["--pool", "3", "--pool", "4"],
    )
    assert code == 2, output
    assert "--pool 99: no run 99 in workspace 'default'" in output
    assert "--pool 3: run #3 was made on generated 1" in output
    assert f"not on --dataset {DEFAULT_DATASET}" in output
    assert "--pool 4: run #4 cannot be read: its output folder" in output and "is gone" in output
    assert "--pool 1" not in output  # the good run is not named
    assert "Traceback" not in output


def test_serve_pool_needs_the_dataset(recorded: tuple[Path, str]) -> None:
    code, output = _serve(recorded[1], "--pool", "1")
    assert code == 2
    assert "--pool 1: give --dataset, the dataset run #1 was made on (agent-memory-sample" in output


def test_serve_pool_options_are_checked(recorded: tuple[Path, str]) -> None:
    base = ["--dataset", DEFAULT_DATASET, "--pool"]
    for args, said in [
        ([*base, "one"], "'one' is not a valid integer"),
        ([*base, "1", "--pool-depth", "0"], "--pool-depth"),
        ([*base, "1", "--pool-order", "best"], "--pool-order"),
        (["--pool-depth", "5"], "--pool-depth and --pool-order apply with --pool RUN_ID only"),
        (["--pool-order", "depth"], "apply with --pool RUN_ID only"),
    ]:
        code, output = _serve(recorded[1], *args)
        assert code == 2 and said in output, output


def test_recorded_runs_are_read_from_their_folders(recorded: tuple[Path, str]) -> None:
    tmp_path, store_url = recorded
    dataset = load_dataset(DEFAULT_DATASET)
    with open_store(store_url) as store:
        lexical, hybrid = read_pooled_runs(store, [1, 2, 1], dataset)  # a repeat is one
    assert (lexical.run_id, lexical.system) == (1, "builtin-lexical")
    assert (hybrid.run_id, hybrid.system) == (2, "builtin-hybrid")
    run = Run.model_validate_json((tmp_path / "a" / "run.json").read_text(encoding="utf-8"))
    assert lexical.rankings == {r.query_id: tuple(h.doc_id for h in r.hits) for r in run.results}
    pool = Pool(dataset, [lexical, hybrid], depth=10)
    assert {(e.query_id, e.doc_id) for e in pool.entries} == _brute_force(
        dataset, [lexical, hybrid], 10
    )
    assert {run_id for entry in pool.entries for run_id in entry.ranks} == {1, 2}
    # a folder holding only report.json: its first 20 results
    report = Report.model_validate_json((tmp_path / "a" / "report.json").read_text("utf-8"))
    first = recorded_rankings(tmp_path / "a" / "report.json")
    assert first[report.queries[0].id] == tuple(report.queries[0].returned)
    assert first[report.queries[0].id] == lexical.rankings[report.queries[0].id][:20]


# -- /pool through Starlette's TestClient -----------------------------------------------


def _client(dashboard: Any) -> Any:
    from starlette.testclient import TestClient

    from recallbench.serve._auth import COOKIE

    opened = TestClient(dashboard.app, base_url="http://127.0.0.1:8770")
    opened.cookies.set(COOKIE, "t")
    return opened


def test_the_pool_page_shows_progress_and_says_when_there_is_no_pool(store: Store) -> None:
    from recallbench.serve import Dashboard

    dataset = _dataset({"q1": {"mem 1": 3}})
    pool = Pool(dataset, [_run(1, {"q1": ["mem 1", "<x>", "3"]}), _run(2, {"q2": ['a"b']})], 3)
    empty = _client(Dashboard(store, "t", annotator="alice")).get("/pool")
    assert empty.status_code == 200 and 'id="no-pool"' in empty.text

    dashboard = Dashboard(store, "t", annotator="alice", sources=[pool])  # the pool alone
    store.log(judgments=[_manual("q1", "<x>", 2)])
    page = _client(dashboard).get("/pool").text
    assert "1 of 3 pooled pairs" in page
    assert '<progress id="pool-progress" max="3" value="1">' in page
    assert re.search(r'data-run="1">.*?<td class="num">2</td><td class="num">1</td>', page, re.S)
    assert re.search(r'data-rank="2">.*?<td class="num">1</td><td class="num">1</td>', page, re.S)
    annotate = _client(dashboard).get("/annotate").text
    assert "from the pool of run #2 (rank 1)" in annotate  # the first unlabelled pair
    assert 'data-query="q2" data-doc="a&#34;b"' in annotate


def _benchmark() -> Any:
    """benchmarks/pool_order_validity.py as a module."""
    import importlib.util
    import sys

    folder = Path(__file__).resolve().parents[1] / "benchmarks"
    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location(
            "pool_order_validity", folder / "pool_order_validity.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
    return module


def test_both_orders_beat_random_labelling_and_disagreement_wins_on_overlapping_runs() -> None:
    """The validity benchmark, small: after labelling a quarter of the pool, the difference
    of two runs errs less in depth or disagreement order than in a random one; on two runs
    that share most of their ranking, disagreement errs less than depth."""
    import numpy as np

    benchmark = _benchmark()
    error: dict[tuple[str, str], float] = {}
    for scenario in benchmark.SCENARIOS:
        if scenario.name not in ("close", "overlap"):
            continue
        rng = np.random.default_rng(1)
        cells = [benchmark.replicate(rng, scenario) for _ in range(30)]
        for order in benchmark.ORDERS:
            error[(scenario.name, order)] = float(np.mean([c[(order, 0.25)][1] for c in cells]))
    for name in ("close", "overlap"):
        assert error[(name, "depth")] < error[(name, "random")], error
        assert error[(name, "disagreement")] < error[(name, "random")], error
    assert error[("overlap", "disagreement")] < 0.8 * error[("overlap", "depth")], error
