"""Simulations behind shadow testing's decisions (issue 20, item 6): false positives when a
test is checked after every query, the sample size a real effect needs, and interleaving
against A/B testing on simulated users.

1. False-positive rate under continuous monitoring. ``--streams`` null streams of
   ``--horizon`` queries (no true difference), each checked after every query; a stream is a
   false positive if the rule ever declares a difference. Three rules:

   * the mixture SPRT (Johari, Koomen, Pekelis & Walsh 2017; :mod:`recallbench.stats._msprt`,
     plug-in variance, tau 0.1, min_samples 30, alpha 0.05) on paired differences
     ``d ~ N(0, 0.3^2)``: by Ville's inequality ``P(exists n: p_n <= alpha) <= alpha``;
   * the naive paired t-test, two-sided ``p < 0.05`` at any ``n >= 30`` (what peeking does);
   * the Beta-Binomial rule of the design note (hit@k per arm, ``hit ~ Bernoulli(0.3)`` on
     both, ``P(p_T > p_C) > 0.95`` or ``< 0.05`` at any ``n >= 50`` per arm). ``P`` is taken
     from the normal approximation of the two Beta posteriors,
     ``Phi((m_T - m_C) / sqrt(v_T + v_C))`` with the posterior means and variances, which is
     within 0.01 of the exact value (Miller 2014) from 50 trials (checked by the tests).

2. Expected sample size under a real effect ``theta = 0.05`` (sd 0.3): the mSPRT's stopping
   time (mean, median, power within the horizon) against the fixed-n two-sided z-test,
   ``n = ((z_{1 - alpha/2} + z_{power}) sigma / theta)^2``: 283 for 80% power, and the n
   that gives the power the mSPRT reached.

3. Interleaving vs A/B on simulated users. Queries have 30 candidate memories with
   relevance grades 0-3 (P = 0.6, 0.25, 0.1, 0.05); a ranker's score is the grade plus
   Gaussian noise (control sd 1.2, treatment sd 1.0: the treatment ranks a little better),
   10 results shown. Click model: the cascade model (Craswell et al. 2008) with a click
   probability by grade ``c = (0.05, 0.3, 0.6, 0.9)`` and a stop-after-click probability
   ``s = (0, 0.3, 0.6, 0.9)``, the user examining position ``r`` only after the ones above
   (position-dependent examination), at most 10. A/B: each query goes to one system; its
   measure is the reciprocal rank of the first click (0 without click); a two-sample z-test
   (A/B is simulated vectorised, the same model).
   Interleaving: team draft (Radlinski, Kurup & Joachims 2008; the project's ``team_draft``
   seeded by the query id) of both rankings, clicks credited by team, the per-query outcome
   win / tie / loss (+1 / 0 / -1); a one-sample z-test of its mean (the sign test's normal
   form; Chapelle, Joachims, Radlinski & Yue 2012 report interleaving needing one to two
   orders of magnitude fewer queries than A/B metrics). Queries needed for 80% power at
   alpha 0.05, two-sided: A/B ``2 (z_a + z_b)^2 (s_A^2 + s_B^2) / Delta^2`` in total,
   interleaving ``(z_a + z_b)^2 s^2 / mu^2``, with the means and variances estimated from
   ``--users`` simulated queries per design.

    python benchmarks/shadow_simulation.py                 # 10,000 streams, a few seconds
    python benchmarks/shadow_simulation.py --streams 2000 --users 20000 --no-write

Prints a Markdown table and writes benchmarks/results/shadow_simulation.md with the machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special, stats

from recallbench.stats._interleaving import team_draft
from recallbench.stats._msprt import MsprtSettings, first_rejections

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine as describe_machine

FloatArray = NDArray[np.float64]
RESULTS = Path(__file__).parent / "results" / "shadow_simulation.md"
ALPHA = 0.05
SIGMA = 0.3
EFFECT = 0.05
CHUNK = 1_000
"""Streams simulated at once (memory: CHUNK x horizon x 8 bytes per array)."""


# --- 1. false positives under continuous monitoring --------------------------------------


def chunks(total: int) -> Iterator[int]:
    for start in range(0, total, CHUNK):
        yield min(CHUNK, total - start)


def msprt_false_positives(streams: int, horizon: int, seed: int = 1) -> float:
    """Share of null streams (``d ~ N(0, SIGMA^2)``) the mSPRT ever rejects, checked after
    every query."""
    rng = np.random.default_rng(seed)
    settings = MsprtSettings(alpha=ALPHA)
    rejected = 0
    for size in chunks(streams):
        data = rng.normal(0.0, SIGMA, size=(size, horizon))
        rejected += int((first_rejections(data, settings) > 0).sum())
    return rejected / streams


def t_test_false_positives(
    streams: int, horizon: int, seed: int = 1, min_samples: int = 30
) -> float:
    """Share of null streams the two-sided paired t-test (p < ALPHA) ever rejects, checked
    after every query from ``min_samples`` on."""
    rng = np.random.default_rng(seed)
    n = np.arange(1, horizon + 1, dtype=np.float64)
    # |t| > t_{1 - alpha/2, n - 1}: the critical values once, compared with the running |t|
    critical = np.full(horizon, np.inf)
    critical[min_samples - 1 :] = stats.t.ppf(1 - ALPHA / 2, n[min_samples - 1 :] - 1)
    rejected = 0
    for size in chunks(streams):
        data = rng.normal(0.0, SIGMA, size=(size, horizon))
        mean = np.cumsum(data, axis=1) / n
        with np.errstate(divide="ignore", invalid="ignore"):
            variance = (np.cumsum(data * data, axis=1) - n * mean * mean) / (n - 1)
            t = np.abs(mean) / np.sqrt(variance / n)
        rejected += int((t > critical).any(axis=1).sum())
    return rejected / streams


def beta_probability(hits_t: FloatArray, hits_c: FloatArray, n: FloatArray) -> FloatArray:
    """``P(p_T > p_C)`` for posteriors ``Beta(1 + s, 1 + n - s)``, normal approximation."""
    a_t, b_t = 1 + hits_t, 1 + n - hits_t
    a_c, b_c = 1 + hits_c, 1 + n - hits_c
    mean_t, mean_c = a_t / (a_t + b_t), a_c / (a_c + b_c)
    var_t = a_t * b_t / ((a_t + b_t) ** 2 * (a_t + b_t + 1))
    var_c = a_c * b_c / ((a_c + b_c) ** 2 * (a_c + b_c + 1))
    z: FloatArray = (mean_t - mean_c) / np.sqrt(var_t + var_c)
    probability: FloatArray = 0.5 * special.erfc(-z / np.sqrt(2.0))
    return probability


def beta_binomial_false_positives(
    streams: int,
    horizon: int,
    seed: int = 1,
    rate: float = 0.3,
    threshold: float = 0.95,
    min_samples: int = 50,
    treatment_only: bool = False,
) -> float:
    """Share of null streams (both arms hit@k ~ Bernoulli(rate)) on which the Beta-Binomial
    rule ever decides, checked after every query pair from ``min_samples`` on
    (``treatment_only``: on which its first decision accepts the treatment)."""
    rng = np.random.default_rng(seed)
    n = np.arange(1, horizon + 1, dtype=np.float64)
    decided = 0
    for size in chunks(streams):
        hits_t = np.cumsum(rng.random((size, horizon)) < rate, axis=1, dtype=np.float64)
        hits_c = np.cumsum(rng.random((size, horizon)) < rate, axis=1, dtype=np.float64)
        probability = beta_probability(hits_t, hits_c, n)[:, min_samples - 1 :]
        high, low = probability > threshold, probability < 1 - threshold
        if treatment_only:
            first_high = np.where(high.any(axis=1), np.argmax(high, axis=1), horizon)
            first_low = np.where(low.any(axis=1), np.argmax(low, axis=1), horizon)
            decided += int((first_high < first_low).sum())
        else:
            decided += int((high | low).any(axis=1).sum())
    return decided / streams


def beta_treatment_first(streams: int, horizon: int) -> float:
    """The Beta-Binomial rule's false acceptances of the treatment alone (one side)."""
    return beta_binomial_false_positives(streams, horizon, treatment_only=True)


