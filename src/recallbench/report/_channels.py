"""Channel analysis: which retrieval channels of a hybrid system produced the top results,
how fusion reordered them, and what query expansion changed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from recallbench.core import Dataset, Hit, QueryResult, Run
from recallbench.core._model import Record
from recallbench.measures import Recall, ReciprocalRank, Rules, evaluate

CUTOFF = 10
"""The default k of the analysis."""


class ChannelStats(Record):
    """One channel over the top k of every analysed query.

    With N the top-k results of all analysed queries and R those judged relevant: a result
    found by several channels counts for each of them, so rates of the channels can sum
    above 1; a result without channels counts in N and R for none.
    """

    name: str
    results: int
    """n_c: top-k results this channel produced."""
    contribution_rate: float
    """n_c / N."""
    relevant_contribution_rate: float | None
    """r_c / R, r_c the relevant top-k results this channel produced; null when R = 0."""
    unique_rate: float
    """u_c / N, u_c the top-k results only this channel found."""
    unique_relevant_rate: float | None
    """ur_c / R, ur_c the relevant top-k results only this channel found; null when R = 0."""
    reorder_rate: float | None
    """Over the m_c top-k results of this channel that carry its own rank (``channel_ranks``):
    the share whose fused rank (1-based position in the returned list) differs from the
    channel's rank; null when m_c = 0."""
    mean_rank_change: float | None
    """Mean of |fused rank - channel rank| over the same m_c results; null when m_c = 0."""


class ExpansionImpact(Record):
    """What query expansion changed, over the analysed queries whose result carries the
    ranking the system had before expanding the query (``pre_expansion``)."""

    queries: int
    """E: queries expanded."""
    jaccard: float
    """Mean over the E queries of |A ∩ B| / |A ∪ B|, A and B the sets of the top k before
    and after expansion (1 when both are empty)."""
    top1_changed_rate: float
    """Share of the E queries whose first result changed (a result appearing or vanishing
    counts as a change)."""
    judged: int
    """Expanded queries with a relevant document: those the two changes average over."""
    recall_change: float | None
    """Mean of recall@k(after) - recall@k(before); null when no expanded query is judged."""
    reciprocal_rank_change: float | None
    """Mean of RR@k(after) - RR@k(before), RR@k = 1 / rank of the first relevant document
    in the top k (0 if none); null when no expanded query is judged."""


class ChannelAnalysis(Record):
    """Which channels produced the top k, over the queries the run answered without error.

    Duplicates follow the metric rules: a document returned twice counts once, at its
    first rank.
    """

    k: int
    queries: int
    """Queries analysed: those of the dataset the run answered without error."""
    results: int
    """N: top-k results of the analysed queries."""
    relevant_results: int
    """R: those of the N results whose grade reaches the relevance threshold."""
    channels: list[ChannelStats]
    """In the order the channels first appear in the run."""
    expansion: ExpansionImpact | None = None
    """Null when no analysed query carries its results before expansion."""


@dataclass
class _Tally:
    results: int = 0
    relevant: int = 0
    unique: int = 0
    unique_relevant: int = 0
    ranked: int = 0
    moved: int = 0
    change: int = 0

    def add(self, hit: Hit, position: int, relevant: bool, name: str) -> None:
        self.results += 1
        self.relevant += relevant
        if len(set(hit.channels)) == 1:
            self.unique += 1
            self.unique_relevant += relevant
        rank = hit.channel_ranks.get(name)
        if rank is not None:
            self.ranked += 1
            self.moved += rank != position
            self.change += abs(rank - position)

    def stats(self, name: str, total: int, total_relevant: int) -> ChannelStats:
        return ChannelStats(
            name=name,
            results=self.results,
            contribution_rate=_share(self.results, total) or 0.0,
            relevant_contribution_rate=_share(self.relevant, total_relevant),
            unique_rate=_share(self.unique, total) or 0.0,
            unique_relevant_rate=_share(self.unique_relevant, total_relevant),
            reorder_rate=_share(self.moved, self.ranked),
            mean_rank_change=_share(self.change, self.ranked),
        )


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def top_hits(hits: Sequence[Hit], k: int) -> list[tuple[int, Hit]]:
    """The first k hits with their 1-based positions; a repeated document only once."""
    seen: set[str] = set()
    top = []
    for position, hit in enumerate(hits[:k], start=1):
        if hit.doc_id not in seen:
            seen.add(hit.doc_id)
            top.append((position, hit))
    return top


