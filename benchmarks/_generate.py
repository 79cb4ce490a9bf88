"""Deterministic TREC qrels and run files for the speed benchmarks."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def generate(
    folder: Path,
    queries: int,
    depth: int,
    judged: int = 200,
    seed: int = 20261126,
    ties: bool = False,
) -> tuple[Path, Path]:
    """Write ``qrels`` (graded 0-3) and ``run`` (``queries`` x ``depth`` lines, sorted by
    score descending per query) unless present. Scores have 4 decimals (nearly distinct;
    a few ties occur), or with ``ties`` 100 distinct values (0.0 to 9.9), so that most
    documents share their score with others and trec_eval's tie-break by document id
    decides their order."""
    folder.mkdir(parents=True, exist_ok=True)
    kind = ".ties" if ties else ""
    qrels_path = folder / f"qrels.{queries}x{judged}"
    run_path = folder / f"run.{queries}x{depth}.j{judged}{kind}"
    if qrels_path.exists() and run_path.exists():
        return qrels_path, run_path
    rng = np.random.default_rng(seed)
    pool = 5_000_000
    stride = 104_729  # prime: depth consecutive multiples are distinct modulo the pool
    qrels_tmp, run_tmp = folder / "qrels.tmp", folder / "run.tmp"
    with qrels_tmp.open("w") as qrels_file, run_tmp.open("w") as run_file:
        for q in range(queries):
            base = int(rng.integers(pool))
            docs = (base + np.arange(depth + judged) * stride) % pool
            raw = rng.random(depth) * 10
            scores = np.sort(np.floor(raw * 10) / 10 if ties else np.round(raw, 4))[::-1]
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
    if not qrels_path.exists():  # the qrels do not depend on ``ties``: keep the first
        qrels_tmp.rename(qrels_path)
    run_tmp.rename(run_path)
    qrels_tmp.unlink(missing_ok=True)
    return qrels_path, run_path
