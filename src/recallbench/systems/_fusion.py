"""Reciprocal rank fusion of several channels' rankings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

RRF_K = 60
"""The constant of Cormack, Clarke and Büttcher (SIGIR 2009)."""


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[str]], k: int = RRF_K
) -> list[tuple[str, float, tuple[str, ...]]]:
    """Fuse ``channel -> ranked ids`` into ``(id, score, channels that found it)``, best first.

    ``score(d) = sum over channels c that returned d of 1 / (k + rank_c(d))`` with 1-based
    ranks (Cormack, Clarke and Büttcher, "Reciprocal rank fusion outperforms Condorcet and
    individual rank learning methods", SIGIR 2009). Ties keep the order in which documents
    were first seen, channel by channel, so the result is deterministic.
    """
    scores: dict[str, float] = {}
    found_by: dict[str, list[str]] = {}
    for channel, ranking in rankings.items():
        for rank, doc in enumerate(ranking, start=1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + rank)
            found_by.setdefault(doc, []).append(channel)
    order = sorted(scores, key=lambda doc: -scores[doc])  # stable: first seen wins ties
    return [(doc, scores[doc], tuple(found_by[doc])) for doc in order]
