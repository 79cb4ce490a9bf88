"""Properties of the gate's one-sided sign-flip test and of its noise guard: the exact p is
the brute-force one, the test's size under the null is at most alpha (enumerated and
simulated), and a run better than the baseline on every query never fails."""

from __future__ import annotations

import asyncio
import itertools
from datetime import timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallbench.core import Dataset, Document, Query
from recallbench.gates import Baseline, Gates
from recallbench.gates._regression import regression_checks
from recallbench.measures import parse_measures
from recallbench.report import Report, build_report
from recallbench.runner import run_dataset
from recallbench.stats._one_sided import minimum_differing, smallest_p, worse_pvalue
from recallbench.systems import create_system

ALPHA = 0.05


def _brute_force(d: list[float]) -> float:
    """#{sign vectors over all n queries, zeros included: sum s_i |d_i| <= sum d_i} / 2^n."""
    observed = sum(d)
    hits = sum(
        1
        for signs in itertools.product((-1, 1), repeat=len(d))
        if sum(s * abs(x) for s, x in zip(signs, d, strict=True)) <= observed + 1e-12
    )
    return hits / 2 ** len(d)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([-0.5, -0.25, -0.1, 0.0, 0.1, 0.25, 1.0]), min_size=1, max_size=9))
def test_exact_p_is_the_brute_force_enumeration(d: list[float]) -> None:
    """Ties and zeros included (values from a small set, as per-query IR measures are)."""
    test = worse_pvalue(np.array(d), resamples=1_000, seed=0)
    assert test.exact
    assert test.p == pytest.approx(_brute_force(d), abs=1e-12)
    assert test.differing == sum(1 for x in d if x != 0)


def test_minimum_differing_and_smallest_p() -> None:
    assert [minimum_differing(a) for a in (0.5, 0.1, 0.05, 0.01, 0.001)] == [1, 4, 5, 7, 10]
    for alpha in (0.5, 0.1, 0.05, 0.01, 0.001):
        need = minimum_differing(alpha)
        assert smallest_p(need) <= alpha < smallest_p(need - 1)
        # reached by data: every differing query worse
        assert worse_pvalue(-np.ones(need), 1_000, 0).p <= alpha
        assert worse_pvalue(-np.ones(need - 1), 1_000, 0).p > alpha


@pytest.mark.parametrize("n", [5, 8, 12])
def test_exact_size_under_the_null_is_at_most_alpha(n: int) -> None:
    """Under H0 every sign assignment of given |d| is equally likely, so the test's size is
    the share of assignments with p <= alpha: computed exactly, no simulation noise."""
    rng = np.random.default_rng(n)
    for magnitudes in (rng.random(n), rng.choice([0.1, 0.5, 1.0], size=n), np.ones(n)):
        rejected = 0
        for bits in range(2**n):
            signs = 1.0 - 2.0 * ((bits >> np.arange(n)) & 1)
            rejected += worse_pvalue(signs * magnitudes, 1_000, 0).p <= ALPHA
        assert rejected / 2**n <= ALPHA


def test_simulated_rejection_rate_under_the_null_is_at_most_alpha() -> None:
    """The random-assignment path (n = 24 > 16): 400 seeded null samples of symmetric
    differences (IR-like: many ties and zeros). Measured rate: printed, about 0.04."""
    rng = np.random.default_rng(7)
    trials, rejected = 400, 0
    for trial in range(trials):
        magnitudes = rng.choice([0.0, 0.1, 0.25, 0.5, 1.0], size=24)
        signs = rng.choice([-1.0, 1.0], size=24)
        test = worse_pvalue(signs * magnitudes, resamples=2_000, seed=trial)
        rejected += test.p <= ALPHA
    rate = rejected / trials
    print(f"simulated size under H0: {rate:.3f} (alpha {ALPHA})")
    # at most alpha, up to two binomial standard errors of the simulation itself
    assert rate <= ALPHA + 2 * np.sqrt(ALPHA * (1 - ALPHA) / trials)


@pytest.fixture(scope="module")
def base() -> Report:
    n = 12
    dataset = Dataset(
        name="props",
        documents=tuple(Document(id=f"d{i}", text=f"memory topic{i}") for i in range(n)),
        queries=tuple(Query(id=f"q{i}", text=f"topic{i}") for i in range(n)),
        qrels={f"q{i}": {f"d{i}": 1} for i in range(n)},
    )
    run = asyncio.run(run_dataset(dataset, create_system("builtin-lexical"), k=10))
    return build_report(dataset, run, parse_measures(["mrr@10", "tokens@10"]))


def _report(base: Report, measure: str, values: list[float | None]) -> Report:
    queries = [
        q.model_copy(update={"values": {**q.values, measure: v}})
        for q, v in zip(base.queries, values, strict=True)
    ]
    kept = [v for v in values if v is not None]
    return base.model_copy(
        update={
            "queries": queries,
            "means": {**base.means, measure: sum(kept) / len(kept)},
            "measures": [m for m in base.measures if m.name == measure],
            "created_at": base.created_at + timedelta(minutes=1),
        }
    )


def _baseline(base: Report, measure: str, values: list[float]) -> Baseline:
    return Baseline(
        description="test",
        dataset_sha256=base.dataset.sha256,
        means={measure: sum(values) / len(values)},
        runs=1,
        values={q.id: {measure: v} for q, v in zip(base.queries, values, strict=True)},
        values_from="the baseline",
    )


unit = st.floats(0, 1, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(
    before=st.lists(unit, min_size=12, max_size=12),
    gains=st.lists(unit, min_size=12, max_size=12),
    dropped=st.sets(st.integers(0, 11), max_size=8),
    lower=st.booleans(),
)
def test_better_on_every_paired_query_never_fails(
    base: Report, before: list[float], gains: list[float], dropped: set[int], lower: bool
) -> None:
    """Better (or equal) on every query both score, some queries scored by the baseline
    only (so that the means can still show a drop): no regression check fails."""
    measure = "tokens@10" if lower else "mrr@10"
    sign = -1.0 if lower else 1.0
    now: list[float | None] = [
        None if i in dropped else b + sign * g * b
        for i, (b, g) in enumerate(zip(before, gains, strict=True))
    ]
    if all(v is None for v in now):
        return
    checks = list(
        regression_checks(_report(base, measure, now), _baseline(base, measure, before), Gates())
    )
    assert checks and all(check.status != "fail" for check in checks), checks


def test_gate_rejection_rate_under_the_null_is_at_most_alpha(base: Report) -> None:
    """Current and baseline exchangeable on every query (a fair coin swaps them): the
    whole regression check (drop beyond 15% AND significant) fails at most alpha of the
    time, in 300 seeded trials. Measured rate: printed."""
    rng = np.random.default_rng(11)
    trials, failed = 300, 0
    for _ in range(trials):
        a = rng.choice([0.0, 0.2, 0.25, 0.333, 0.5, 1.0], size=12)
        b = rng.choice([0.0, 0.2, 0.25, 0.333, 0.5, 1.0], size=12)
        swap = rng.random(12) < 0.5
        current, before = np.where(swap, b, a), np.where(swap, a, b)
        if before.sum() == 0:
            continue
        checks = regression_checks(
            _report(base, "mrr@10", [float(v) for v in current]),
            _baseline(base, "mrr@10", [float(v) for v in before]),
            Gates(),
        )
        failed += any(check.status == "fail" for check in checks)
    rate = failed / trials
    print(f"gate failure rate under H0: {rate:.3f} (alpha {ALPHA})")
    assert rate <= ALPHA + 2 * np.sqrt(ALPHA * (1 - ALPHA) / trials)
