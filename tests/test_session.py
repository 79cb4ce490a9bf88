"""Session context: the built-in systems' expansion, pre-expansion results, and the lift
that `run --session-lift` measures."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.core import Dataset, Document, Hit, Query, QueryResult, Run, RunSpec
from recallbench.datasets import load_dataset
from recallbench.measures import parse_measures
from recallbench.render import render_markdown
from recallbench.render._session import session_summary
from recallbench.report import build_report, measure_session_lift
from recallbench.report._session import has_context
from recallbench.runner import run_dataset
from recallbench.systems._builtin import BuiltinSystem

# "connection pool size" alone matches both pools and ranks the shorter Redis document first;
# the session's first query ("ledger database") says which pool is meant.
DOCS = (
    Document(id="redis", text="Redis cache: connection pool of five."),
    Document(id="pg", text="Ledger database: PostgreSQL, connection pool of twenty."),
    Document(id="cat", text="Office cat named Pixel sleeps on the printer."),
)
QUERIES = (
    Query(id="q1", text="ledger database", session_id="s1"),
    Query(id="q2", text="connection pool size", session_id="s1"),
    Query(id="q3", text="connection pool size"),
    Query(id="q4", text="office cat", session_id="s2"),
)
DATASET = Dataset(
    name="sessions",
    documents=DOCS,
    queries=QUERIES,
    qrels={"q1": {"pg": 1}, "q2": {"pg": 1}, "q3": {"pg": 1}, "q4": {"cat": 1}},
)


def _ids(run: Run) -> dict[str, list[str]]:
    return {result.query_id: [hit.doc_id for hit in result.hits] for result in run.results}


def _run(system: Any, **options: Any) -> Run:
    return asyncio.run(run_dataset(DATASET, system, k=3, **options))


def test_the_first_query_of_the_session_resolves_the_second() -> None:
    with_context = _run(BuiltinSystem(channels=("lexical",)))
    alone = _run(BuiltinSystem(channels=("lexical",)), session_context=False)
    assert _ids(alone)["q2"] == ["redis", "pg"]  # ambiguous alone: the wrong pool first
    assert _ids(with_context)["q2"] == ["pg", "redis"]
    # queries without a session, and the first of a session, are untouched (scores too)
    for query_id in ("q1", "q3", "q4"):
        assert with_context.results[int(query_id[1]) - 1].hits == next(
            r.hits for r in alone.results if r.query_id == query_id
        )
    # the fused score: 0.75 / (60 + 2) + 0.25 / (60 + 1), pg being 2nd alone, 1st in history
    assert with_context.results[1].hits[0].score == pytest.approx(0.75 / 62 + 0.25 / 61)


@pytest.mark.parametrize("channels", [("dense",), ("lexical", "dense")])
def test_dense_and_hybrid_expand_the_same_way(channels: tuple[str, ...]) -> None:
    with_context = _run(BuiltinSystem(channels=channels, embedder="stub"))
    alone = _run(BuiltinSystem(channels=channels, embedder="stub"), session_context=False)
    assert (_ids(alone)["q2"][0], _ids(with_context)["q2"][0]) == ("redis", "pg")
    for query_id in ("q1", "q3", "q4"):
        assert _ids(with_context)[query_id] == _ids(alone)[query_id]


def test_pre_expansion_is_recorded_for_expanded_queries_only() -> None:
    run = _run(BuiltinSystem(channels=("lexical",)))
    by_id = {result.query_id: result for result in run.results}
    assert by_id["q2"].pre_expansion == ("redis", "pg")
    assert [r.query_id for r in run.results if r.pre_expansion is not None] == ["q2"]
    written = json.loads(run.model_dump_json())
    assert [r["query_id"] for r in written["results"] if "pre_expansion" in r] == ["q2"]
    assert Run.model_validate(written) == run
    alone = _run(BuiltinSystem(channels=("lexical",)), session_context=False)
    assert by_id["q2"].pre_expansion == tuple(_ids(alone)["q2"])


def test_setup_forgets_the_sessions_and_repeats_see_the_same_history() -> None:
    system = BuiltinSystem(channels=("lexical",))
    first, second = _run(system), _run(system)  # same object, set up again
    assert _ids(first) == _ids(second)
    assert second.results[1].pre_expansion == ("redis", "pg")
    repeated = _run(BuiltinSystem(channels=("lexical",)), repeat=3)
    assert repeated.repeats[1].rankings == (("pg", "redis"), ("pg", "redis"))


def test_settings_say_whether_session_context_is_used() -> None:
    assert "weight 0.25" in BuiltinSystem(channels=("lexical",)).settings()["session_context"]
    off = BuiltinSystem(channels=("lexical",), session_context=False)
    assert off.settings()["session_context"] is False
    assert off.accepts_session is False and BuiltinSystem.accepts_session is True
    assert _ids(_run(off)) == _ids(
        _run(BuiltinSystem(channels=("lexical",)), session_context=False)
    )


class Spy:
    """Records the queries it is asked."""

    name = "spy"

    def __init__(self) -> None:
        self.asked: list[Query] = []

    def settings(self) -> dict[str, Any]:
        return {}

    async def setup(self, documents: Sequence[Document]) -> None:
        pass

    async def search(self, query: Query, k: int) -> Sequence[Hit]:
        self.asked.append(query)
        return [Hit(doc_id="pg")]

    async def close(self) -> None:
        pass


def test_run_without_session_context_strips_the_sessions() -> None:
    spy = Spy()
    run = _run(spy, session_context=False)
    assert [q.session_id for q in spy.asked] == [None] * 4
    assert [q.model_copy(update={"session_id": None}) for q in QUERIES] == spy.asked
    assert DATASET.queries[0].session_id == "s1"  # the dataset is not changed
    assert all(result.pre_expansion is None for result in run.results)
    spy = Spy()
    _run(spy)
    assert [q.session_id for q in spy.asked] == ["s1", "s1", None, "s2"]


def test_the_bundled_dataset_is_unchanged_where_no_context_exists() -> None:
    """The default `recallbench run` (hybrid, wordllama): queries without a session, and the
    first of each session, get exactly the results they got before session context existed
    (the same system with the option off); expanded queries record those results too."""
    dataset = load_dataset()
    k = 100
    with_context = asyncio.run(run_dataset(dataset, BuiltinSystem(), k))
    before = asyncio.run(run_dataset(dataset, BuiltinSystem(session_context=False), k))
    context = dict(zip((q.id for q in dataset.queries), has_context(dataset.queries), strict=True))
    expanded = 0
    for new, old in zip(with_context.results, before.results, strict=True):
        if context[new.query_id]:
            expanded += 1
            assert new.pre_expansion == tuple(hit.doc_id for hit in old.hits)
        else:
            assert new.pre_expansion is None
            assert new.hits == old.hits
    assert expanded == sum(context.values())


def _result(query_id: str, *docs: str) -> QueryResult:
    return QueryResult(query_id=query_id, hits=tuple(Hit(doc_id=d) for d in docs))


LIFT_DATASET = Dataset(
    name="lift",
    documents=tuple(Document(id=d, text=d) for d in ("r", "x", "y")),
    queries=(
        Query(id="a1", text="a1", session_id="A"),
        Query(id="a2", text="a2", session_id="A"),
        Query(id="n1", text="n1", session_id="A"),  # no relevant document: not in the means
        Query(id="a3", text="a3", session_id="A"),
        Query(id="b1", text="b1", session_id="B"),
        Query(id="b2", text="b2", session_id="B"),
        Query(id="c", text="c"),
    ),
    qrels={q: {"r": 1} for q in ("a1", "a2", "a3", "b1", "b2", "c")} | {"n1": {"x": 0}},
)
# reciprocal ranks with / without context:
# a1 1 / 1, a2 1 / 0.5, a3 1/3 / 1, b1 0.5 / 1, b2 1 / 1, c 1 / 1
WITH = Run(
    spec=RunSpec(system="s"),
    results=(
        _result("a1", "r"),
        _result("a2", "r", "x"),
        _result("n1", "x"),
        _result("a3", "x", "y", "r"),
        _result("b1", "x", "r"),
        _result("b2", "r"),
        _result("c", "r"),
    ),
)
WITHOUT = Run(
    spec=RunSpec(system="s"),
    results=(
        _result("a1", "r"),
        _result("a2", "x", "r"),
        _result("n1", "x"),
        _result("a3", "r"),
        _result("b1", "r"),
        _result("b2", "r"),
        _result("c", "r"),
    ),
)


def test_the_lift_by_hand() -> None:
    lift = measure_session_lift(LIFT_DATASET, WITH, WITHOUT)
    assert lift.measure == "mrr@10"
    # paired: a2 (+0.5), a3 (-2/3), b2 (0); a1 and b1 open their session, n1 has no relevant
    assert (lift.n, lift.n_all) == (3, 6)
    assert lift.mean_with == pytest.approx((1 + 1 / 3 + 1) / 3)
    assert lift.mean_without == pytest.approx((0.5 + 1 + 1) / 3)
    assert lift.delta == pytest.approx((0.5 - 2 / 3 + 0) / 3)  # -1/18
    assert lift.delta_all == pytest.approx((0.5 - 2 / 3 - 0.5) / 6)  # b1 counts here: -1/9
    assert (lift.wins, lift.ties, lift.losses) == (1, 1, 1)
    assert lift.p == pytest.approx(1.0)  # exact: every sign flip is at least as far from 0
    assert lift.ci_low is not None and lift.ci_high is not None
    assert lift.ci_low <= lift.delta <= lift.ci_high
    assert "randomisation" in lift.method
    assert "n = 3 of 6" in session_summary(lift)
    report = build_report(LIFT_DATASET, WITH, parse_measures(["mrr@10"]))
    section = render_markdown(report.model_copy(update={"session_lift": lift}))
    assert "## Session personalisation" in section
    assert "- lift: -0.0556" in section
    assert "- wins / ties / losses: 1 / 1 / 1" in section


def test_a_lift_without_warm_queries_is_empty_not_nan() -> None:
    lift = measure_session_lift(DATASET, WITHOUT, WITHOUT, "recall@10")
    assert (lift.n, lift.measure) == (1, "recall@10")  # q2 only
    only_first = DATASET.model_copy(update={"queries": QUERIES[:1] + QUERIES[2:]})
    empty = measure_session_lift(only_first, WITHOUT, WITHOUT)
    assert (empty.n, empty.delta, empty.mean_with, empty.p) == (0, None, None, None)


def test_context_needs_an_earlier_query_of_the_session_in_the_same_unit() -> None:
    queries = [
        Query(id="1", text="t", session_id="S", unit="u1"),
        Query(id="2", text="t", session_id="S", unit="u1"),
        Query(id="3", text="t", session_id="S", unit="u2"),
        Query(id="4", text="t"),
        Query(id="5", text="t", session_id="S", unit="u2"),
    ]
    assert has_context(queries) == [False, True, False, False, True]


def test_cli_session_lift_on_a_small_dataset(tmp_path: Path) -> None:
    path = tmp_path / "sessions.json"
    path.write_text(DATASET.model_dump_json())
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--dataset",
            str(path),
            "--system",
            "builtin-lexical",
            "--session-lift",
            "--out",
            str(tmp_path / "out"),
        ],
    )
    assert result.exit_code == 0, result.output
    lift = json.loads((tmp_path / "out" / "report.json").read_text())["session_lift"]
    # q2: reciprocal rank 1 with the session, 1/2 alone
    assert lift["n"] == 1 and lift["n_all"] == 4
    assert lift["delta"] == pytest.approx(0.5)
    assert (lift["wins"], lift["ties"], lift["losses"]) == (1, 0, 0)
    assert "session lift (mrr@10, n = 1 of 4" in " ".join(result.output.split())
    assert "## Session personalisation" in (tmp_path / "out" / "report.md").read_text()


def test_cli_session_lift_on_the_bundled_dataset(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--system",
            "builtin-lexical",
            "--session-lift",
            "--session-lift-measure",
            "ndcg@10",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["session_lift"]["measure"] == "ndcg@10"
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["spec"]["settings"]["session_context"]


def test_cli_a_system_without_sessions_gets_no_lift(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--system",
            "python:example_retrievers:Overlap",
            "--session-lift",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    assert (
        "python:example_retrievers:Overlap does not accept a session: no lift measured"
        in " ".join(result.output.split())
    )
    assert json.loads((tmp_path / "report.json").read_text())["session_lift"] is None
    assert "Session personalisation" not in (tmp_path / "report.md").read_text()


def test_cli_rejects_an_unknown_lift_measure(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["run", "--session-lift", "--session-lift-measure", "nope@3", "--out", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "nope" in result.output