def monte_carlo_error(rate: float, streams: int) -> float:
    """Standard error of a simulated rate."""
    return float(np.sqrt(max(rate * (1 - rate), 1e-12) / streams))


# --- 2. sample size under a real effect --------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoppingTimes:
    mean: float
    """Mean queries to a decision (streams that never decide count the horizon)."""
    median: float
    power: float
    """Share of streams deciding for the treatment within the horizon."""
    wrong: float
    """Share deciding for the control."""


def msprt_stopping(
    streams: int, horizon: int, effect: float = EFFECT, seed: int = 2
) -> StoppingTimes:
    """The mSPRT's stopping time on ``d ~ N(effect, SIGMA^2)``, checked after every query."""
    rng = np.random.default_rng(seed)
    settings = MsprtSettings(alpha=ALPHA)
    times, signs = [], []
    for size in chunks(streams):
        data = rng.normal(effect, SIGMA, size=(size, horizon))
        first = first_rejections(data, settings)
        times.append(np.where(first > 0, first, horizon))
        at = np.clip(first - 1, 0, horizon - 1)
        means = np.cumsum(data, axis=1)[np.arange(size), at] / (at + 1)
        signs.append(np.where(first > 0, np.sign(means), 0))
    stop, sign = np.concatenate(times), np.concatenate(signs)
    return StoppingTimes(
        mean=float(stop.mean()),
        median=float(np.median(stop)),
        power=float((sign > 0).mean()),
        wrong=float((sign < 0).mean()),
    )


