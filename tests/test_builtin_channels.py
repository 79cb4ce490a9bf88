"""Reciprocal rank fusion, the embedders and the built-in variants."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from recallbench.core import Document, Query, UnknownNameError
from recallbench.systems import create_system, system_names
from recallbench.systems._builtin import BuiltinSystem
from recallbench.systems._embedders import StubEmbedder, WordLlamaEmbedder
from recallbench.systems._fusion import reciprocal_rank_fusion


def test_rrf_by_hand() -> None:
    fused = reciprocal_rank_fusion({"lexical": ["a", "b"], "dense": ["b", "c"]}, k=60)
    assert [doc for doc, _, _ in fused] == ["b", "a", "c"]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[0][2] == ("lexical", "dense")
    assert fused[1] == ("a", pytest.approx(1 / 61), ("lexical",))
    # equal scores keep first-seen order: deterministic
    tied = reciprocal_rank_fusion({"x": ["p"], "y": ["q"]})
    assert [doc for doc, _, _ in tied] == ["p", "q"]


@pytest.mark.parametrize("embedder", [StubEmbedder(), WordLlamaEmbedder()], ids=lambda e: e.name)
def test_embedders_give_unit_rows_deterministically(embedder: StubEmbedder) -> None:
    texts = ["the ledger database", "", "Kaffee ☕ und Kuchen"]
    first, second = embedder.embed(texts), embedder.embed(texts)
    assert first.shape[0] == 3 and np.array_equal(first, second)
    norms = np.linalg.norm(first, axis=1)
    assert norms[0] == pytest.approx(1.0, abs=1e-5)
    assert norms[2] == pytest.approx(1.0, abs=1e-5)


DOCS = (
    Document(id="pg", text="We migrated the ledger from MySQL to PostgreSQL for row locking."),
    Document(id="fri", text="No database migrations on Fridays."),
    Document(id="cat", text="The office cat is called Pixel."),
)


def search(system: BuiltinSystem, text: str, k: int = 3) -> list[tuple[str, tuple[str, ...]]]:
    async def scenario() -> list[tuple[str, tuple[str, ...]]]:
        await system.setup(DOCS)
        try:
            return [
                (h.doc_id, h.channels) for h in await system.search(Query(id="q", text=text), k)
            ]
        finally:
            await system.close()

    return asyncio.run(scenario())


def test_hybrid_hits_carry_the_channels_that_found_them() -> None:
    hits = search(BuiltinSystem(embedder="stub"), "ledger migrated PostgreSQL")
    assert hits[0] == ("pg", ("lexical", "dense"))
    assert {channel for _, channels in hits for channel in channels} <= {"lexical", "dense"}
    assert len(search(BuiltinSystem(embedder="stub"), "ledger", k=1)) == 1


def test_variants_are_registered() -> None:
    assert {"builtin", "builtin-lexical", "builtin-dense", "builtin-hybrid"} <= set(system_names())
    assert create_system("builtin").settings()["channels"] == ["lexical", "dense"]
    assert create_system("builtin-dense", embedder="stub").settings()["embedder"] == "stub"
    with pytest.raises(UnknownNameError, match="unknown channels"):
        BuiltinSystem(channels=("graph",))
    with pytest.raises(UnknownNameError, match="unknown embedder"):
        BuiltinSystem(embedder="bert")
