"""Does the judging pool's order (`recallbench serve --pool-order`) get the comparison of
two runs right with fewer labels? A simulation of what pooling meets in real use.

Each replicate is a dataset of 50 queries, 100 memories each, with hidden grades (most 0;
relevant memories rare, grades 1-3 skewed low) of which the dataset's authors judged one
relevant memory per query. Two systems rank the memories by ``signal * grade + noise``
and return their first 10; the truth is the mean difference of their DCG@10 (linear gains)
under the hidden grades. People then label the pool (:class:`recallbench.serve._pool.Pool`,
depth 10, minus the authors' pairs) in one of three orders -- ``random`` (the baseline),
``depth`` and ``disagreement`` -- up to a budget (a share of the pool), unlabelled results
counting as not relevant as trec_eval counts them. A cell is the share of replicates where
the labelled difference has the sign of the true one (higher is better) and, under it,
the mean absolute error of the difference.

Scenarios (what real use brings, and the cheapest way to game the order):

- ``close``: two systems of nearly equal quality (signals 1.0 and 0.9).
- ``skewed``: relevant memories very rare (2%), so most pooled results are not relevant.
- ``unequal lengths``: the second system returns 4 results, the first 10.
- ``overlap``: both systems share most of their ranking (the same noise, small changes).
- ``gamed: filler``: the second system puts 5 memories no one else returns (never
  relevant) in its first ranks, to draw labels to itself under ``disagreement``.

    python benchmarks/pool_order_validity.py                  # 200 replicates, ~1 min
    python benchmarks/pool_order_validity.py --replicates 40 --no-write

Prints a Markdown table and writes benchmarks/results/pool_order_validity.md with the machine.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from recallbench.core import Dataset, Document, Query
from recallbench.serve._pool import Pool, PooledRun

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine

QUERIES = 50
MEMORIES = 100
DEPTH = 10
BUDGETS = (0.1, 0.25, 0.5)
ORDERS = ("random", "depth", "disagreement")
DISCOUNT = 1.0 / np.log2(np.arange(2, DEPTH + 2))


@dataclass(frozen=True)
class Scenario:
    name: str
    relevant: float = 0.08
    """The chance a memory is relevant (grade 1-3)."""
    signals: tuple[float, float] = (1.0, 0.9)
    lengths: tuple[int, int] = (DEPTH, DEPTH)
    shared_noise: float = 0.0
    """0: independent noise per system; 1: the same noise (rankings overlap)."""
    filler: int = 0
    """Never-relevant memories only the second system returns, at its first ranks."""


SCENARIOS = (
    Scenario("close"),
    Scenario("skewed", relevant=0.02),
    Scenario("unequal lengths", lengths=(DEPTH, 4)),
    Scenario("overlap", shared_noise=0.85),
    Scenario("gamed: filler", filler=5),
)


def _grades(rng: np.random.Generator, chance: float) -> np.ndarray:
    relevant = rng.random((QUERIES, MEMORIES)) < chance
    grade = rng.choice([1, 2, 3], p=[0.5, 0.3, 0.2], size=(QUERIES, MEMORIES))
    return np.where(relevant, grade, 0)


def _rankings(rng: np.random.Generator, grades: np.ndarray, scenario: Scenario) -> list[np.ndarray]:
    common = rng.normal(size=grades.shape)
    rankings = []
    for signal, length in zip(scenario.signals, scenario.lengths, strict=True):
        own = rng.normal(size=grades.shape)
        noise = scenario.shared_noise * common + (1 - scenario.shared_noise) * own
        scores = signal * grades + 1.5 * noise
        rankings.append(np.argsort(-scores, axis=1)[:, :length])
    return rankings


def _dcg(ranking: np.ndarray, gains: np.ndarray) -> np.ndarray:
    """DCG@10 of each query's ranking (-1: a filler memory, gain 0)."""
    values = np.where(ranking >= 0, np.take_along_axis(gains, np.maximum(ranking, 0), 1), 0)
    return (values * DISCOUNT[: ranking.shape[1]]).sum(axis=1)


