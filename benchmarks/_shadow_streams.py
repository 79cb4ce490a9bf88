"""Null streams of shadow pairs for benchmarks/shadow_validity.py and its fast test: rows
as :meth:`recallbench.store.Store.shadow_runs` gives them, the agent's feedback and labels,
built the ways real agent traffic is (repeated texts, sessions, one list shown, lists of
unequal length), and the guardrail measures of equal sides. Each function's docstring says
what it simulates; the benchmark's docstring says why."""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from interleaving_bias import padded
from numpy.typing import NDArray

from recallbench.core._query_key import query_key
from recallbench.online._shadow_rule import DEFAULT_GUARDRAILS
from recallbench.online._shadow_score import PairScore
from recallbench.stats._bounded_cs import BoundedCsSettings, bounded_cs_path
from recallbench.stats._interleaving import Interleaving, team_draft, team_draft_common_depth
from recallbench.store import FeedbackEvent, Judgment

FloatArray = NDArray[np.float64]
Flags = NDArray[np.bool_]
Rows = list[dict[str, Any]]

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DOCS = [f"d{i}" for i in range(10)]
SPELLINGS = ("Notes on {}", "notes on {}?", "NOTES ON {}!", "  notes   on {} ", "Notes On {}.")
"""How an agent re-types one text: all normalise to one query key."""


def null_ranks(rng: np.random.Generator, n: int) -> NDArray[np.int64]:
    """The read document's control and treatment rank (0-based, of 5), equally likely."""
    return rng.integers(0, 5, size=(n, 2))


def rr_pairs(
    prefix: str, ranks: NDArray[np.int64], sessions: Sequence[str] | None = None
) -> tuple[Rows, list[FeedbackEvent]]:
    """Interleaved pairs (``ranks[i]``: the read document's control and treatment rank,
    0-based, in lists of 5) and the agent's read of that document after each."""
    rows, events = [], []
    for i, (control_rank, treatment_rank) in enumerate(ranks.tolist()):
        target = DOCS[i % 10]
        others = [doc for doc in DOCS if doc != target]
        control = (*others[:control_rank], target, *others[control_rank:4])
        treatment = (*others[:treatment_rank], target, *others[treatment_rank:4])
        query_id = f"{prefix}-{i}"
        drafted = team_draft(control, treatment, query_id, limit=5)
        rows.append(row(query_id, i, control, treatment, drafted))
        if sessions is not None:
            rows[-1]["session_id"] = sessions[i]
        events.append(FeedbackEvent(query_id, "read_after_search", T0, doc_id=target))
    return rows, events


def row(
    query_id: str,
    at: int,
    control: Sequence[str],
    treatment: Sequence[str],
    shown: Interleaving[str] | None,
) -> dict[str, Any]:
    return {
        "query_id": query_id,
        "control_results": tuple(control),
        "treatment_results": tuple(treatment),
        "control_error": None,
        "treatment_error": None,
        "created_at": T0 + timedelta(seconds=at),
        "interleaved": None if shown is None else shown.shown,
        "interleaved_credited": None if shown is None else len(shown.items),
    }


def repeat_plan(
    texts: int, repeats: int, shuffled: bool, rng: np.random.Generator
) -> list[tuple[int, int]]:
    """The searches as (text, repeat): each text ``repeats`` times in a row, or the searches
    of each 20 consecutive texts in random order."""
    plan = [(text, again) for text in range(texts) for again in range(repeats)]
    if not shuffled:
        return plan
    size = 20 * repeats
    out: list[tuple[int, int]] = []
    for start in range(0, len(plan), size):
        block = plan[start : start + size]
        out.extend(block[i] for i in rng.permutation(len(block)))
    return out


def repeated_rows(
    rows: Rows, events: Sequence[FeedbackEvent], plan: Sequence[tuple[int, int]]
) -> tuple[Rows, list[FeedbackEvent], dict[str, str]]:
    """The searches of ``plan`` as rows (a repeat: its text's lists under its own query id),
    the read after each, and each search's text key (spellings that normalise alike)."""
    read = {event.query_id: event.doc_id for event in events}
    out, reads, keys = [], [], {}
    for at, (text, again) in enumerate(plan):
        base = rows[text]
        query_id = f"{base['query_id']}~{again}"
        out.append({**base, "query_id": query_id, "created_at": T0 + timedelta(seconds=at)})
        reads.append(
            FeedbackEvent(query_id, "read_after_search", T0, doc_id=read[base["query_id"]])
        )
        keys[query_id] = query_key(SPELLINGS[again].format(base["query_id"]))
    return out, reads, keys


