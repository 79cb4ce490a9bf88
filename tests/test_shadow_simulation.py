"""Simulations behind shadow testing (issue 20, item 6), with the functions of
benchmarks/shadow_simulation.py (which runs them at full size and writes the table):

* 10,000 null streams of 1,000 queries, each checked after every query (the benchmark's
  size; a few seconds, vectorised): the mSPRT's false-positive rate is at most 5% within
  Monte Carlo error (three standard errors), where peeking with a t-test or the
  Beta-Binomial rule is far above it (the latter on 2,500 streams).
* under a real effect the mSPRT stops, on average, well before the fixed-n test that has
  its power;
* on simulated cascade users (click model in the benchmark's docstring), team-draft
  interleaving needs fewer queries than an A/B comparison of the reciprocal rank of the
  first click.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from recallbench.stats._beta_binomial import probability_better

ROOT = Path(__file__).resolve().parent.parent
STREAMS = 10_000
HORIZON = 1_000


@pytest.fixture(scope="module")
def sim() -> ModuleType:
    path = ROOT / "benchmarks" / "shadow_simulation.py"
    spec = importlib.util.spec_from_file_location("shadow_simulation", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_msprt_keeps_its_level_when_checked_after_every_query(sim: ModuleType) -> None:
    rate = sim.msprt_false_positives(STREAMS, HORIZON)
    error = sim.monte_carlo_error(0.05, STREAMS)  # 0.0022
    assert rate <= 0.05 + 3 * error
    assert rate > 0.005  # it is a test that rejects, not one that never can
    peeking = sim.t_test_false_positives(STREAMS, HORIZON)
    assert peeking > 0.3  # the naive t-test checked as often: several times its level
    bayes = sim.beta_binomial_false_positives(STREAMS // 4, HORIZON)
    assert bayes > 0.4


def test_the_beta_probability_approximation_is_close_to_the_exact_value(
    sim: ModuleType,
) -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(50, 2_000))
        hits_t, hits_c = (int(rng.binomial(n, 0.3)) for _ in range(2))
        exact = probability_better(hits_t, n, hits_c, n)
        approximate = sim.beta_probability(np.float64(hits_t), np.float64(hits_c), np.float64(n))
        assert float(approximate) == pytest.approx(exact, abs=0.01)


def test_under_a_real_effect_the_msprt_stops_before_the_fixed_n_test_of_its_power(
    sim: ModuleType,
) -> None:
    stopping = sim.msprt_stopping(2_000, 1_000)
    assert stopping.power > 0.95 and stopping.wrong < 0.01
    assert sim.fixed_n() == 283  # ((1.96 + 0.84) * 0.3 / 0.05)^2
    same_power = sim.fixed_n(power=stopping.power)
    assert stopping.mean < 0.7 * same_power
    assert stopping.median < same_power


def test_interleaving_needs_fewer_queries_than_ab_on_cascade_users(sim: ModuleType) -> None:
    found = sim.sensitivity(4_000)
    assert found.ab_delta > 0 and found.interleaving_mean > 0  # both see the better ranker
    assert found.wins > found.losses
    assert found.ratio > 1.2
