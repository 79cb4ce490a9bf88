"""Time recallbench's engine against pytrec_eval (trec_eval's C code) on one generated run.

Both start from the same in-memory qrels and run (query -> {doc: score}); recallbench's time
includes ordering each ranking by trec_eval's rule. Prints the median of several repeats and
the ratio. Usage: python benchmarks/bench_evaluate.py [--queries 2000] [--depth 1000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

import pytrec_eval

from recallbench.measures import Rules, evaluate, parse_measures

OURS = ["map", "rprec", "mrr", "P@10", "recall@100", "ndcg@10", "ndcg", "hit@10", "map@100"]
THEIRS = {
    "map",
    "Rprec",
    "recip_rank",
    "P.10",
    "recall.100",
    "ndcg_cut.10",
    "ndcg",
    "success.10",
    "map_cut.100",
}


def generate(
    queries: int, depth: int, seed: int = 7
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(queries):
        docs = [f"d{rng.randrange(depth * 5)}" for _ in range(depth)]
        qrels[f"q{q}"] = {d: rng.choice((0, 0, 1, 2, 3)) for d in rng.sample(docs, 50)}
        run[f"q{q}"] = {d: rng.randrange(10_000) / 100 for d in docs}
    return qrels, run


def median_seconds(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    qrels, run = generate(args.queries, args.depth)
    measures = parse_measures(OURS)
    rules = Rules(missing="skip", no_relevant="zero")

    def ours() -> object:
        rankings = {
            q: [d for _, d in sorted(((s, d) for d, s in scored.items()), reverse=True)]
            for q, scored in run.items()
        }
        return evaluate(qrels, rankings, measures, rules)

    def theirs() -> object:
        return pytrec_eval.RelevanceEvaluator(qrels, THEIRS).evaluate(run)

    lines = args.queries * args.depth
    mine = median_seconds(ours, args.repeats)
    reference = median_seconds(theirs, args.repeats)
    print(
        f"{args.queries} queries x {args.depth} documents = {lines:,} run lines, "
        f"{len(OURS)} measures, median of {args.repeats}"
    )
    print(f"recallbench  {mine:8.3f} s")
    print(f"pytrec_eval  {reference:8.3f} s")
    print(f"ratio (pytrec_eval / recallbench): {reference / mine:.2f}x")


if __name__ == "__main__":
    main()
