"""Channel analysis: hand-computed shares on tiny runs, the builtin's channel ranks, the CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from recallbench.cli import main
from recallbench.core import Dataset, Document, Hit, Query, QueryResult, Run, RunSpec
from recallbench.datasets import load_dataset
from recallbench.measures import parse_measures
from recallbench.render import render_markdown, render_terminal
from recallbench.report import build_report, channel_analysis
from recallbench.report._channels import ChannelStats
from recallbench.systems._builtin import POOL, BuiltinSystem

DATASET = Dataset(
    name="tiny",
    documents=tuple(Document(id=doc, text=f"memory {doc}") for doc in "abcdex"),
    queries=(
        Query(id="q1", text="one"),
        Query(id="q2", text="two"),
        Query(id="q3", text="three"),
    ),
    qrels={"q1": {"a": 2, "c": 1}, "q2": {"e": 1, "d": 0}, "q3": {"a": 1}},
)


def hit(doc: str, *channels: str, **ranks: int) -> Hit:
    return Hit(doc_id=doc, channels=channels, channel_ranks=ranks)


def make_run(*results: QueryResult) -> Run:
    return Run(spec=RunSpec(system="hand"), results=results)


# q1: a (both), b (dense only), c (lexical only); d lies beyond k = 3.
# q2: e (lexical only), e again (a duplicate: skipped), d (both, graded 0: not relevant).
# q3 failed: left out.
Q1 = QueryResult(
    query_id="q1",
    hits=(
        hit("a", "lexical", "dense", lexical=1, dense=2),
        hit("b", "dense", dense=1),
        hit("c", "lexical", lexical=3),
        hit("d", "lexical", lexical=2),
    ),
)
Q2 = QueryResult(
    query_id="q2",
    hits=(
        hit("e", "lexical", lexical=2),
        hit("e", "lexical", lexical=2),
        hit("d", "lexical", "dense", lexical=1, dense=1),
    ),
)
Q3 = QueryResult(query_id="q3", error="timeout")
RUN = make_run(Q1, Q2, Q3)


def test_shares_and_reordering_by_hand() -> None:
    analysis = channel_analysis(DATASET, RUN, k=3)
    assert analysis is not None
    # top 3: q1 a b c, q2 e d (the second e is a duplicate): N = 5; relevant a c e: R = 3
    assert (analysis.k, analysis.queries, analysis.results, analysis.relevant_results) == (
        3,
        2,
        5,
        3,
    )
    lexical, dense = analysis.channels
    assert lexical == ChannelStats(
        name="lexical",
        results=4,  # a c e d
        contribution_rate=4 / 5,
        relevant_contribution_rate=3 / 3,  # a c e
        unique_rate=2 / 5,  # c e
        unique_relevant_rate=2 / 3,
        reorder_rate=2 / 4,  # a 1->1, c 3->3, e 2->1, d 1->3
        mean_rank_change=(0 + 0 + 1 + 2) / 4,
    )
    assert dense == ChannelStats(
        name="dense",
        results=3,  # a b d
        contribution_rate=3 / 5,
        relevant_contribution_rate=1 / 3,  # a
        unique_rate=1 / 5,  # b
        unique_relevant_rate=0.0,
        reorder_rate=3 / 3,  # a 2->1, b 1->2, d 1->3
        mean_rank_change=(1 + 1 + 2) / 3,
    )
    assert analysis.expansion is None


def test_without_channel_ranks_reordering_is_unknown() -> None:
    run = make_run(
        QueryResult(query_id="q1", hits=(hit("a", "lexical", "graph"), hit("b"), hit("c", "graph")))
    )
    analysis = channel_analysis(DATASET, run, k=10)
    assert analysis is not None
    lexical, graph = analysis.channels
    assert (lexical.reorder_rate, lexical.mean_rank_change) == (None, None)
    # the untagged b counts in N = 3 for no channel
    assert (graph.results, graph.contribution_rate, graph.unique_rate) == (2, 2 / 3, 1 / 3)
    assert (graph.relevant_contribution_rate, graph.unique_relevant_rate) == (1.0, 1 / 2)


def test_no_relevant_result_gives_null_relevant_rates() -> None:
    run = make_run(QueryResult(query_id="q1", hits=(hit("b", "lexical"), hit("x", "dense"))))
    analysis = channel_analysis(DATASET, run)
    assert analysis is not None and analysis.relevant_results == 0
    for channel in analysis.channels:
        assert channel.relevant_contribution_rate is None
        assert channel.unique_relevant_rate is None
        assert channel.unique_rate == 1 / 2


@pytest.mark.parametrize(
    "results",
    [
        (QueryResult(query_id="q1", hits=(Hit(doc_id="a"), Hit(doc_id="b"))),),
        (QueryResult(query_id="q1", hits=(hit("a", "mcp"), hit("b", "mcp"))),),
        (Q3,),
        # the second channel only appears in a failed query or one outside the dataset
        (
            QueryResult(query_id="q1", hits=(hit("a", "lexical"),)),
            QueryResult(query_id="zz", hits=(hit("a", "dense"),)),
        ),
    ],
    ids=["untagged", "one-channel", "failed-only", "second-outside"],
)
def test_no_analysis_without_two_channels(results: tuple[QueryResult, ...]) -> None:
    assert channel_analysis(DATASET, make_run(*results)) is None


def test_run_files_keep_their_shape_without_channel_ranks() -> None:
    assert "channel_ranks" not in Hit(doc_id="a", channels=("x",)).model_dump(mode="json")
    tagged = Hit(doc_id="a", channels=("x",), channel_ranks={"x": 4})
    assert tagged.model_dump(mode="json")["channel_ranks"] == {"x": 4}
    assert Hit.model_validate({"doc_id": "a", "channels": ["x"]}).channel_ranks == {}


def _expansion_run() -> Run:
    # q1 before: b x a; after: a b c.  q2 before: e d; after: e (e) d.
    return make_run(
        Q1.model_copy(update={"pre_expansion": ("b", "x", "a")}),
        Q2.model_copy(update={"pre_expansion": ("e", "d")}),
        Q3,
    )


def test_expansion_impact_by_hand() -> None:
    analysis = channel_analysis(DATASET, _expansion_run(), k=3)
    assert analysis is not None and analysis.expansion is not None
    impact = analysis.expansion
    assert (impact.queries, impact.judged) == (2, 2)
    assert impact.jaccard == pytest.approx((2 / 4 + 2 / 2) / 2)
    assert impact.top1_changed_rate == 1 / 2  # q1: b -> a
    # recall@3 of q1 (relevant a c): 1/2 -> 1; q2: 1 -> 1
    assert impact.recall_change == pytest.approx((1 / 2 + 0) / 2)
    # RR@3 of q1: 1/3 -> 1; q2: 1 -> 1
    assert impact.reciprocal_rank_change == pytest.approx((2 / 3 + 0) / 2)


def test_expansion_without_judged_queries_has_no_changes() -> None:
    run = make_run(
        QueryResult(query_id="q1", hits=(hit("x", "lexical"), hit("b", "dense")), pre_expansion=())
    )
    analysis = channel_analysis(DATASET.model_copy(update={"qrels": {}}), run)
    assert analysis is not None and analysis.expansion is not None
    impact = analysis.expansion
    assert (impact.queries, impact.judged, impact.jaccard, impact.top1_changed_rate) == (
        1,
        0,
        0.0,
        1.0,
    )
    assert impact.recall_change is None and impact.reciprocal_rank_change is None


def test_report_renders_the_channels() -> None:
    report = build_report(DATASET, _expansion_run(), parse_measures(["recall@3"]))
    assert report.channels == channel_analysis(DATASET, _expansion_run())
    markdown = render_markdown(report)
    assert "## Channels" in markdown
    assert "| channel | results | contribution | relevant contribution | unique |" in markdown
    # at k = 10 the report also takes q1's d (lexical rank 2, fused rank 4)
    assert "| lexical | 5 | 83.3% | 100.0% | 50.0% | 66.7% | 60.0% | 1.00 |" in markdown
    assert "Query expansion: 2 of 2 queries expanded" in markdown
    console = Console(record=True, width=100)
    render_terminal(report, console)
    printed = console.export_text()
    assert "channels (top 10, 6 results)" in printed
    assert "query expansion: 2 queries" in printed
    plain = build_report(DATASET, make_run(Q3), parse_measures(["recall@3"]))
    assert plain.channels is None and "## Channels" not in render_markdown(plain)


def _search(
    system: BuiltinSystem, documents: tuple[Document, ...], queries: list[Query], k: int
) -> list[list[Hit]]:
    async def scenario() -> list[list[Hit]]:
        await system.setup(documents)
        try:
            return [list(await system.search(query, k)) for query in queries]
        finally:
            await system.close()

    return asyncio.run(scenario())


def test_builtin_hybrid_channel_ranks_match_the_single_channels() -> None:
    dataset = load_dataset("agent-memory-sample")
    queries = list(dataset.queries[:: len(dataset.queries) // 6])
    hybrid = _search(BuiltinSystem(), dataset.documents, queries, 20)
    alone = {
        name: _search(BuiltinSystem(channels=(name,)), dataset.documents, queries, POOL)
        for name in ("lexical", "dense")
    }
    checked = 0
    for index, hits in enumerate(hybrid):
        own = {
            name: {h.doc_id: rank for rank, h in enumerate(found[index], start=1)}
            for name, found in alone.items()
        }
        for h in hits:
            assert set(h.channel_ranks) == set(h.channels)
            for name, ranks in own.items():
                assert h.channel_ranks.get(name) == ranks.get(h.doc_id)
                checked += name in h.channel_ranks
    assert checked > 2 * len(queries)
    for name, found in alone.items():  # a single channel's rank is its position
        for hits in found:
            assert [h.channel_ranks for h in hits] == [
                {name: rank} for rank in range(1, len(hits) + 1)
            ]


def test_cli_run_of_the_hybrid_reports_its_channels(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["run", "--system", "builtin-hybrid", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "channels (top 10" in result.output
    report = json.loads((tmp_path / "report.json").read_text())
    channels = report["channels"]
    assert channels["k"] == 10 and channels["queries"] == len(report["queries"])
    by_name = {channel["name"]: channel for channel in channels["channels"]}
    assert set(by_name) == {"lexical", "dense"}
    for channel in by_name.values():
        for rate in (
            "contribution_rate",
            "relevant_contribution_rate",
            "unique_rate",
            "unique_relevant_rate",
            "reorder_rate",
        ):
            assert 0 <= channel[rate] <= 1, rate
        assert channel["mean_rank_change"] >= 0
    shares = [by_name[name]["contribution_rate"] for name in by_name]
    assert sum(shares) >= 1  # every top-10 result was found by at least one channel
    assert "## Channels" in (tmp_path / "report.md").read_text()
    run = json.loads((tmp_path / "run.json").read_text())
    first = run["results"][0]["hits"][0]
    assert set(first["channel_ranks"]) == set(first["channels"])