def replicate(
    rng: np.random.Generator, scenario: Scenario
) -> dict[tuple[str, float], tuple[bool, float]]:
    grades = _grades(rng, scenario.relevant)
    first, second = _rankings(rng, grades, scenario)
    if scenario.filler:
        fill = -np.ones((QUERIES, scenario.filler), dtype=int)
        second = np.concatenate([fill, second], axis=1)[:, :DEPTH]
    truth = float(np.mean(_dcg(first, grades) - _dcg(second, grades)))

    def doc(q: int, m: int, slot: int = 0) -> str:
        return f"q{q}-m{m}" if m >= 0 else f"q{q}-filler{slot}"

    documents = [
        Document(id=doc(q, m), text="memory") for q in range(QUERIES) for m in range(MEMORIES)
    ]
    documents += [
        Document(id=doc(q, -1, s), text="filler")
        for q in range(QUERIES)
        for s in range(scenario.filler)
    ]
    known: dict[str, dict[str, int]] = {}
    for q in range(QUERIES):
        relevant = np.flatnonzero(grades[q])
        if relevant.size:
            m = int(rng.choice(relevant))
            known[f"q{q}"] = {doc(q, m): int(grades[q, m])}
    dataset = Dataset(
        name="pool-validity",
        documents=tuple(documents),
        queries=tuple(Query(id=f"q{q}", text="query", category="c") for q in range(QUERIES)),
        qrels=known,
    )

    def ids(ranking: np.ndarray) -> dict[str, tuple[str, ...]]:
        return {
            f"q{q}": tuple(doc(q, int(m), s) for s, m in enumerate(ranking[q]))
            for q in range(QUERIES)
        }

    runs = [PooledRun(1, "first", ids(first)), PooledRun(2, "second", ids(second))]
    truth_of = {doc(q, m): int(grades[q, m]) for q in range(QUERIES) for m in range(MEMORIES)}
    out = {}
    for order in ORDERS:
        pool = Pool(dataset, runs, DEPTH, "depth" if order == "random" else order)
        entries = list(pool.entries)
        if order == "random":
            entries = [entries[i] for i in rng.permutation(len(entries))]
        for budget in BUDGETS:
            labelled = {e.key for e in entries[: round(budget * len(entries))]}
            gains = np.zeros_like(grades)
            for q in range(QUERIES):
                for d, g in known.get(f"q{q}", {}).items():
                    gains[q, int(d.split("-m")[1])] = g
            for query, d in labelled:
                if "-m" in d:
                    q = int(query[1:])
                    gains[q, int(d.split("-m")[1])] = truth_of[d]
            estimate = float(np.mean(_dcg(first, gains) - _dcg(second, gains)))
            out[(order, budget)] = (np.sign(estimate) == np.sign(truth), abs(estimate - truth))
    return out


def run(replicates: int, seed: int, progress: Callable[[str], None]) -> str:
    lines = [
        "| scenario | budget | "
        + " | ".join(f"{order}: right sign, mean abs. error" for order in ORDERS)
        + " |",
        "|---|---|" + "---|" * len(ORDERS),
    ]
    for scenario in SCENARIOS:
        rng = np.random.default_rng(seed)
        cells: dict[tuple[str, float], list[tuple[bool, float]]] = {}
        for _ in range(replicates):
            for key, value in replicate(rng, scenario).items():
                cells.setdefault(key, []).append(value)
        for budget in BUDGETS:
            row = []
            for order in ORDERS:
                values = cells[(order, budget)]
                right = np.mean([v[0] for v in values])
                error = np.mean([v[1] for v in values])
                row.append(f"{right:.2f}, {error:.3f}")
            lines.append(f"| {scenario.name} | {budget:.0%} | " + " | ".join(row) + " |")
        progress(f"{scenario.name}: done")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-write", action="store_true")
    options = parser.parse_args()
    table = run(options.replicates, options.seed, lambda line: print(line, file=sys.stderr))
    text = (
        "# Which pooled pairs to label first: the comparison of two runs after a budget\n\n"
        "`python benchmarks/pool_order_validity.py`\n\n"
        f"Machine: `{json.dumps(machine())}`\n\n"
        f"{options.replicates} replicates a scenario, seed {options.seed}. A cell: the share "
        "of replicates where the labelled DCG@10 difference has the true sign, and the mean "
        "absolute error of the difference, after labelling the budget's share of the pool "
        "in that order (unlabelled results count as not relevant).\n\n"
        f"{table}\n"
    )
    print(text)
    if not options.no_write:
        out = Path(__file__).resolve().parent / "results" / "pool_order_validity.md"
        out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