def fixed_n(effect: float = EFFECT, sigma: float = SIGMA, power: float = 0.8) -> int:
    """Queries the fixed-n two-sided z-test needs for ``power`` at ``ALPHA``."""
    z = stats.norm.ppf(1 - ALPHA / 2) + stats.norm.ppf(power)
    return int(np.ceil((z * sigma / effect) ** 2))


# --- 3. interleaving vs A/B on simulated users -------------------------------------------

GRADES = np.array([0, 1, 2, 3])
GRADE_P = np.array([0.6, 0.25, 0.1, 0.05])
CLICK = np.array([0.05, 0.3, 0.6, 0.9])
"""Cascade model: probability of a click on an examined result, by relevance grade."""
STOP = np.array([0.0, 0.3, 0.6, 0.9])
"""Probability that the user stops after clicking a result, by grade."""
POOL = 30
SHOWN = 10
NOISE = {"control": 1.2, "treatment": 1.0}


def cascade_clicks(grades: NDArray[np.int64], rng: np.random.Generator) -> list[int]:
    """Positions clicked by one cascade user on a shown list of ``grades``."""
    clicked = []
    for position, grade in enumerate(grades):
        if rng.random() < CLICK[grade]:
            clicked.append(position)
            if rng.random() < STOP[grade]:
                break
    return clicked


def simulated_query(
    rng: np.random.Generator,
) -> tuple[NDArray[np.int64], list[int], list[int]]:
    """A query's pool of grades and the two rankers' top-``SHOWN`` document indices."""
    grades = rng.choice(GRADES, size=POOL, p=GRADE_P)
    rankings = []
    for side in ("control", "treatment"):
        scores = grades + rng.normal(0.0, NOISE[side], size=POOL)
        rankings.append([int(i) for i in np.argsort(-scores)[:SHOWN]])
    return grades, rankings[0], rankings[1]


