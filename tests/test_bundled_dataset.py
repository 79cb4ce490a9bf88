"""The bundled `agent-memory-sample` meets what it promises (see its datacard)."""

from __future__ import annotations

import asyncio
from collections import Counter

from recallbench.core import TIERS
from recallbench.datasets import bundled_path, load_dataset
from recallbench.datasets._default_measures import DEFAULT_MEASURES_KEY
from recallbench.measures import parse_measures
from recallbench.report import build_report
from recallbench.runner import run_dataset
from recallbench.systems import create_system

CATEGORIES = {
    "trigger-match",
    "semantic",
    "causal",
    "cross-folder",
    "intent-specific",
    "cold-start",
    "multi-concept",
    "edge-case",
}
TYPES = {"decision", "meeting-note", "email", "chat", "code-review", "incident", "preference"}


def test_documents_carry_the_metadata() -> None:
    dataset = load_dataset("agent-memory-sample")
    assert len(dataset.documents) >= 80
    for document in dataset.documents:
        assert {"tier", "folder", "created_at", "session_id", "type"} <= set(document.metadata)
    assert set(Counter(d.metadata["tier"] for d in dataset.documents)) == set(TIERS)
    assert {d.metadata["type"] for d in dataset.documents} >= TYPES
    assert len({d.metadata["folder"] for d in dataset.documents}) >= 8


def test_queries_cover_every_category_with_graded_judgments() -> None:
    dataset = load_dataset("agent-memory-sample")
    assert len(dataset.queries) >= 100
    per_category = Counter(q.category for q in dataset.queries)
    assert set(per_category) == CATEGORIES
    assert min(per_category.values()) >= 10
    grades = Counter(g for judged in dataset.qrels.values() for g in judged.values())
    assert set(grades) == {0, 1, 2, 3}
    several = sum(1 for q in dataset.queries if len(dataset.relevant(q.id)) >= 2)
    assert several >= len(dataset.queries) // 2
    abstention = [q for q in dataset.queries if not dataset.relevant(q.id)]
    assert len(abstention) >= 5
    assert all("abstention" in q.tags for q in abstention)


def test_lexical_search_misses_a_fair_share() -> None:
    """The builtin bm25 system does well on trigger phrases and badly on paraphrases."""
    dataset = load_dataset("agent-memory-sample")
    run = asyncio.run(run_dataset(dataset, create_system("builtin-lexical"), k=10))
    report = build_report(dataset, run, parse_measures(["mrr@10"]))
    by_category = {g.name: g.means["mrr@10"] for g in report.breakdowns["category"]}
    overall = report.means["mrr@10"]
    assert overall is not None and overall < 0.75
    assert by_category["trigger-match"] is not None and by_category["trigger-match"] > 0.75
    assert by_category["semantic"] is not None and by_category["semantic"] < 0.3


def test_the_dense_channel_finds_paraphrases_lexical_search_misses() -> None:
    """Measured, not assumed: on the semantic category (no shared words with the answer)
    wordllama's dense channel beats bm25, and the hybrid beats lexical overall."""
    dataset = load_dataset("agent-memory-sample")
    scores = {}
    for name in ("builtin-lexical", "builtin-dense", "builtin-hybrid"):
        run = asyncio.run(run_dataset(dataset, create_system(name), k=10))
        report = build_report(dataset, run, parse_measures(["mrr@10"]))
        semantic = next(g for g in report.breakdowns["category"] if g.name == "semantic")
        scores[name] = (report.means["mrr@10"], semantic.means["mrr@10"])
    assert scores["builtin-dense"][1] > scores["builtin-lexical"][1] + 0.1
    assert scores["builtin-hybrid"][0] > scores["builtin-lexical"][0]


def test_default_measures_rank_first_then_the_agent_memory_ones() -> None:
    """`recallbench run` on the sample shows its agent-memory measures without -m."""
    dataset = load_dataset("agent-memory-sample")
    named = dataset.metadata[DEFAULT_MEASURES_KEY]
    assert isinstance(named, list)
    measures = parse_measures([str(name) for name in named])
    assert not getattr(measures[0], "needs_context", False)  # a ranking measure ranks
    families = {str(m).partition("@")[0] for m in measures}
    assert {"must_surface", "chain_completeness", "cold_start_ratio"} <= families


def test_the_datacard_states_the_dataset_version() -> None:
    dataset = load_dataset("agent-memory-sample")
    card = bundled_path("agent-memory-sample").with_suffix(".md").read_text()
    assert f"version {dataset.version})." in card.splitlines()[2]