def repeated_scores(
    scores: Sequence[PairScore], plan: Sequence[tuple[int, int]]
) -> tuple[list[PairScore], dict[str, str]]:
    """What :func:`score_pairs` gives :func:`repeated_rows` (a text's searches have the same
    lists and read, so the same score), from its texts' scores; and the keys."""
    out, keys = [], {}
    for at, (text, again) in enumerate(plan):
        base = scores[text]
        query_id = f"{base.query_id}~{again}"
        out.append(replace(base, query_id=query_id, created_at=T0 + timedelta(seconds=at)))
        keys[query_id] = query_key(SPELLINGS[again].format(base.query_id))
    return out, keys


def session_pairs(
    prefix: str, rng: np.random.Generator, queries: int, size: int = 5, strength: float = 0.5
) -> tuple[Rows, list[FeedbackEvent]]:
    """Queries in sessions of ``size`` with a session effect (module docstring)."""
    session = np.arange(queries) // size
    effect = rng.uniform(-strength, strength, session[-1] + 1)[session]
    ranks = null_ranks(rng, queries)
    favoured = rng.random(queries) < np.abs(effect)
    ranks[favoured & (effect > 0), 1] = 0
    ranks[favoured & (effect < 0), 0] = 0
    return rr_pairs(prefix, ranks, [f"{prefix}-s{j}" for j in session.tolist()])


def exposure_pairs(
    prefix: str, rng: np.random.Generator, reads: int
) -> tuple[Rows, list[FeedbackEvent], list[Judgment]]:
    """Pairs shown as the control's list only until the agent has read ``reads`` times;
    the relevant documents labelled (what a judge of both lists gives)."""
    rows: Rows = []
    events: list[FeedbackEvent] = []
    labels: list[Judgment] = []
    while len(events) < reads:
        at = len(rows)
        query_id = f"{prefix}-{at}"
        pool = [f"x{j}" for j in range(30)]
        relevant = {pool[j] for j in rng.choice(30, 3, replace=False).tolist()}
        control = [pool[j] for j in rng.permutation(30)[:10].tolist()]
        treatment = [pool[j] for j in rng.permutation(30)[:10].tolist()]
        rows.append(row(query_id, at, control, treatment, None))
        labels += [Judgment(query_id, doc, 1, "manual", T0) for doc in sorted(relevant)]
        first = next((doc for doc in control if doc in relevant), None)
        if first is not None:
            events.append(FeedbackEvent(query_id, "read_after_search", T0, doc_id=first))
    return rows, events, labels


def unequal_pairs(
    prefix: str, rng: np.random.Generator, credited: int, pad: bool
) -> tuple[Rows, list[FeedbackEvent]]:
    """Pairs of equal rankers returning 10 and 4 of 30 shared documents, interleaved as the
    proxy does (padded: ``pad``), one click uniform over the shown list, until
    ``credited`` clicks fell on credited documents."""
    rows: Rows = []
    events: list[FeedbackEvent] = []
    while credited > 0:
        at = len(rows)
        query_id = f"{prefix}-{at}"
        control = [f"y{j}" for j in rng.permutation(30)[:10].tolist()]
        treatment = [f"y{j}" for j in rng.permutation(30)[:4].tolist()]
        cap = min(len(set(control) | set(treatment)), 10)
        shown = (
            padded(control, treatment, query_id)
            if pad
            else team_draft_common_depth(control, treatment, query_id, limit=cap)
        )
        rows.append(row(query_id, at, control, treatment, shown))
        rows[-1]["interleaved_credited"] = credits = len(shown.items) if pad else shown.credited
        position = int(rng.integers(len(shown.items)))
        credited -= position < (credits or 0)
        events.append(
            FeedbackEvent(query_id, "read_after_search", T0, doc_id=shown.items[position])
        )
    return rows, events


def guardrail_sides(
    rng: np.random.Generator,
    n: int,
    errors: tuple[float, float] = (0.01, 0.01),
    empties: tuple[float, float] = (0.05, 0.05),
    slower: float = 1.0,
) -> dict[str, dict[str, Any]]:
    """One stream of ``n`` pairs: per side, latency (lognormal, median 40 ms, sigma 0.5;
    the treatment's times ``slower``), failures and empty answers at the rates given
    (control, treatment); by default both sides alike."""
    sides = {}
    for at, side in enumerate(("control", "treatment")):
        sides[side] = {
            "latency": 40.0 * (slower if at else 1.0) * np.exp(0.5 * rng.standard_normal(n)),
            "error": rng.random(n) < errors[at],
            "empty": rng.random(n) < empties[at],
        }
    return sides


