"""The validity suite of shadow decisions (issue 29, Deliver 6): how often each decision
procedure graduates or rolls back when it should not, on null streams shaped the ways real
agent traffic is, checked after every observation; then power and stopping time.

A null stream has no true difference between the systems; a stream is a false positive when
the procedure ever decides on it within the horizon. For the two-sided tests (the default
``betting``, ``empirical_bernstein``, ``msprt``) that is either boundary (a graduation or a
rollback by the test); for Wald's ``sprt``, whose lower boundary accepts ``mu = 0`` (a
rollback that is right under the null), a graduation. Alpha 0.05 throughout; a rate above
``0.05 + 2 s.e.`` (the Monte Carlo standard error at 0.05) is a failure (marked ✗). The
rule's ``min_queries`` is its default, 100 (20 and 30 for two mSPRT columns); the bounded
tests hold an early crossing until then, which does not change whether they decide.

Differences (vectorised: :func:`recallbench.stats._bounded_cs.bounded_decisions`,
``_msprt.first_rejections``, ``_sprt.sprt_decisions``, identical row by row to the running
tests that :func:`recallbench.online._shadow_decide.decide` uses): i.i.d. normal (sd 0.3,
clipped to [-1, 1]); skewed mean-zero (-0.05 w.p. 0.95, +0.95 w.p. 0.05); heavy-tailed
(0.2 t with 2.5 df, clipped); 95% zeros (else ±U(0, 1)); a variance jump half way
(0.1 U(-1, 1), then ±1); a traffic mix that shifts half way (90% then 10% of the queries
from population A, ties or ±1 hits, the rest from B, the skewed one; both mean zero).

Pairs (rows -> :func:`score_pairs` -> :func:`observations` with text keys, then the same
vectorised tests; ``--pair-streams`` streams each): searches as in
tests/test_shadow_decide.py ``stream()`` (5 results, the read document at a uniform rank
1-5 on each side, shown interleaved, read every time; ``rr``):

* each of 400 query texts searched R = 2, 3, 5 times, in a row or shuffled among 20
  texts, in spellings that normalise to one key (a text's searches have its first
  search's lists and read, so a text's rows are scored once and its repeats are those
  scores under their own query ids; the fast test checks this equals scoring every row);
  ``query units`` (the rule) against ``pairs as units`` (before);
* 1,000 queries in sessions of 5 sharing a session effect ``u ~ U(-s, s)``, s = 0.25 and
  0.5: with probability ``|u|`` the side ``u`` favours puts the read document first (mean
  zero over sessions); ``unit=query`` against ``unit=session`` (200 sessions);
* exposure: equal rankers (10 of 30 documents each, 3 relevant), no interleaving, the agent
  reads the first relevant document the control showed, 400 reads: the rule with ``rr``
  (the default design; :func:`decide` on every stream, which never decides) against the
  pair-level ``rr`` before the change, and ``ndcg@10`` from labels of both lists (the
  valid design without interleaving);
* unequal lengths: equal rankers returning 10 and 4 of 30 shared documents, interleaved as
  the proxy does (credited to the common depth) or padded (before), one click uniform over
  the shown list, 400 credited clicks; the ``interleaving`` credit as the measure.

Guardrails (default margins: latency p95 +20%, error rate +1 point, empty results +2
points) on equal sides (latency lognormal, median 40 ms, sigma 0.5; errors 1%; empty
results 5%), 1,000 pairs, checked after every pair from 100 on: on the point estimates
alone (the rule before), and as :func:`decide` judges them now, beyond the limit and with
always-valid evidence of the breach (empirical Bernstein at alpha / 3; the fast test checks
these paths against ``decide``).

Power: paired hit differences (+1 w.p. 0.15 + delta/2, -1 w.p. 0.15 - delta/2) for
delta = 0.02, 0.05, 0.1; the stopping n (at least ``min_queries``; the horizon when
undecided) against the fixed-n two-sided z-test's n for 80% power, and that test's power
at the sequential test's mean n.

    python benchmarks/shadow_validity.py                       # 2,000 streams each
    python benchmarks/shadow_validity.py --streams 300 --pair-streams 100 --no-write

Prints the tables and writes benchmarks/results/shadow_validity.md with the machine.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine, write_results
from _shadow_streams import (
    exposure_pairs,
    guardrail_paths,
    guardrail_sides,
    null_ranks,
    repeat_plan,
    repeated_scores,
    rr_pairs,
    session_pairs,
    unequal_pairs,
)

from recallbench.online._shadow_decide import decide
from recallbench.online._shadow_rule import DEFAULT_GUARDRAILS, DEFAULT_MIN_QUERIES, GraduationRule
from recallbench.online._shadow_score import paired_differences, score_pairs
from recallbench.online._shadow_units import observations
from recallbench.stats._bounded_cs import BoundedCsSettings, bounded_decisions
from recallbench.stats._msprt import MsprtSettings, first_rejections
from recallbench.stats._sprt import ACCEPT_CONTROL, ACCEPT_TREATMENT, SprtSettings, sprt_decisions

FloatArray = NDArray[np.float64]
Flags = NDArray[np.bool_]
Maker = Callable[[np.random.Generator, int, int], FloatArray]

ALPHA = 0.05
MIN_QUERIES = DEFAULT_MIN_QUERIES
SPRT_EFFECT = 0.05
BLOCK = 250
"""Streams per block of the mSPRT paths and the power runs (memory)."""


# --- the procedures, on unit values (streams x observations) ---------------------------------


def _bounded(method: Any) -> Callable[[FloatArray], Flags]:
    def decided(values: FloatArray) -> Flags:
        codes, _ = bounded_decisions(values, BoundedCsSettings(alpha=ALPHA, method=method))
        flags: Flags = codes > 0
        return flags

    return decided


def _msprt(minimum: int) -> Callable[[FloatArray], Flags]:
    def decided(values: FloatArray) -> Flags:
        settings = MsprtSettings(alpha=ALPHA, min_samples=minimum)
        parts = [first_rejections(values[s : s + BLOCK], settings) > 0 for s in blocks(values)]
        return np.concatenate(parts)

    return decided


def _sprt(values: FloatArray) -> Flags:
    settings = SprtSettings(alpha=ALPHA, effect=SPRT_EFFECT, min_samples=MIN_QUERIES)
    codes, _ = sprt_decisions(values, settings)
    flags: Flags = codes == ACCEPT_TREATMENT
    return flags


PROCEDURES: dict[str, Callable[[FloatArray], Flags]] = {
    "betting (default)": _bounded("betting"),
    "empirical Bernstein": _bounded("empirical_bernstein"),
    "mSPRT, min 100": _msprt(MIN_QUERIES),
    "mSPRT, min 30": _msprt(30),
    "mSPRT, min 20": _msprt(20),
    f"SPRT δ {SPRT_EFFECT} (graduations)": _sprt,
}
DEFAULT = "betting (default)"
DEFAULT_UNIT = GraduationRule().unit
"""The rule's default unit: a scenario row naming another unit is an option's row."""


def blocks(values: FloatArray) -> range:
    return range(0, values.shape[0], BLOCK)


def false_positive_rates(values: FloatArray) -> dict[str, float]:
    """Per procedure, the share of streams (rows) it ever decides on (module docstring)."""
    if values.shape[1] == 0:
        return dict.fromkeys(PROCEDURES, 0.0)
    return {name: float(decided(values).mean()) for name, decided in PROCEDURES.items()}


def standard_error(rate: float, streams: int) -> float:
    return math.sqrt(rate * (1.0 - rate) / streams)


def limit(streams: int) -> float:
    """The largest rate that passes: alpha plus two Monte Carlo standard errors at alpha."""
    return ALPHA + 2.0 * standard_error(ALPHA, streams)


@dataclass(frozen=True, slots=True)
class Scenario:
    """A null scenario: its name, what one observation is, and the unit values."""

    name: str
    level: str
    values: FloatArray


# --- differences ------------------------------------------------------------------------------


def normal(rng: np.random.Generator, m: int, n: int) -> FloatArray:
    return np.clip(rng.normal(0.0, 0.3, (m, n)), -1.0, 1.0)


def skewed(rng: np.random.Generator, m: int, n: int) -> FloatArray:
    return np.where(rng.random((m, n)) < 0.05, 0.95, -0.05)


def heavy(rng: np.random.Generator, m: int, n: int) -> FloatArray:
    return np.clip(0.2 * rng.standard_t(2.5, (m, n)), -1.0, 1.0)


def zeros(rng: np.random.Generator, m: int, n: int) -> FloatArray:
    signed = rng.choice([-1.0, 1.0], (m, n)) * rng.random((m, n))
    return np.where(rng.random((m, n)) < 0.95, 0.0, signed)


def jump(rng: np.random.Generator, m: int, n: int) -> FloatArray:
    quiet = 0.1 * (2.0 * rng.random((m, n)) - 1.0)
    return np.where(np.arange(n) < n // 2, quiet, rng.choice([-1.0, 1.0], (m, n)))


def shifting_mix(rng: np.random.Generator, m: int, n: int) -> FloatArray:
    ties = np.where(rng.random((m, n)) < 0.9, 0.0, rng.choice([-1.0, 1.0], (m, n)))
    share_a = np.where(np.arange(n) < n // 2, 0.9, 0.1)
    return np.where(rng.random((m, n)) < share_a, ties, skewed(rng, m, n))


DIFFERENCES: dict[str, Maker] = {
    "i.i.d. normal, sd 0.3, clipped": normal,
    "skewed mean zero (-0.05 / +0.95)": skewed,
    "heavy-tailed t(2.5), clipped": heavy,
    "95% zeros": zeros,
    "variance jump half way": jump,
    "traffic mix shifts half way": shifting_mix,
}


def difference_scenarios(streams: int, horizon: int, seed: int) -> Iterator[Scenario]:
    for index, (name, make) in enumerate(DIFFERENCES.items()):
        values = make(np.random.default_rng([seed, index]), streams, horizon)
        yield Scenario(name, f"{horizon:,} differences", values)


# --- pairs ------------------------------------------------------------------------------------


REPEATS = tuple((repeats, shuffled) for repeats in (2, 3, 5) for shuffled in (False, True))


def repeat_scenarios(streams: int, texts: int, seed: int) -> Iterator[Scenario]:
    """Per stream, ``texts`` texts scored once, then searched as each plan of
    :data:`REPEATS` says: query units against pairs as units."""
    rng = np.random.default_rng([seed, 100])
    units: dict[tuple[int, bool], list[tuple[float, ...]]] = {plan: [] for plan in REPEATS}
    pairs: dict[tuple[int, bool], list[tuple[float, ...]]] = {plan: [] for plan in REPEATS}
    for s in progress(streams, "repeats"):
        base = score_pairs(*rr_pairs(f"r{s}", null_ranks(rng, texts)))
        for repeats, shuffled in REPEATS:
            scores, keys = repeated_scores(base, repeat_plan(texts, repeats, shuffled, rng))
            units[repeats, shuffled].append(observations(scores, "rr", keys, unit="query").values)
            pairs[repeats, shuffled].append(observations(scores, "rr", {}, unit="query").values)
    for repeats, shuffled in REPEATS:
        how = "shuffled among 20 texts" if shuffled else "in a row"
        name = f"each text searched {repeats}x, {how}"
        found = units[repeats, shuffled]
        yield Scenario(f"{name}: query units", f"{texts:,} texts", stack(found, texts))
        found = pairs[repeats, shuffled]
        total = texts * repeats
        yield Scenario(f"{name}: pairs as units (before)", f"{total:,} pairs", stack(found, total))


def session_scenarios(
    streams: int, queries: int, seed: int, strengths: Sequence[float] = (0.25, 0.5)
) -> Iterator[Scenario]:
    """Sessions of 5 queries with a session effect ``u ~ U(-strength, strength)``."""
    for index, strength in enumerate(strengths):
        rng = np.random.default_rng([seed, 200 + index])
        by_query, by_session = [], []
        for s in progress(streams, f"sessions, effect {strength}"):
            scores = score_pairs(*session_pairs(f"s{s}", rng, queries, strength=strength))
            by_query.append(observations(scores, "rr", {}, unit="query").values)
            by_session.append(observations(scores, "rr", {}, unit="session").values)
        name = f"sessions of 5 queries, effect U(-{strength}, {strength})"
        yield Scenario(f"{name}: unit=query", f"{queries:,} queries", stack(by_query, queries))
        sessions = queries // 5
        yield Scenario(
            f"{name}: unit=session", f"{sessions:,} sessions", stack(by_session, sessions)
        )


def exposure_scenarios(streams: int, horizon: int, seed: int) -> Iterator[Scenario]:
    rng = np.random.default_rng([seed, 300])
    rule, before, labelled = [], [], []
    for s in progress(streams, "exposure"):
        rows, events, labels = exposure_pairs(f"e{s}", rng, horizon)
        scores = score_pairs(rows, events, labels)
        rule.append(observations(scores, "rr", {}, unit="query").values)
        if decide(GraduationRule(measure="rr"), rows, scores).decision != "continue":
            raise AssertionError("the rule decided on rr the agent read from one list")
        before.append(tuple(value for _, value in paired_differences(scores, "rr")))
        labelled.append(observations(scores, "ndcg@10", {}, unit="query").values)
    if any(rule):
        raise AssertionError("rr was measured on pairs the agent saw one side of")
    name = "equal rankers, no interleaving"
    yield Scenario(f"{name}: rr, the rule (never decides)", "0 units", np.zeros((streams, 0)))
    yield Scenario(f"{name}: pair-level rr (before)", f"{horizon:,} reads", stack(before, horizon))
    yield Scenario(f"{name}: ndcg@10, labels", f"{horizon:,} pairs", stack(labelled, horizon))


def unequal_scenarios(streams: int, horizon: int, seed: int) -> Iterator[Scenario]:
    rng = np.random.default_rng([seed, 400])
    for pad, label in ((False, "common depth (now)"), (True, "padded (before)")):
        found = []
        for s in progress(streams, f"unequal lengths, {label}"):
            scores = score_pairs(*unequal_pairs(f"u{s}", rng, horizon, pad))
            found.append(observations(scores, "interleaving", {}, unit="query").values)
        name = f"10 vs 4 results, interleaved, random clicker, credit: {label}"
        yield Scenario(name, f"{horizon:,} credited", stack(found, horizon))


def progress(streams: int, what: str) -> Iterator[int]:
    """``range(streams)``, saying on stderr when each quarter is done."""
    started = time.perf_counter()
    for s in range(streams):
        yield s
        if (s + 1) % max(1, streams // 4) == 0:
            seconds = time.perf_counter() - started
            print(f"    {what}: {s + 1:,} streams, {seconds:.0f} s", file=sys.stderr, flush=True)


def stack(values: Sequence[Sequence[float]], horizon: int) -> FloatArray:
    """The first ``horizon`` values of every stream as one array (each has that many)."""
    short = min(len(found) for found in values)
    if short < horizon:
        raise ValueError(f"a stream has {short} observations, fewer than {horizon}")
    return np.array([list(found[:horizon]) for found in values], dtype=np.float64)


# --- guardrails -------------------------------------------------------------------------------


def guardrail_rates(streams: int, horizon: int, seed: int) -> dict[str, tuple[float, ...]]:
    """Per guardrail and for any, over ``streams`` equal streams: rolled back when checked
    after every pair from ``MIN_QUERIES`` on, by the rule before and now, and by the rule
    now judged once at the horizon."""
    rng = np.random.default_rng([seed, 500])
    found: dict[str, list[tuple[bool, bool, bool]]] = {}
    for _ in progress(streams, "guardrails"):
        paths = guardrail_paths(guardrail_sides(rng, horizon), ALPHA)
        paths["any"] = (
            np.logical_or.reduce([before for before, _ in paths.values()]),
            np.logical_or.reduce([now for _, now in paths.values()]),
        )
        for name, (before, now) in paths.items():
            ever = (bool(before[MIN_QUERIES - 1 :].any()), bool(now[MIN_QUERIES - 1 :].any()))
            found.setdefault(name, []).append((*ever, bool(now[-1])))
    return {name: tuple(np.mean(flags, axis=0).tolist()) for name, flags in found.items()}


# --- power ------------------------------------------------------------------------------------

EFFECTS = (0.02, 0.05, 0.1)
Z = float(stats.norm.ppf(1 - ALPHA / 2))


def hit_differences(rng: np.random.Generator, m: int, n: int, effect: float) -> FloatArray:
    draw = rng.random((m, n))
    return np.where(draw < 0.15 + effect / 2, 1.0, np.where(draw < 0.3, -1.0, 0.0))


def fixed_n(effect: float, power: float = 0.8) -> int:
    sd = math.sqrt(0.3 - effect**2)
    return math.ceil(((Z + float(stats.norm.ppf(power))) * sd / effect) ** 2)


def fixed_power(effect: float, n: float) -> float:
    shift = effect * math.sqrt(n) / math.sqrt(0.3 - effect**2)
    return float(stats.norm.cdf(shift - Z) + stats.norm.cdf(-shift - Z))


def _stops(method: str, values: FloatArray) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(1 treatment / 2 control / 0 undecided, the n of the decision) per stream."""
    if method == "mSPRT":
        first = first_rejections(values, MsprtSettings(alpha=ALPHA, min_samples=MIN_QUERIES))
        at = np.maximum(first - 1, 0)
        sign = np.cumsum(values, axis=1)[np.arange(len(values)), at]
        codes = np.where(first > 0, np.where(sign > 0, ACCEPT_TREATMENT, ACCEPT_CONTROL), 0)
        return codes.astype(np.int64), first
    settings = BoundedCsSettings(alpha=ALPHA, method=method)  # type: ignore[arg-type]
    codes8, used = bounded_decisions(values, settings)
    return codes8.astype(np.int64), np.where(codes8 > 0, used, 0)


