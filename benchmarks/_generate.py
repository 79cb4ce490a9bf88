"""Deterministic TREC qrels and run files for the speed benchmarks."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def generate(
    folder: Path, queries: int, depth: int, judged: int = 200, seed: int = 20261126
) -> tuple[Path, Path]:
    """Write ``qrels`` (graded 0-3) and ``run`` (``queries`` x ``depth`` lines, sorted by
    score descending per query, 4-decimal scores so that ties occur) unless present."""
    folder.mkdir(parents=True, exist_ok=True)
    qrels_path = folder / f"qrels.{queries}x{judged}"
    run_path = folder / f"run.{queries}x{depth}"
    if qrels_path.exists() and run_path.exists():
        return qrels_path, run_path
    rng = np.random.default_rng(seed)
    pool = 5_000_000
    stride = 104_729  # prime: depth consecutive multiples are distinct modulo the pool
    with (folder / "qrels.tmp").open("w") as qrels_file, (folder / "run.tmp").open("w") as run_file:
        for q in range(queries):
            base = int(rng.integers(pool))
            docs = (base + np.arange(depth + judged) * stride) % pool
            scores = np.sort(np.round(rng.random(depth) * 10, 4))[::-1]
            # judge half inside the ranking (where relevant ones are likelier), half outside
            inside = rng.choice(depth, judged // 2, replace=False)
            grades_in = np.minimum(3, rng.poisson(1.5 - inside / depth, judged // 2))
            outside = depth + np.arange(judged - judged // 2)
            grades_out = rng.integers(0, 4, judged - judged // 2)
            qid = f"q{q}"
            qrels_file.write(
                "".join(
                    f"{qid} 0 d{docs[i]} {g}\n"
                    for i, g in zip(
                        np.concatenate([inside, outside]),
                        np.concatenate([grades_in, grades_out]),
                        strict=True,
                    )
                )
            )
            run_file.write(
                "".join(
                    f"{qid} Q0 d{docs[r]} {r + 1} {scores[r]:.4f} bench\n" for r in range(depth)
                )
            )
    (folder / "qrels.tmp").rename(qrels_path)
    (folder / "run.tmp").rename(run_path)
    return qrels_path, run_path