def ab_outcomes(users: int, seed: int = 3) -> dict[str, FloatArray]:
    """Per query, the reciprocal rank of the first click of a cascade user shown one
    system (queries alternate between the two); vectorised over queries."""
    rng = np.random.default_rng(seed)
    out = {}
    for side in ("control", "treatment"):
        count = users // 2
        grades = rng.choice(GRADES, size=(count, POOL), p=GRADE_P)
        scores = grades + rng.normal(0.0, NOISE[side], size=(count, POOL))
        top = np.argsort(-scores, axis=1)[:, :SHOWN]
        shown = np.take_along_axis(grades, top, axis=1)
        clicked = rng.random(shown.shape) < CLICK[shown]
        stops = clicked & (rng.random(shown.shape) < STOP[shown])
        # position r is examined when the user did not stop at any position above it
        examined = np.ones_like(clicked)
        examined[:, 1:] = np.cumprod(~stops[:, :-1], axis=1).astype(bool)
        hits = clicked & examined
        first = np.argmax(hits, axis=1)
        out[side] = np.where(hits.any(axis=1), 1.0 / (first + 1), 0.0)
    return out


def interleaved_outcomes(users: int, seed: int = 4) -> FloatArray:
    """Per query, +1 / 0 / -1 for a treatment win / tie / loss by team-draft credit."""
    rng = np.random.default_rng(seed)
    outcomes = np.empty(users)
    for query in range(users):
        grades, control, treatment = simulated_query(rng)
        drafted = team_draft(control, treatment, f"q{seed}-{query}", limit=SHOWN)
        clicks = cascade_clicks(grades[list(drafted.items)], rng)
        a, b = drafted.credit([drafted.items[position] for position in clicks])
        outcomes[query] = np.sign(b - a)
    return outcomes


@dataclass(frozen=True, slots=True)
class Sensitivity:
    ab_delta: float
    """Treatment minus control mean reciprocal rank of the first click."""
    ab_queries: int
    interleaving_mean: float
    """Mean of win (+1) / tie (0) / loss (-1)."""
    wins: float
    losses: float
    interleaving_queries: int

    @property
    def ratio(self) -> float:
        return self.ab_queries / self.interleaving_queries


def sensitivity(users: int, power: float = 0.8) -> Sensitivity:
    """Queries each design needs for ``power`` at ``ALPHA`` (module docstring, part 3):
    ``users`` interleaved queries, ten times as many A/B queries (vectorised, cheap; its
    effect is the smaller and needs the precision)."""
    z2 = (stats.norm.ppf(1 - ALPHA / 2) + stats.norm.ppf(power)) ** 2
    ab = ab_outcomes(10 * users)
    delta = float(ab["treatment"].mean() - ab["control"].mean())
    variances = float(ab["treatment"].var(ddof=1) + ab["control"].var(ddof=1))
    ab_queries = int(np.ceil(2 * z2 * variances / delta**2)) if delta > 0 else -1
    outcomes = interleaved_outcomes(users)
    mu = float(outcomes.mean())
    il_queries = int(np.ceil(z2 * float(outcomes.var(ddof=1)) / mu**2)) if mu > 0 else -1
    return Sensitivity(
        ab_delta=delta,
        ab_queries=ab_queries,
        interleaving_mean=mu,
        wins=float((outcomes > 0).mean()),
        losses=float((outcomes < 0).mean()),
        interleaving_queries=il_queries,
    )


# --- the report --------------------------------------------------------------------------


def machine() -> dict[str, object]:
    """What the numbers were computed on."""
    import scipy

    return describe_machine(numpy=np.__version__, scipy=scipy.__version__)