def p95_path(latency: FloatArray, answered: Flags) -> FloatArray:
    """``numpy.percentile(..., 95)`` of the answered latencies of every prefix."""
    ordered: list[float] = []
    out = np.full(latency.size, np.nan)
    for at, (value, ok) in enumerate(zip(latency.tolist(), answered.tolist(), strict=True)):
        if ok:
            bisect.insort(ordered, value)
        if ordered:
            position = 0.95 * (len(ordered) - 1)
            low = int(position)
            high = min(low + 1, len(ordered) - 1)
            out[at] = ordered[low] + (position - low) * (ordered[high] - ordered[low])
    return out


def side_value(name: str, data: Mapping[str, Any], n: NDArray[np.int64]) -> FloatArray:
    """One side's guardrail ``name`` after each pair, as ``guardrails`` computes it."""
    answered = ~data["error"]
    if name == "latency_p95":
        return p95_path(data["latency"], answered)
    if name == "error_rate":
        rate: FloatArray = np.cumsum(data["error"]) / n
        return rate
    empty: FloatArray = np.cumsum(data["empty"] & answered) / np.maximum(np.cumsum(answered), 1)
    return empty


def guardrail_paths(
    sides: Mapping[str, Mapping[str, Any]], alpha: float = 0.05
) -> dict[str, tuple[Flags, Flags]]:
    """Per default guardrail, after each pair: whether the point estimates are beyond the
    limit (the rule before), and whether that holds with the always-valid evidence
    :func:`decide` now also needs: the empirical-Bernstein sequence at ``alpha / g`` of
    the paired differences (rates: ``t_i - c_i``, empty among pairs both answered, lower
    bound above an absolute margin or ``C`` times a relative one; latency:
    ``1[t_i > c_i (1 + m)] - 1[c_i > t_i (1 + m)]``, lower bound above 0) showing it by
    then."""
    control, treatment = sides["control"], sides["treatment"]
    n = np.arange(1, control["error"].size + 1)
    both = ~control["error"] & ~treatment["error"]
    level = alpha / len(DEFAULT_GUARDRAILS)
    found = {}
    for name, spec in DEFAULT_GUARDRAILS.items():
        margin, relative = float(spec["margin"]), spec["kind"] == "relative"
        values, mask = {}, both
        for side, data in sides.items():
            values[side] = side_value(name, data, n)
        limit = values["control"] * (1 + margin) if relative else values["control"] + margin
        beyond = values["treatment"] > limit + 1e-12
        if name == "latency_p95":
            t, c = treatment["latency"], control["latency"]
            pairs = (t > c * (1 + margin)).astype(float) - (c > t * (1 + margin))
            threshold = np.zeros(n.size)
        else:
            key = name.removesuffix("_rate")
            pairs = treatment[key].astype(float) - control[key]
            mask = np.ones(n.size, dtype=bool) if name == "error_rate" else both
            threshold = values["control"] * margin if relative else np.full(n.size, margin)
        path = bounded_cs_path(
            pairs[mask], BoundedCsSettings(alpha=level, method="empirical_bernstein")
        )
        best = np.maximum.accumulate(np.asarray(path.lower))
        seen = np.cumsum(mask)
        evidence = (seen > 0) & (best[np.maximum(seen - 1, 0)] > threshold)
        found[name] = (beyond, beyond & evidence)
    return found


def guardrail_rows(sides: Mapping[str, Mapping[str, Any]]) -> Rows:
    """The pairs of :func:`guardrail_sides` as rows (an empty side returns no result, a
    failed side an error), for :func:`recallbench.online._shadow_score.guardrails`."""
    rows = []
    for at in range(len(sides["control"]["latency"])):
        found: dict[str, Any] = {"query_id": f"g{at}", "created_at": T0 + timedelta(seconds=at)}
        for side, data in sides.items():
            failed = bool(data["error"][at])
            found[f"{side}_results"] = () if failed or data["empty"][at] else ("m1", "m2")
            found[f"{side}_latency_ms"] = float(data["latency"][at])
            found[f"{side}_error"] = "timeout" if failed else None
        rows.append(found)
    return rows