def power_rows(streams: int, seed: int) -> list[str]:
    lines = []
    for index, effect in enumerate(EFFECTS):
        n80 = fixed_n(effect)
        horizon = 4 * n80
        rng = np.random.default_rng([seed, 600 + index])
        found: dict[str, list[NDArray[np.int64]]] = {}
        for start in range(0, streams, BLOCK):
            values = hit_differences(rng, min(BLOCK, streams - start), horizon, effect)
            for method in ("betting", "empirical_bernstein", "mSPRT"):
                codes, first = _stops(method, values)
                stop = np.where(codes > 0, np.maximum(first, MIN_QUERIES), horizon)
                found.setdefault(method, []).append(np.stack((codes, stop)))
        for method, parts in found.items():
            codes, stop = np.concatenate(parts, axis=1)
            mean = float(stop.mean())
            lines.append(
                f"| {effect} | {method} | {float((codes == ACCEPT_TREATMENT).mean()):.3f} | "
                f"{float((codes == ACCEPT_CONTROL).mean()):.4f} | {mean:,.0f} | "
                f"{float(np.median(stop)):,.0f} | {n80:,} | {mean / n80:.2f} | "
                f"{fixed_power(effect, mean):.3f} |"
            )
        print(f"  power, effect {effect}: done", file=sys.stderr, flush=True)
    return lines


