"""How much a random clicker prefers one of two equally good rankers under the proxy's
team-draft interleaving, by the two lists' lengths: before (the shorter list padded with the
longer list's rest, all of it credited) and after (credited only to the depth both lists
reach, :func:`recallbench.stats._interleaving.team_draft_common_depth`).

Each simulated impression is one query with 30 documents. Both rankers return a random
ordering of them (equally good: any placement of the relevant ones equally likely), cut to
their lengths; with ``shared`` documents the two lists overlap as random draws from the same
30 do, with ``disjoint`` the treatment draws from 30 others. The clickers ignore teams:

* ``uniform``: one click, uniform over the shown list;
* ``position``: each shown rank ``r`` (1-based) clicked independently with probability
  ``0.6 / r`` (a reader who reads from the top).

A cell is the mean credit of the control (``+1`` when its team got more clicks, ``-1`` when
fewer, ``0`` otherwise) over the impressions, ``+`` when the control is preferred, with its
Monte Carlo standard error. Unbiased means within about 2 standard errors of 0.

Measured (20,000 impressions per cell, seed 0, standard error 0.002-0.007): before, 10
against 4 results gave the longer list +0.21 (uniform clicker, disjoint lists) to +0.24
(shared documents), +0.08 to +0.11 with the position clicker, +0.80 at 10 against 1, and
+0.17 at 20 against 10 with shared documents; lengths whose draft fills the shown list
(10 vs 8, 5 vs 4, equal) were unbiased already and are unchanged. After, all 28 cells are
within 1.7 standard errors of 0.

    python benchmarks/interleaving_bias.py                 # 20,000 per cell, ~50 s
    python benchmarks/interleaving_bias.py --impressions 2000 --no-write

Prints a Markdown table and writes benchmarks/results/interleaving_bias.md with the machine.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine, write_results

from recallbench.stats._interleaving import (
    CONTROL,
    TREATMENT,
    Interleaving,
    team_draft,
    team_draft_common_depth,
)

Rule = Callable[[Sequence[str], Sequence[str], str], Interleaving[str]]
Clicker = Callable[[Interleaving[str], np.random.Generator], list[str]]

LENGTHS = ((10, 4), (4, 10), (10, 8), (5, 4), (10, 1), (20, 10), (10, 10))
DOCUMENTS = 30


def _cap(control: Sequence[str], treatment: Sequence[str]) -> int:
    """The proxy's shown length: ``max(|A|, |B|)`` distinct items at most."""
    return min(len(set(control) | set(treatment)), max(len(control), len(treatment)))


def padded(control: Sequence[str], treatment: Sequence[str], query: str) -> Interleaving[str]:
    """The rule before: team draft of the full lists, then the rest of the lists appended
    to their own team and credited (the proxy's ``interleave_ids`` until this change)."""
    limit = _cap(control, treatment)
    drafted = team_draft(control, treatment, query, limit=limit)
    items, teams = list(drafted.items), list(drafted.teams)
    for ranking, team in ((control, CONTROL), (treatment, TREATMENT)):
        for item in ranking:
            if len(items) < limit and item not in items:
                items.append(item)
                teams.append(team)
    return Interleaving(tuple(items), tuple(teams))


def common_depth(control: Sequence[str], treatment: Sequence[str], query: str) -> Interleaving[str]:
    """The rule now, as the proxy calls it."""
    return team_draft_common_depth(control, treatment, query, limit=_cap(control, treatment))


def _uniform(shown: Interleaving[str], rng: np.random.Generator) -> list[str]:
    return [shown.items[rng.integers(len(shown.items))]] if shown.items else []


def _position(shown: Interleaving[str], rng: np.random.Generator) -> list[str]:
    draws = rng.random(len(shown.items))
    return [doc for rank, doc in enumerate(shown.items, 1) if draws[rank - 1] < 0.6 / rank]


RULES: dict[str, Rule] = {"before": padded, "after": common_depth}
CLICKERS: dict[str, Clicker] = {"uniform": _uniform, "position": _position}


def preference(
    rule: Rule,
    clicker: Clicker,
    lengths: tuple[int, int],
    shared: bool,
    impressions: int,
    seed: int,
) -> tuple[float, float]:
    """Mean credit of the control and its standard error (module docstring)."""
    rng = np.random.default_rng(seed)
    pools = [f"a{i}" for i in range(DOCUMENTS)], [f"b{i}" for i in range(DOCUMENTS)]
    values = np.empty(impressions)
    for at in range(impressions):
        control = [pools[0][i] for i in rng.permutation(DOCUMENTS)[: lengths[0]]]
        pool = pools[0] if shared else pools[1]
        treatment = [pool[i] for i in rng.permutation(DOCUMENTS)[: lengths[1]]]
        shown = rule(control, treatment, f"q{at}")
        a, b = shown.credit(clicker(shown, rng))
        values[at] = np.sign(a - b)
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(impressions))


def table(impressions: int, seed: int) -> str:
    header = ["control vs treatment", "documents", "clicker", "before", "after"]
    lines = ["| " + " | ".join(header) + " |", "|---|---|---|---:|---:|"]
    for cell, (lengths, shared, clicker) in enumerate(
        (lengths, shared, clicker)
        for lengths in LENGTHS
        for shared in (True, False)
        for clicker in CLICKERS
    ):
        found = [
            preference(rule, CLICKERS[clicker], lengths, shared, impressions, seed + cell)
            for rule in RULES.values()
        ]
        cells = [f"{mean:+.3f} ± {se:.3f}" for mean, se in found]
        where = "shared" if shared else "disjoint"
        lines.append(
            f"| {lengths[0]} vs {lengths[1]} | {where} | {clicker} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--impressions", type=int, default=20_000, help="impressions per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    host = machine(numpy=np.__version__)
    body = (
        f"Mean credit of the control (+ : the control preferred) by a team-blind clicker, "
        f"equally good rankers, {args.impressions:,} impressions per cell, seed {args.seed}; "
        "± one Monte Carlo standard error. before: the shorter list padded with the longer "
        "list's rest, all credited; after: credited to the depth both lists reach.\n\n"
        + table(args.impressions, args.seed)
    )
    print(body)
    if not args.no_write:
        write_results(
            __file__,
            "Length bias of team-draft interleaving, before and after the common depth",
            argv,
            host,
            body,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