def channel_analysis(
    dataset: Dataset, run: Run, k: int = CUTOFF, relevance_threshold: int | None = None
) -> ChannelAnalysis | None:
    """The channel analysis of ``run`` at cutoff ``k``; None when no hit carries a channel
    or only one channel appears in the whole run.

    Relevance is ``grade >= relevance_threshold`` (the dataset's threshold by default).
    """
    threshold = dataset.relevance_threshold if relevance_threshold is None else relevance_threshold
    asked = {query.id for query in dataset.queries}
    results = [r for r in run.results if r.query_id in asked and not r.failed]
    names = list(dict.fromkeys(c for r in results for hit in r.hits for c in hit.channels))
    if len(names) < 2:
        return None
    tallies = {name: _Tally() for name in names}
    total = total_relevant = 0
    for result in results:
        judged = dataset.qrels.get(result.query_id, {})
        for position, hit in top_hits(result.hits, k):
            relevant = hit.doc_id in judged and judged[hit.doc_id] >= threshold
            total += 1
            total_relevant += relevant
            for name in dict.fromkeys(hit.channels):
                tallies[name].add(hit, position, relevant, name)
    return ChannelAnalysis(
        k=k,
        queries=len(results),
        results=total,
        relevant_results=total_relevant,
        channels=[tallies[name].stats(name, total, total_relevant) for name in names],
        expansion=expansion_impact(dataset.qrels, results, k, threshold),
    )


def expansion_impact(
    qrels: Mapping[str, Mapping[str, int]],
    results: Iterable[QueryResult],
    k: int,
    relevance_threshold: int,
) -> ExpansionImpact | None:
    """Compare each expanded query's top k before and after expansion; None when no result
    carries ``pre_expansion``."""
    before: dict[str, list[str]] = {}
    after: dict[str, list[str]] = {}
    for result in results:
        pre = getattr(result, "pre_expansion", None)
        if pre is not None:
            before[result.query_id] = list(pre)
            after[result.query_id] = [hit.doc_id for hit in result.hits]
    if not before:
        return None
    overlaps, changed = [], 0
    for query_id, pre in before.items():
        old, new = _top_ids(pre, k), _top_ids(after[query_id], k)
        union = set(old) | set(new)
        overlaps.append(len(set(old) & set(new)) / len(union) if union else 1.0)
        changed += old[:1] != new[:1]
    measures = [Recall(cutoff=k), ReciprocalRank(cutoff=k)]
    rules = Rules(relevance_threshold=relevance_threshold)
    ids = list(before)
    pre_eval = evaluate(qrels, before, measures, rules, ids)
    post_eval = evaluate(qrels, after, measures, rules, ids)
    judged = ~post_eval.no_relevant

    def change(measure: str) -> float | None:
        if not judged.any():
            return None
        delta = post_eval.values[measure][judged] - pre_eval.values[measure][judged]
        return float(np.mean(delta))

    return ExpansionImpact(
        queries=len(before),
        jaccard=float(np.mean(overlaps)),
        top1_changed_rate=changed / len(before),
        judged=int(judged.sum()),
        recall_change=change(str(measures[0])),
        reciprocal_rank_change=change(str(measures[1])),
    )


def _top_ids(ids: Sequence[str], k: int) -> list[str]:
    return list(dict.fromkeys(ids[:k]))