def timed(function: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    value = function(*args)
    return value, time.perf_counter() - started


def report(streams: int, horizon: int, users: int) -> tuple[str, dict[str, Any]]:
    """The Markdown tables and the numbers behind them."""
    rates = {}
    seconds = {}
    for name, function in (
        ("mSPRT (always valid)", msprt_false_positives),
        ("naive t-test, p < 0.05 at any n >= 30", t_test_false_positives),
        ("Beta-Binomial, P > 0.95 or < 0.05 at any n >= 50", beta_binomial_false_positives),
        ("Beta-Binomial, treatment accepted first", beta_treatment_first),
    ):
        rates[name], seconds[name] = timed(function, streams, horizon)
    stopping, _ = timed(msprt_stopping, streams, horizon)
    fixed = fixed_n()
    same_power = fixed_n(power=min(stopping.power, 0.9999))
    found, _ = timed(sensitivity, users)
    lines = [
        f"## False positives, checked after every query ({streams:,} null streams of "
        f"{horizon:,} queries, alpha {ALPHA})",
        "",
        "| rule | false-positive rate | Monte Carlo s.e. | seconds |",
        "|---|---|---|---|",
    ]
    for name, rate in rates.items():
        error = monte_carlo_error(rate, streams)
        lines.append(f"| {name} | {rate:.4f} | {error:.4f} | {seconds[name]:.1f} |")
    lines += [
        "",
        f"## Sample size for a real effect (paired differences N({EFFECT}, {SIGMA}^2), "
        f"{streams:,} streams, horizon {horizon:,})",
        "",
        "| test | queries to a decision | power | wrong direction |",
        "|---|---|---|---|",
        f"| mSPRT, checked after every query | mean {stopping.mean:.0f}, median "
        f"{stopping.median:.0f} | {stopping.power:.3f} (within {horizon:,}) | "
        f"{stopping.wrong:.4f} |",
        f"| fixed-n z-test (80% power) | {fixed} (always) | 0.800 | - |",
        f"| fixed-n z-test at the mSPRT's power | {same_power} (always) | "
        f"{stopping.power:.3f} | - |",
        "",
        f"## Interleaving vs A/B (cascade users; {users:,} interleaved and {10 * users:,} A/B "
        "simulated queries)",
        "",
        "| design | effect per query | queries for 80% power |",
        "|---|---|---|",
        f"| A/B, reciprocal rank of the first click | {found.ab_delta:+.4f} | "
        f"{found.ab_queries:,} |",
        f"| team-draft interleaving, wins {found.wins:.3f} / losses {found.losses:.3f} | "
        f"{found.interleaving_mean:+.4f} | {found.interleaving_queries:,} |",
        "",
        f"Interleaving needs {found.ratio:.1f}x fewer queries than A/B in this click model."
        " The gain depends on the users and on how much the rankings differ: the two"
        " orders of magnitude reported for web search (Chapelle et al. 2012) come from A/B"
        " measures with far more between-user variance than this model's.",
    ]
    numbers = {
        "false_positive_rates": rates,
        "msprt_stopping": asdict(stopping),
        "fixed_n": fixed,
        "fixed_n_same_power": same_power,
        "interleaving_vs_ab": {
            "ab_delta": found.ab_delta,
            "ab_queries": found.ab_queries,
            "interleaving_mean": found.interleaving_mean,
            "interleaving_queries": found.interleaving_queries,
            "ratio": found.ratio,
        },
    }
    return "\n".join(lines), numbers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=10_000)
    parser.add_argument("--horizon", type=int, default=1_000, help="queries per stream")
    parser.add_argument("--users", type=int, default=100_000, help="queries per design")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    host = machine()
    text, _ = report(args.streams, args.horizon, args.users)
    print(text)
    if not args.no_write:
        command = "python benchmarks/shadow_simulation.py " + " ".join(argv or sys.argv[1:])
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            f"# shadow testing: simulations\n\n`{command.strip()}`\n\n"
            f"Machine: `{json.dumps(host)}`\n\n{text}\n"
        )
        print(f"\nwritten: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