# --- the report -------------------------------------------------------------------------------


def cell(rate: float, streams: int) -> str:
    text = f"{rate:.4f} ± {standard_error(rate, streams):.4f}"
    return f"**{text} ✗**" if rate > limit(streams) else text


def report(
    streams: int, horizon: int, pair_streams: int, seed: int
) -> tuple[str, dict[str, list[str]]]:
    """The Markdown tables, and per scenario the procedures that failed."""
    started = time.perf_counter()
    failures: dict[str, list[str]] = {}
    groups: list[Callable[[], Iterator[Scenario]]] = [
        lambda: difference_scenarios(streams, horizon, seed),
        lambda: repeat_scenarios(pair_streams, 400, seed),
        lambda: session_scenarios(pair_streams, 1000, seed),
        lambda: exposure_scenarios(pair_streams, 400, seed),
        lambda: unequal_scenarios(pair_streams, 400, seed),
    ]
    header = ["scenario", "observations", "streams", *PROCEDURES]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for group in groups:
        for scenario in group():
            rates = false_positive_rates(scenario.values)
            m = scenario.values.shape[0]
            failed = [name for name, rate in rates.items() if rate > limit(m)]
            if failed:
                failures[scenario.name] = failed
            cells = [cell(rate, m) for rate in rates.values()]
            lines.append(
                f"| {scenario.name} | {scenario.level} | {m:,} | " + " | ".join(cells) + " |"
            )
            print(
                f"  {scenario.name}: {time.perf_counter() - started:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    guard = guardrail_rates(streams, 1000, seed)
    print(f"  guardrails: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    guard_lines = [
        "| guardrail (default margin) | point estimates, after every pair from 100 (before) "
        "| with always-valid evidence, after every pair from 100 (now) | now, judged once "
        "at 1,000 |",
        "|---|---|---|---|",
    ]
    margins = {
        name: f"{name} ({spec['kind']} +{spec['margin']:g})"
        for name, spec in DEFAULT_GUARDRAILS.items()
    }
    for name, (before, now, once) in guard.items():
        shown = " | ".join(cell(rate, streams) for rate in (before, now, once))
        guard_lines.append(f"| {margins.get(name, name)} | {shown} |")
        for label, rate in (("(before)", before), ("", now)):
            if rate > limit(streams):
                key = f"guardrails on equal sides, after every pair {label}".strip()
                failures.setdefault(key, []).append(name)
    power = power_rows(streams, seed)
    text = "\n".join(
        [
            "## False-positive rate under the null, checked after every observation "
            f"(alpha {ALPHA})",
            "",
            f"± one Monte Carlo standard error; ✗: above 0.05 + 2 s.e. at 0.05 "
            f"({limit(streams):.4f} at {streams:,} streams, {limit(pair_streams):.4f} at "
            f"{pair_streams:,}). Two-sided tests: any decision; SPRT: graduations. "
            f"min_queries {MIN_QUERIES} unless the column says otherwise.",
            "",
            *lines,
            "",
            f"## Guardrails on equal sides ({streams:,} streams of 1,000 pairs)",
            "",
            *guard_lines,
            "",
            f"## Power and stopping n, paired hit differences ({streams:,} streams, horizon "
            "4x the fixed-n n)",
            "",
            "| effect | test | power | wrong direction | mean n | median n | fixed-n n (80%) "
            "| mean n / fixed n | fixed-n power at the mean n |",
            "|---|---|---|---|---|---|---|---|---|",
            *power,
        ]
    )
    return text, failures


def summary(failures: dict[str, list[str]]) -> str:
    """The failures: the default procedure's, the rule's options', and the designs the
    rule replaced ("before")."""
    now = {name: failed for name, failed in failures.items() if "(before)" not in name}
    other = "unit=query" if DEFAULT_UNIT == "session" else "unit=session"
    default = [name for name, failed in now.items() if DEFAULT in failed and other not in name]
    before = [name for name in failures if "(before)" in name]
    lines = ["Failures (above 0.05 + 2 s.e.):", ""]
    lines.append(
        f"- the default procedure ({DEFAULT}, unit={DEFAULT_UNIT}): "
        + ("; ".join(default) or "none")
    )
    lines += [f"- {name}: {', '.join(failed)}" for name, failed in now.items()]
    if before:
        lines.append(f"- before the change, failing: {'; '.join(before)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=2000, help="difference-level streams")
    parser.add_argument("--horizon", type=int, default=2000, help="differences per stream")
    parser.add_argument("--pair-streams", type=int, default=2000, help="pair-level streams")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    host = machine(numpy=np.__version__)
    started = time.perf_counter()
    text, failures = report(args.streams, args.horizon, args.pair_streams, args.seed)
    seconds = time.perf_counter() - started
    body = f"{text}\n\n{summary(failures)}\n\nRun time: {seconds:.0f} s."
    print(body)
    if not args.no_write:
        write_results(__file__, "Shadow decisions: the validity suite", argv, host, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
